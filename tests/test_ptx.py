"""PTX code generation: math -> libdevice calls -> PTX (llvmlite NVPTX) -> cubin.

No GPU is needed. These tests run wherever the `cuda` extra is installed; they
skip only when no CUDA toolchain exists at all, and
`test_toolchain_found_when_cuda_extra_installed` fails (never skips) if the
extra's packages are installed but the tools cannot be found.
"""

from __future__ import annotations

import re

import pytest
from fusec.backends.cuda_toolchain import (
    CudaToolchain,
    CudaToolchainError,
    cuda_extra_installed,
    find_toolchain,
)
from fusec.backends.ptx import assemble_ptx, emit_ptx
from fusec.passes.convert_math_to_llvm import ConvertMathToLLVMPass
from toolchains import cuda_toolchain_or_skip
from xdsl.backend.llvm.convert import convert_module
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.llvm import LLVM
from xdsl.dialects.math import Math
from xdsl.parser import Parser

ARCHS = ["sm_80", "sm_90"]

KERNEL = """
llvm.func @kernel(%in: !llvm.ptr, %out: !llvm.ptr, %n: i64) {
  %tid = llvm.call_intrinsic "llvm.nvvm.read.ptx.sreg.tid.x"() : () -> i32
  %i = llvm.sext %tid : i32 to i64
  %ok = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %ok, ^body, ^exit
^body:
  %p = llvm.getelementptr %in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %p : !llvm.ptr -> f32
  %e = math.exp %x : f32
  %t = math.tanh %e : f32
  %r = math.erf %t : f32
  %s = math.sqrt %r : f32
  %q = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %s, %q : f32, !llvm.ptr
  llvm.br ^exit
^exit:
  llvm.return
}
"""


def kernel_llvm_ir() -> str:
    ctx = Context()
    for dialect in (Builtin, LLVM, Math):
        ctx.load_dialect(dialect)
    module = Parser(ctx, KERNEL).parse_module()
    ConvertMathToLLVMPass(target="nvptx").apply(ctx, module)
    module.verify()
    return str(convert_module(module, fallback_target_triple="nvptx64-nvidia-cuda"))


def test_toolchain_found_when_cuda_extra_installed() -> None:
    if not cuda_extra_installed():
        pytest.skip("the cuda extra (nvidia-cuda-nvcc, nvidia-nvjitlink) is not installed")
    tc = find_toolchain()
    assert tc.libdevice is not None and tc.libdevice.name == "libdevice.10.bc"
    assert tc.nvjitlink is not None
    assert tc.ptxas is not None


def test_nvptx_lowering_calls_libdevice() -> None:
    ir = kernel_llvm_ir()
    for name in ("__nv_expf", "__nv_tanhf", "__nv_erff"):
        assert re.search(rf"declare\s+float @\"?{name}\"?\(float", ir), ir
    assert re.search(r"declare\s+float @\"?llvm.sqrt", ir), ir  # LLVM mangles the name on parse


@pytest.mark.parametrize("arch", ARCHS)
def test_emit_ptx_links_libdevice(arch: str) -> None:
    cuda_toolchain_or_skip()
    ptx = emit_ptx(kernel_llvm_ir(), arch=arch, kernel_names=["kernel"])
    assert f".target {arch}" in ptx
    assert re.search(r"\.visible \.entry kernel\(", ptx), ptx
    # libdevice is linked and inlined: no call to an external math function
    # and no unresolved __nvvm_reflect is left
    assert "__nv_" not in ptx and "__nvvm_reflect" not in ptx
    assert "call" not in ptx.split(".entry kernel", 1)[1]
    assert "ex2.approx" in ptx  # __nv_expf's core


@pytest.mark.parametrize("arch", ARCHS)
def test_assemble_ptx_gives_cubin(arch: str) -> None:
    tc = cuda_toolchain_or_skip()
    ptx = emit_ptx(kernel_llvm_ir(), arch=arch, kernel_names=["kernel"])
    cubin = assemble_ptx(ptx, arch)
    assert cubin[:4] == b"\x7fELF"
    # each assembler that exists must accept it too
    for assembler, path in (("nvjitlink", tc.nvjitlink), ("ptxas", tc.ptxas)):
        if path is not None:
            assert assemble_ptx(ptx, arch, assembler=assembler)[:4] == b"\x7fELF"


def test_emit_ptx_without_libdevice_and_unknown_kernel() -> None:
    ir = """
define void @copy(ptr %a, ptr %b) {
  %x = load float, ptr %a
  store float %x, ptr %b
  ret void
}
"""
    ptx = emit_ptx(ir, arch="sm_80", kernel_names=["copy"])
    assert ".visible .entry copy(" in ptx
    with pytest.raises(ValueError, match="kernel 'nope'"):
        emit_ptx(ir, kernel_names=["nope"])


def test_invalid_ptx_is_reported() -> None:
    cuda_toolchain_or_skip()
    with pytest.raises(RuntimeError, match="(?i)fail"):
        assemble_ptx(".version 7.0\n.target sm_80\n.address_size 64\nthis is not ptx\n", "sm_80")


def test_missing_tools_name_the_pip_package() -> None:
    empty = CudaToolchain(libdevice=None, nvjitlink=None, ptxas=None)
    with pytest.raises(CudaToolchainError, match="nvidia-nvvm"):
        empty.require_libdevice()
    with pytest.raises(CudaToolchainError, match="nvidia-nvjitlink.*nvidia-cuda-nvcc"):
        empty.require_assembler()
