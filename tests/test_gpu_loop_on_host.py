"""The GPU kernel's loop versions (`fusec.passes.lowering.gpu_loop`), run on the host.

A pointwise kernel built for nvptx is the same loop-level IR as any other
except for the four special registers it reads (thread and block ids, block
and grid sizes). Here they become arguments, the kernel is JIT-compiled for
the host and called once per emulated thread of a small grid: each version
of the grid-stride loop (4 or 2 lanes per trip, one element in 32-bit math,
one element in 64-bit math) runs on CPU tensors of aligned and misaligned
layouts and is compared with eager PyTorch; a kernel keeping only its lanes
version shows which layouts the lanes test accepts. The parameters are the
CUDA executor's own (`fusec.runtime.cuda.kernel_params`)."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import llvmlite.binding as llvm
import pytest
import torch
from fusec.backends.llvm_jit import host_target_machine, optimize_for_host
from fusec.codegen.kernel import lower_to_llvm_dialect, translate_to_llvm_ir
from fusec.dialects.aten import Aten
from fusec.passes.lower_group_to_loops import build_loop_kernel
from fusec.runtime.cuda import kernel_params
from fusec.runtime.kernel_signature import KernelSignature
from fusec.runtime.operands import broadcast_strides
from vector_layouts import ALIGNED, vector_layouts
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects import llvm as llvmd
from xdsl.dialects.builtin import Builtin, IntegerAttr, IntegerType, ModuleOp, i1
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.rewriter import InsertPoint, Rewriter

_ENGINES: list[llvm.ExecutionEngine] = []
SREGS = ("tid.x", "ntid.x", "ctaid.x", "nctaid.x")
THREADS, BLOCKS = 3, 2
"""The emulated grid: 6 threads, so every loop strides."""

_TYPES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.int8: "i8",
          torch.uint8: "ui8", torch.bool: "i1"}  # fmt: skip


def _tensor_type(shape: tuple[int, ...], dtype: torch.dtype) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{_TYPES[dtype]}>"


def _source(x: tuple, y: tuple, out: tuple, ops: str) -> str:
    """A kernel over %x, %y returning %out; each of x, y, out is (shape, dtype)
    and `ops` its body, which may use the types as {tx}, {ty}, {to}."""
    tx, ty, to = (_tensor_type(*t) for t in (x, y, out))
    body = ops.format(tx=tx, ty=ty, to=to)
    return f"""
    func.func @k(%x: {tx}, %y: {ty}) -> {to} attributes {{fusion.kernel}} {{
      {body}
      func.return %out : {to}
    }}"""


MUL_ADD = """%0 = aten.mul %x, %y : {tx}, {ty} -> {to}
      %out = aten.add %0, %x : {to}, {tx} -> {to}"""


def _keep(fn: func.FuncOp, version: str) -> None:
    """Makes the kernel run only `version` of its loop ("all" keeps the
    choice): scf.if %fits_i32 { [test] scf.if %lanes_fit {lanes} else {i32} }
    else {i64}. "i32" and "i64" take their branch whatever the layout;
    "lanes" empties the other branches, so it leaves the output untouched
    where the lanes test fails."""
    if version == "all":
        return
    (fits,) = [op for op in fn.body.block.ops if isinstance(op, scf.IfOp)]
    (lanes,) = [op for op in fits.true_region.block.ops if isinstance(op, scf.IfOp)]
    if version == "lanes":
        for region in (fits.false_region, lanes.false_region):
            for op in reversed(list(region.block.ops)):
                if not isinstance(op, scf.YieldOp):
                    Rewriter.erase_op(op, safe_erase=False)
        return
    take = {"i32": [(fits, True), (lanes, False)], "i64": [(fits, False)]}[version]
    for if_op, value in take:
        const = arith.ConstantOp(IntegerAttr(int(value), i1))
        Rewriter.insert_op(const, InsertPoint.before(if_op))
        if_op.operands[0] = const.result


@functools.cache
def kernel(src: str, version: str) -> tuple[Callable[..., None], KernelSignature]:
    ctx = Context()
    for d in (Builtin, func.Func, Aten):
        ctx.load_dialect(d)
    (op,) = Parser(ctx, src).parse_module().ops
    assert isinstance(op, func.FuncOp)
    fn, sig = build_loop_kernel("k", op.body.block, op.function_type.outputs.data, "nvptx")
    _keep(fn, version)
    # The special registers become the last four arguments.
    entry: Block = fn.body.block
    ids = [entry.insert_arg(IntegerType(32), len(entry.args)) for _ in SREGS]
    for call in [o for o in fn.walk() if isinstance(o, llvmd.CallIntrinsicOp)]:
        reg = call.intrin.data.removeprefix("llvm.nvvm.read.ptx.sreg.")
        call.results[0].replace_all_uses_with(ids[SREGS.index(reg)])
        Rewriter.erase_op(call)
    inputs = [*fn.function_type.inputs.data, *[IntegerType(32)] * len(SREGS)]
    fn.function_type = func.FunctionType.from_lists(inputs, [])
    module = ModuleOp([fn])
    lower_to_llvm_dialect(module, "cpu")
    ref = llvm.parse_assembly(optimize_for_host(translate_to_llvm_ir(module, "cpu")))
    engine = llvm.create_mcjit_compiler(ref, host_target_machine())
    engine.finalize_object()
    _ENGINES.append(engine)
    _, types = kernel_params(sig, [0] * 3, [[0] * sig.loop_rank] * 3, [1] * sig.loop_rank, [])
    proto = ctypes.CFUNCTYPE(None, *types, *[ctypes.c_int32] * len(SREGS))
    return proto(engine.get_function_address("k")), sig


def run(
    x: torch.Tensor,
    y: torch.Tensor,
    version: str,
    out_offset: int = 0,
    ops: str = MUL_ADD,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """The kernel `ops` over x, y on the emulated grid; the output starts
    `out_offset` elements into a buffer of sentinels (NaN, -128 or True)."""
    space = torch.broadcast_shapes(x.shape, y.shape)
    out_dtype = out_dtype or x.dtype
    src = _source((x.shape, x.dtype), (y.shape, y.dtype), (space, out_dtype), ops)
    call, sig = kernel(src, version)
    buf = torch.full((space.numel() + out_offset,), _sentinel(out_dtype), dtype=out_dtype)
    out = buf[out_offset:].view(space)
    tensors = (x, y, out)
    values, _ = kernel_params(
        sig, [t.data_ptr() for t in tensors], [broadcast_strides(t, space) for t in tensors],
        space, [],
    )  # fmt: skip
    for block in range(BLOCKS):
        for thread in range(THREADS):
            call(*values, thread, THREADS, block, BLOCKS)
    return out


def _sentinel(dtype: torch.dtype) -> float | int | bool:
    return {torch.int8: -128, torch.uint8: 171, torch.bool: True}.get(dtype, float("nan"))


def untouched(out: torch.Tensor) -> bool:
    sentinel = _sentinel(out.dtype)
    return bool(out.isnan().all() if sentinel != sentinel else (out == sentinel).all())


DTYPES = [torch.float32, torch.float64, torch.float16, torch.int8, torch.uint8]


def expected(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.float16:  # computed in f32, rounded once
        return (x.float() * y.float() + x.float()).half()
    return x * y + x


def check(got: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> None:
    want = expected(x, y)
    if x.dtype in (torch.int8, torch.uint8):  # uint8: x * y + x wraps
        assert torch.equal(got, want)
    elif x.dtype == torch.float16:
        torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)
    else:
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("version", ["all", "i32", "i64"])
def test_every_version_matches_eager_on_every_layout(version: str, dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    for name, (x, y) in vector_layouts(dtype).items():
        for out_offset in (0, 1):
            got = run(x, y, version, out_offset)
            try:
                check(got, x, y)
            except AssertionError as e:
                raise AssertionError(f"{name}, output offset {out_offset}: {e}") from None


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_lanes_version_takes_exactly_the_aligned_layouts(dtype: torch.dtype) -> None:
    """A kernel keeping only its lanes version computes the aligned layouts
    completely and leaves the others (and a misaligned output) untouched."""
    torch.manual_seed(1)
    aligned = ALIGNED | ({"cols_not_a_multiple_of_4"} if dtype == torch.float64 else set())
    for name, (x, y) in vector_layouts(dtype).items():
        for out_offset in (0, 1):  # one element in: never a vector's alignment
            got = run(x, y, "lanes", out_offset)
            if name in aligned and out_offset == 0:
                check(got, x, y)
                continue
            assert untouched(got), f"{name}, output offset {out_offset}: the lanes version ran"


MIXED = [
    # (x dtype, y dtype, output dtype, ops, eager)
    (torch.float16, torch.float32, torch.float32,
     """%0 = aten.mul %x, %y : {tx}, {ty} -> {to}
      %out = aten.add %0, %y : {to}, {ty} -> {to}""",
     lambda x, y: x * y + y),
    (torch.float32, torch.float32, torch.bool,
     """%out = aten.gt %x, %y : {tx}, {ty} -> {to}""",
     lambda x, y: x > y),
    (torch.int8, torch.float64, torch.float64,
     """%0 = aten.mul %x, %y : {tx}, {ty} -> {to}
      %out = aten.sub %0, %y : {to}, {ty} -> {to}""",
     lambda x, y: x * y - y),
]  # fmt: skip


@pytest.mark.parametrize("case", range(len(MIXED)))
@pytest.mark.parametrize("version", ["all", "lanes"])
def test_mixed_types_and_a_bool_output(case: int, version: str) -> None:
    """Lanes by the widest type among operands and output (2 with an f64); a
    bool output is a byte per lane. Rank 3, the middle dim broadcast."""
    xt, yt, ot, ops, eager = MIXED[case]
    torch.manual_seed(2)

    def r(*shape: int, dtype: torch.dtype) -> torch.Tensor:
        if dtype == torch.int8:
            return torch.randint(-9, 9, shape, dtype=dtype)
        return torch.randn(*shape).to(dtype)

    layouts = {
        "aligned": (r(2, 3, 8, dtype=xt), r(2, 1, 8, dtype=yt)),
        "misaligned": (r(2, 3, 9, dtype=xt)[..., 1:], r(2, 1, 8, dtype=yt)),
    }
    for name, (x, y) in layouts.items():
        got = run(x, y, version, ops=ops, out_dtype=ot)
        if version == "lanes" and name == "misaligned":
            assert untouched(got), name
            continue
        want = eager(x, y)
        if ot == torch.bool:
            assert torch.equal(got, want), name
        else:
            torch.testing.assert_close(got, want, msg=name)
