"""Reduction kernels for `nvptx`: one warp per row, partial accumulators combined
with butterfly shuffles. Compiled to PTX for sm_80 and sm_90 and assembled to a
cubin (no GPU is used); the PTX is checked against the launch ABI and for the
warp reduction (shuffles, no shared memory, no barrier)."""

from __future__ import annotations

import re

import pytest
from fusec.backends.ptx import assemble_ptx
from fusec.codegen.kernel import build_gpu_kernels
from fusec.dialects.aten import Aten
from fusec.dialects.fusion import Fusion, GroupOp
from fusec.passes.decompose_reductions import DecomposeReductionsPass
from fusec.passes.fuse import FusePass
from toolchains import cuda_toolchain_or_skip, sibling_test_module
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func
from xdsl.parser import Parser

ptx_checks = sibling_test_module("test_codegen_ptx")
ARCHS = sibling_test_module("test_ptx").ARCHS

SOURCE = """
func.func @softmax(%x: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %r = aten.softmax %x dim = -1 : tensor<4x8xf16> -> tensor<4x8xf16>
  func.return %r : tensor<4x8xf16>
}
func.func @layer_norm(%x: tensor<2x4x8xbf16>, %w: tensor<8xbf16>, %b: tensor<8xbf16>) -> tensor<2x4x8xbf16> {
  %r = aten.layer_norm %x, %w, %b normalized_shape = [8] eps = 1.0e-05 : f64 : tensor<2x4x8xbf16>, tensor<8xbf16>, tensor<8xbf16> -> tensor<2x4x8xbf16>
  func.return %r : tensor<2x4x8xbf16>
}
func.func @std(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %s = aten.std %x dims = [0] keepdim = true : tensor<4x8xf64> -> tensor<1x8xf64>
  %r = aten.div %x, %s : tensor<4x8xf64>, tensor<1x8xf64> -> tensor<4x8xf64>
  func.return %r : tensor<4x8xf64>
}
func.func @int_sum(%x: tensor<4x8xi32>) -> tensor<4x1xi64> {
  %two = arith.constant 2 : i64
  %m = aten.mul %x, %two : tensor<4x8xi32>, i64 -> tensor<4x8xi32>
  %s = aten.sum %m dims = [1] keepdim = true : tensor<4x8xi32> -> tensor<4x1xi64>
  func.return %s : tensor<4x1xi64>
}
func.func @amax_all(%x: tensor<3x5x7xf32>) -> tensor<1x1x1xf32> {
  %e = aten.exp %x : tensor<3x5x7xf32> -> tensor<3x5x7xf32>
  %m = aten.amax %e keepdim = true : tensor<3x5x7xf32> -> tensor<1x1x1xf32>
  func.return %m : tensor<1x1x1xf32>
}
"""


def _groups() -> list[GroupOp]:
    ctx = Context()
    for d in (Builtin, Func, Arith, Aten, Fusion):
        ctx.load_dialect(d)
    module = Parser(ctx, SOURCE).parse_module()
    DecomposeReductionsPass().apply(ctx, module)
    FusePass().apply(ctx, module)
    groups = [g for g in module.walk() if isinstance(g, GroupOp)]
    assert len(groups) == 5
    return groups


@pytest.mark.parametrize("arch", ARCHS)
def test_reduction_kernels_assemble(arch: str) -> None:
    cuda_toolchain_or_skip()
    groups = _groups()
    arts = build_gpu_kernels(groups, arch)
    ptx = arts[0].code.decode()
    ptx_checks.check_module(ptx, arts, arch)
    found = ptx_checks.entries(ptx)
    for art in arts:
        _, body = found[art.name]
        assert art.signature.reduce_dims, art.name
        # 5 butterfly steps per accumulator; 64-bit values shuffle as two halves
        steps = re.findall(r"shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, (\d+), 31, -1;", body)
        assert {"16", "8", "4", "2", "1"} <= set(steps), art.name
        assert ".shared" not in body and "bar.sync" not in body, art.name
    cubin = assemble_ptx(ptx, arch)
    assert cubin[:4] == b"\x7fELF"


def test_warp_reduction_check_can_fail() -> None:
    """Without the shuffles (a per-thread reduction) the check above fails."""
    cuda_toolchain_or_skip()
    arts = build_gpu_kernels(_groups()[:1], ARCHS[0])
    body = ptx_checks.entries(arts[0].code.decode())[arts[0].name][1]
    broken = re.sub(r"shfl\.sync\.bfly\.b32[^;]*;", "", body)
    assert not re.findall(r"shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, (\d+), 31, -1;", broken)
