"""`convert-math-to-llvm{target=cpu}` against eager PyTorch.

Each math op is put in a loop `out[i] = op(in[i])` written in the llvm dialect,
lowered by the pass, translated with `xdsl.backend.llvm.convert`, optimized at
O3 for the host CPU with llvmlite and called through ctypes on torch tensors.
Results are compared with torch's own function over random and special inputs,
with PyTorch's default tolerances, and NaNs must sit where torch's are.
"""

from __future__ import annotations

import ctypes
import functools
import math
import re

import fusec
import llvmlite.binding as llvm
import pytest
import torch
from fusec.backends.llvm_jit import host_target_machine
from fusec.passes.convert_math_to_llvm import ConvertMathToLLVMPass
from fusec.passes.lowering.math_sincos import SINCOS_FAST_MAX, SINCOS_FAST_MAX_F32
from xdsl.backend.llvm.convert import convert_module
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.dialects.llvm import LLVM
from xdsl.dialects.math import Math
from xdsl.parser import Parser

TOL = {torch.float32: (1.3e-6, 1e-5), torch.float64: (1e-7, 1e-7)}
MLIR_TYPE = {torch.float32: "f32", torch.float64: "f64"}

UNARY = {
    "exp": torch.exp,
    "exp2": torch.exp2,
    "expm1": torch.expm1,
    "log": torch.log,
    "log10": torch.log10,
    "log1p": torch.log1p,
    "log2": torch.log2,
    "tanh": torch.tanh,
    "erf": torch.erf,
    "sin": torch.sin,
    "cos": torch.cos,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "absf": torch.abs,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "trunc": torch.trunc,
    "roundeven": torch.round,
}
BINARY = {"powf": torch.pow, "copysign": torch.copysign}

_KERNEL = """
llvm.func @kernel({args}, %out: !llvm.ptr, %n: i64) {{
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  llvm.br ^loop(%c0 : i64)
^loop(%i: i64):
  %done = llvm.icmp "sge" %i, %n : i64
  llvm.cond_br %done, ^exit, ^body
^body:
{loads}
  %y = math.{op} {operands} : {t}
  %q = llvm.getelementptr %out[%i] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
  llvm.store %y, %q : {t}, !llvm.ptr
  %next = llvm.add %i, %c1 : i64
  llvm.br ^loop(%next : i64)
^exit:
  llvm.return
}}
"""


def kernel_source(op: str, t: str, arity: int) -> str:
    """`out[i] = math.<op>(in0[i], ...)` over n elements, in the llvm dialect."""
    names = [f"%in{k}" for k in range(arity)]
    loads = "\n".join(
        f"  %p{k} = llvm.getelementptr %in{k}[%i] : (!llvm.ptr, i64) -> !llvm.ptr, {t}\n"
        f"  %x{k} = llvm.load %p{k} : !llvm.ptr -> {t}"
        for k in range(arity)
    )
    return _KERNEL.format(
        args=", ".join(f"{n}: !llvm.ptr" for n in names),
        loads=loads,
        op=op,
        operands=", ".join(f"%x{k}" for k in range(arity)),
        t=t,
    )


def lower(source: str) -> ModuleOp:
    ctx = Context()
    for dialect in (Builtin, Func, LLVM, Math, Arith):
        ctx.load_dialect(dialect)
    module = Parser(ctx, source).parse_module()
    ConvertMathToLLVMPass(target="cpu").apply(ctx, module)
    module.verify()
    return module


def optimize(module: ModuleOp) -> llvm.ModuleRef:
    """xDSL llvm dialect -> llvmlite module optimized at O3 for this host."""
    tm = host_target_machine()
    ir = convert_module(module, fallback_target_triple=llvm.get_process_triple())
    ref = llvm.parse_assembly(str(ir))
    ref.verify()
    ref.triple = llvm.get_process_triple()
    ref.data_layout = str(tm.target_data)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(ref, pb)
    return ref


_ENGINES: list[llvm.ExecutionEngine] = []  # keep JITted code alive


@functools.cache
def compiled(op: str, dtype: torch.dtype, arity: int):
    ref = optimize(lower(kernel_source(op, MLIR_TYPE[dtype], arity)))
    engine = llvm.create_mcjit_compiler(ref, host_target_machine())
    engine.finalize_object()
    _ENGINES.append(engine)
    addr = engine.get_function_address("kernel")
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (arity + 1)), ctypes.c_int64)
    return proto(addr)


def run(op: str, *inputs: torch.Tensor) -> torch.Tensor:
    fn = compiled(op, inputs[0].dtype, len(inputs))
    out = torch.empty_like(inputs[0])
    fn(*(t.data_ptr() for t in inputs), out.data_ptr(), out.numel())
    return out


def specials(dtype: torch.dtype) -> list[float]:
    info = torch.finfo(dtype)
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 0.5, 2.0, -2.0]
    vals += [info.tiny, -info.tiny, info.tiny / 8, info.max, -info.max, info.eps, -info.eps]
    vals += [1e-30, -1e-30, 1e-10, -1e-10, 1e-5, -1e-5, 1e-3, -1e-3, 0.1, -0.1]
    vals += [0.34, -0.34, 0.35, -0.35, 0.7, -0.7, 0.9999, 1.0001, 3.0, 5.5, 10.0, -10.0]
    vals += [30.0, -30.0, 80.0, -80.0, 88.7, -88.7, 89.0, -103.0, -104.0, -110.0, 127.9, 128.0]
    vals += [-149.5, -150.0, 200.0, 700.0, -700.0, 709.7, 710.0, -745.0, -746.0, 1023.9, 1024.0]
    vals += [1e5, -1e5, 12345.678, 1e20, -1e20]
    return vals


def inputs(op: str, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(hash(op) % 2**31)
    pieces = [torch.tensor(specials(dtype), dtype=torch.float64)]
    for lo, hi, n in [(-1, 1, 4000), (-10, 10, 4000), (-100, 100, 2000), (-1e4, 1e4, 1000)]:
        pieces.append(torch.rand(n, generator=g, dtype=torch.float64) * (hi - lo) + lo)
    # log-uniform magnitudes of both signs reach tiny and huge values
    mags = torch.exp(torch.rand(6000, generator=g, dtype=torch.float64) * 160 - 80)
    signs = torch.randint(0, 2, (6000,), generator=g, dtype=torch.float64) * 2 - 1
    pieces.append(mags * signs)
    if op in ("expm1", "log1p", "tanh", "erf", "sin"):
        pieces.append(torch.rand(2000, generator=g, dtype=torch.float64) * 2e-3 - 1e-3)
    if op.startswith("log") or op in ("sqrt", "rsqrt"):
        pieces.append(torch.rand(2000, generator=g, dtype=torch.float64) * 4)
    # sin/cos magnitudes beyond the Cody-Waite range take the table reduction
    return torch.cat(pieces).to(dtype)


def assert_matches(got: torch.Tensor, want: torch.Tensor, what: str) -> None:
    rtol, atol = TOL[got.dtype]
    assert torch.equal(torch.isnan(got), torch.isnan(want)), (
        f"{what}: NaN positions differ at {torch.nonzero(torch.isnan(got) != torch.isnan(want))[:5].flatten().tolist()}"
    )
    torch.testing.assert_close(
        got, want, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{what}: {m}"
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", sorted(UNARY))
def test_unary_matches_torch(op: str, dtype: torch.dtype) -> None:
    x = inputs(op, dtype)
    assert_matches(run(op, x), UNARY[op](x), f"math.{op} {dtype}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op", sorted(BINARY))
def test_binary_matches_torch(op: str, dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(7)
    sp = torch.tensor(specials(dtype), dtype=torch.float64)
    # every special against every special, plus random bases and exponents
    x = torch.cat(
        [
            sp.repeat_interleave(len(sp)),
            torch.rand(20000, generator=g, dtype=torch.float64) * 20 - 10,
        ]
    )
    y = torch.cat(
        [sp.repeat(len(sp)), torch.rand(20000, generator=g, dtype=torch.float64) * 20 - 10]
    )
    ints = torch.randint(-40, 40, (4000,), generator=g).to(torch.float64)
    x = torch.cat([x, torch.rand(4000, generator=g, dtype=torch.float64) * 6 - 3]).to(dtype)
    y = torch.cat([y, ints]).to(dtype)
    assert_matches(run(op, x, y), BINARY[op](x, y), f"math.{op} {dtype}")


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "erf", "sin", "expm1", "log1p"])
def test_f32_loop_vectorizes_without_libm(op: str) -> None:
    text = str(optimize(lower(kernel_source(op, "f32", 1))))
    # The width LLVM picks depends on what ran before in the process (8 lanes
    # alone, 16 after tests/test_codegen.py's kernels): any vector will do.
    assert re.search(r"<(4|8|16) x float>", text), text
    for name in ("expf", "logf", "tanhf", "erff", "sinf", "expm1f", "log1pf"):
        assert f"@{name}(" not in text
    for intrinsic in ("@llvm.exp.", "@llvm.log.", "@llvm.sin.", "@llvm.cos."):
        assert intrinsic not in text


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.float64, torch.float16, torch.bfloat16],
    ids=["f32", "f64", "f16", "bf16"],
)
@pytest.mark.parametrize("op", ["sin", "cos"])
def test_sincos_huge_arguments_match_eager(op: str, dtype: torch.dtype) -> None:
    """Past SINCOS_FAST_MAX the three-part pi/2 reduction is inexact (sin(1e12)
    came out wrong); the table reduction must agree with eager up to the dtype
    max, through the whole compiler (f16/bf16 compute in f32)."""
    info = torch.finfo(dtype)
    values = [SINCOS_FAST_MAX_F32 * 1.0001, -5e4, 1e6, SINCOS_FAST_MAX * 1.0001, 1.7e6]
    values += [1e8, 1e12, -1e20, 1e30, 3e38, -1e300]
    values += [info.max, -info.max, math.inf, -math.inf, math.nan, 0.5, -2.0]
    g = torch.Generator().manual_seed(3)
    # log-uniform magnitudes of both signs across the whole exponent range
    expo = torch.rand(4000, generator=g, dtype=torch.float64) * math.log2(info.max)
    signs = torch.randint(0, 2, (4000,), generator=g, dtype=torch.float64) * 2 - 1
    x = torch.cat([torch.tensor(values, dtype=torch.float64), signs * torch.exp2(expo)])
    x = x.to(dtype)  # out-of-range values become inf, which must give NaN
    fn = getattr(torch, op)
    got = fusec.compile(lambda t: fn(t) * 2)(x)
    torch.testing.assert_close(got, fn(x) * 2, equal_nan=True)


def _ulp_error(got: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|got - exact| in units of the f32 spacing at |exact| (rounded to f32)."""
    r = exact.abs().to(torch.float32)
    ulp = (torch.nextafter(r, torch.tensor(math.inf)) - r).to(torch.float64)
    return (got.to(torch.float64) - exact).abs() / ulp


def test_f32_erf_dense_sweep() -> None:
    """The f32 erf (a table form, evaluated in f32) over a dense sweep of f32 bit
    patterns from the smallest subnormal to 4.5 (past the cut to +-1), both
    signs, plus large magnitudes and specials: within eager's default f32
    tolerances, NaN where eager's is, and at most 8 ulp from erf in f64."""
    bits = torch.arange(1, 0x40900000, 509, dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32)
    big = torch.tensor([3.9, 3.9192, 3.92, 3.9201, 5.0, 10.0, 1e10, 3e38], dtype=torch.float32)
    sp = torch.tensor(
        [0.0, math.inf, math.nan, 1.4e-45, 1e-40, 1.17549435e-38], dtype=torch.float32
    )
    x = torch.cat([x, big, sp])
    x = torch.cat([x, -x])
    got = run("erf", x)
    want = torch.erf(x)
    assert_matches(got, want, "math.erf f32 sweep")
    exact = torch.erf(x.to(torch.float64))
    finite = ~torch.isnan(x)
    err = _ulp_error(got[finite], exact[finite])
    worst = int(err.argmax())
    assert err.max() <= 8, f"erf({x[finite][worst].item()!r}): {err.max().item():.2f} ulp"
    # erf is odd, bounded by 1 and exact at the ends
    half = len(got) // 2
    assert torch.equal(got[:half][finite[:half]], -got[half:][finite[half:]])
    assert got[finite].abs().max() <= 1
    beyond = x.abs() >= 3.927734375  # eager's own cut to +-1
    assert torch.equal(got[beyond], torch.sign(x[beyond]))
    assert torch.equal(got[beyond], want[beyond])
    zeros = got[x == 0]
    assert torch.equal(zeros, x[x == 0])
    assert torch.equal(torch.signbit(zeros), torch.signbit(x[x == 0]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_expm1_sweep(dtype: torch.dtype) -> None:
    """expm1 (also tanh's core) as 2 * (s*p + (s - 1/2)), s = 2^(n-1), one
    formula from underflow to overflow: at most 2 ulp from libm's expm1 over
    [-40, ln(max)], [-1, 1] and tiny positive magnitudes."""
    g = torch.Generator().manual_seed(17)
    hi = 88.7 if dtype == torch.float32 else 709.7
    x = torch.cat(
        [
            torch.rand(100_000, generator=g, dtype=torch.float64) * (hi + 40) - 40,
            torch.rand(50_000, generator=g, dtype=torch.float64) * 2 - 1,
            torch.exp2(-torch.rand(20_000, generator=g, dtype=torch.float64) * 60),
        ]
    ).to(dtype)
    got = run("expm1", x).to(torch.float64)
    exact = torch.tensor([math.expm1(v) for v in x.to(torch.float64).tolist()], dtype=torch.float64)
    mag = exact.to(dtype).abs()
    spacing = (torch.nextafter(mag, torch.tensor(math.inf, dtype=dtype)) - mag).to(torch.float64)
    finite = torch.isfinite(mag)
    err = ((got - exact).abs() / spacing)[finite]
    worst = int(err.argmax())
    assert err.max() <= 2, f"expm1({x[finite][worst].item()!r}): {err.max().item():.2f} ulp"


def test_f64_erf_table_sweep() -> None:
    """The f64 erf (table of erf and its slope at multiples of 1/128, Taylor
    terms to d^5): a uniform sweep to past the table's end, the values around
    every table point and half point (where |d| is largest), tiny and
    subnormal magnitudes and specials, both signs: at most 3 ulp from libm's
    erf (itself within an ulp), odd, within [-1, 1], +-1 past 6."""
    g = torch.Generator().manual_seed(13)
    sweep = torch.rand(100_000, generator=g, dtype=torch.float64) * 6.5
    points = torch.arange(0, 6 * 256 + 1, dtype=torch.float64) / 256
    near = (points[:, None] + torch.tensor([-1e-12, 0.0, 1e-12], dtype=torch.float64)).flatten()
    tiny = torch.exp2(-torch.rand(2000, generator=g, dtype=torch.float64) * 1070)
    sp = torch.tensor([0.0, 5e-324, 1e-310, 5.9921875, 5.99219, 6.0, 1e300, math.inf, math.nan])
    x = torch.cat([sweep, near.clamp(min=0), tiny, sp.to(torch.float64)])
    x = torch.cat([x, -x])
    got = run("erf", x)
    assert_matches(got, torch.erf(x), "math.erf f64 sweep")
    finite = ~torch.isnan(x)
    exact = torch.tensor([math.erf(v) for v in x[finite].tolist()], dtype=torch.float64)
    spacing = torch.nextafter(exact.abs(), torch.tensor(math.inf, dtype=torch.float64)) - exact.abs()
    err = (got[finite] - exact).abs() / spacing
    worst = int(err.argmax())
    assert err.max() <= 3, f"erf({x[finite][worst].item()!r}): {err.max().item():.2f} ulp"
    half = len(got) // 2
    assert torch.equal(got[:half][finite[:half]], -got[half:][finite[half:]])
    assert got[finite].abs().max() <= 1
    assert torch.equal(got[x.abs() >= 6], torch.sign(x[x.abs() >= 6]))
    assert torch.equal(torch.signbit(got[x == 0]), torch.signbit(x[x == 0]))


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_f32_sincos_fast_path_near_multiples_of_half_pi(op: str) -> None:
    """The all-f32 fast path (`_sincos_f32_fast`, taken by every f32 loop up to
    SINCOS_FAST_MAX_F32) where its reduction is hardest: the 201 f32 values
    around every multiple of pi/2 up to the bound, both signs, plus a uniform
    sweep: at most 3 ulp from sin/cos in f64 and within eager's tolerances;
    sin(-0) = -0."""
    k = torch.arange(1, int(SINCOS_FAST_MAX_F32 / (math.pi / 2)), dtype=torch.float64)
    base = (k * math.pi / 2).to(torch.float32).view(torch.int32)
    x = (base[:, None] + torch.arange(-100, 101, dtype=torch.int32)).view(torch.float32)
    g = torch.Generator().manual_seed(11)
    sweep = (torch.rand(200_000, generator=g) * 2 - 1) * SINCOS_FAST_MAX_F32
    x = torch.cat([x.flatten(), sweep, torch.tensor([0.0, 1e-30, 1e-6, 0.5])])
    x = torch.cat([x, -x])
    fn = getattr(torch, op)
    got = fusec.compile(lambda t: fn(t) * 2)(x) / 2
    assert_matches(got, fn(x), f"{op} f32 fast path")
    err = _ulp_error(got, fn(x.to(torch.float64)))
    worst = int(err.argmax())
    assert err.max() <= 3, f"{op}({x[worst].item()!r}): {err.max().item():.2f} ulp"
    zeros = got[x == 0]
    assert torch.equal(torch.signbit(zeros), torch.signbit(x[x == 0]) & (op == "sin"))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("layout", ["contiguous", "rows"])
def test_sincos_fast_path_reruns_large_arguments(dtype: torch.dtype, layout: str) -> None:
    """`sincos-fast-path` through the whole compiler: arguments up to the edge of
    the Cody-Waite range take the fast loop; a loop range holding one large, inf
    or NaN argument is computed again with the exact reduction, so every element
    matches eager, those beside the large ones too. With "rows" (a view of every
    other column) each row is a loop range of its own."""
    limit = SINCOS_FAST_MAX_F32 if dtype == torch.float32 else SINCOS_FAST_MAX
    g = torch.Generator().manual_seed(5)
    x = (torch.rand(48, 602, generator=g, dtype=torch.float64) * 2 - 1) * limit
    x[:8] = torch.randn(8, 602, generator=g, dtype=torch.float64) * 10
    x[41, 10] = limit
    x[42, 10] = -limit
    for row, col, v in [(3, 34, 1e12), (10, 0, -3e7), (20, 600, math.inf), (31, 300, math.nan)]:
        x[row, col] = v
    x[40, 10] = limit * 1.001
    x = x.to(dtype)
    if layout == "rows":
        x = x[:, ::2]
    f = fusec.compile(lambda t: torch.sin(t) * 2 + torch.cos(t))
    got = f(x)
    assert f.launches_per_call == 1
    want = torch.sin(x) * 2 + torch.cos(x)
    assert_matches(got, want, f"sin/cos fast path {dtype} {layout}")


def test_sincos_fast_path_in_reduction_kernels() -> None:
    """In a reduction group the stage loops carry accumulators (exact reduction
    kept) and the epilogue loop that writes the full outputs takes the fast
    path: large arguments in both still match eager."""
    g = torch.Generator().manual_seed(9)
    x = torch.randn(16, 300, generator=g) * 10
    x[2, 7], x[5, 299], x[9, 0] = 1e9, -3e7, 2e6
    f = fusec.compile(
        lambda t: (
            torch.sin(t) * torch.softmax(torch.cos(t), -1) + torch.sin(t).sum(-1, keepdim=True)
        )
    )
    got = f(x)
    assert f.launches_per_call == 1
    want = torch.sin(x) * torch.softmax(torch.cos(x), -1) + torch.sin(x).sum(-1, keepdim=True)
    assert_matches(got, want, "sin/cos in a reduction kernel")


def test_f64_erf_dense_sweep() -> None:
    """f64 erf (a polynomial fit below 1, erfc from a Chebyshev fit evaluated as
    its monomial polynomial above) on a dense grid across both branches and the
    cut to +-1: within 1e-15 relative of torch.erf."""
    x = torch.linspace(-7, 7, 400_001, dtype=torch.float64)
    x = torch.cat([x, torch.tensor([0.0, -0.0, 1e-300, 5e-324, 1.0, 6.0, 1e300])])
    got, want = run("erf", x), torch.erf(x)
    rel = (got - want).abs() / want.abs().clamp_min(1e-300)
    assert rel.max() <= 1e-15, f"erf({x[rel.argmax()].item()!r}): rel {rel.max().item():.3g}"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_exact_sin_keeps_the_sign_of_zero(dtype: torch.dtype) -> None:
    """The exact sin/cos (every f64 lane, and f32 loops with a large lane):
    sin(-0) = -0, so 1 / sin(x) is -inf there as in eager; cos(-0) = 1."""
    x = torch.tensor([-0.0, 0.0, -0.0, 1e30, -1e-30, 3.0], dtype=dtype)
    got = run("sin", x)
    assert torch.equal(torch.signbit(got), torch.signbit(torch.sin(x))), got
    assert torch.equal(run("cos", x)[:3], torch.ones(3, dtype=dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_reciprocal_of_sin_at_negative_zero_in_a_kernel(dtype: torch.dtype) -> None:
    """A fused `1 / sin(x)` whose launch has a large lane (exact path) gives
    eager's infinities at +-0."""
    x = torch.tensor([-0.0, 0.0, 1e30, -0.0, 2.0, -2.0, 0.0, -0.0], dtype=dtype)
    f = fusec.compile(lambda t: 1 / torch.sin(t * 1))
    got, want = f(x), 1 / torch.sin(x * 1)
    assert f.launches_per_call == 1
    assert torch.equal(got[[0, 1, 3, 6, 7]], want[[0, 1, 3, 6, 7]]), (got, want)


def test_f32_erf_is_within_an_ulp_of_correctly_rounded_from_half_up() -> None:
    """f32 erf for |x| >= 0.5 is within an ulp of erf in f64 rounded once, and of
    eager's (a rational f32 fit was up to 5 ulp off near +-1, where `.to(int)`
    turned eager's -1.0 into 0; the f32 table form is 2 ulp at most, 1 from 1/128
    on)."""
    x = torch.cat([torch.linspace(-4.5, -0.5, 100_001), torch.linspace(0.5, 4.5, 100_001)])
    x = torch.cat([x, torch.tensor([3.911090850830078, -2.9014580249786377, 10.0, -10.0])])
    got = run("erf", x)
    want = torch.erf(x.double()).float()
    # Where the correctly rounded value is already +-1 but eager's is 0.99999994
    # (below |x| = 3.927734375), fusec keeps eager's.
    below_one = (x.abs() < 3.927734375) & (want.abs() == 1)
    want = torch.where(below_one, torch.copysign(torch.tensor(1 - 2**-24), x), want)
    ulps = (got.view(torch.int32) - want.view(torch.int32)).abs()
    assert ulps.max() <= 1, x[ulps > 1][:5]
    ulps = (got.view(torch.int32) - torch.erf(x).view(torch.int32)).abs()
    assert ulps.max() <= 1, x[ulps > 1][:5]


def test_f32_erf_near_one_is_eagers_value_and_int_casts_agree() -> None:
    """Near erf = +-1 fusec's f32 erf is eager's bit for bit: eager's is +-1.0
    exactly from |x| = 3.927734375 and 0.99999994 below, where the correctly
    rounded value is 1.0 from 3.9192 on; `.to(int64)` of the two then differed
    (0 against +-1) on 758 of 400k points of [-4.5, 4.5]."""
    near = torch.linspace(3.8, 4.1, 300_001, dtype=torch.float64).float().unique()
    x = torch.cat([near, -near, torch.linspace(-4.5, 4.5, 400_003)])
    got, want = run("erf", x), torch.erf(x)
    at_one = x.abs() >= 3.8
    assert torch.equal(got[at_one], want[at_one]), x[at_one][got[at_one] != want[at_one]][:5]
    assert torch.equal(got.long(), want.long())


@pytest.mark.parametrize("op", ["sin", "cos"])
def test_a_lanes_sin_does_not_depend_on_a_large_lane_beside_it(op: str) -> None:
    """f32 sin/cos in a kernel: the loop that met a large |x| reruns with the
    exact reduction, which gave every small lane of the launch the chunk
    reduction's value, an ulp from the fast path's; a lane's value must be the
    same whatever its neighbours hold."""
    import fusec

    fn = getattr(torch, op)
    f = fusec.compile(lambda x: (lambda s: (s, -s))(fn(x)))  # shared: fused, not left to ATen
    x = torch.randn(4096) * 10
    alone = f(x)[0]
    x[17], x[1000] = 1e30, -math.inf
    beside = f(x)[0]
    small = torch.ones(4096, dtype=torch.bool)
    small[[17, 1000]] = False
    assert torch.equal(alone[small], beside[small]), (alone[small] != beside[small]).sum()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_tanh_saturates_exactly_past_its_clamp(dtype: torch.dtype) -> None:
    """tanh clamps 2|x| once (no range selects of its own): past the clamp the
    result is exactly +-1, eager's value, and signed zeros, infinities and NaN
    come out as eager's; around the clamp it stays within eager's tolerances."""
    edge = 9.1 if dtype == torch.float32 else 19.5
    x = torch.tensor([edge, edge * 1.0001, 20.0, 1e30, math.inf, 0.0, math.nan], dtype=dtype)
    x = torch.cat([x, -x])
    got = run("tanh", x)
    want = torch.tanh(x)
    same = (got == want) | (got.isnan() & want.isnan())
    assert bool(same.all()), (x[~same], got[~same], want[~same])
    assert torch.equal(torch.signbit(got[~got.isnan()]), torch.signbit(want[~want.isnan()]))
    near = torch.linspace(edge - 1, edge + 1, 4001, dtype=dtype)
    assert_matches(run("tanh", near), torch.tanh(near), f"tanh near {edge}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
def test_sigmoid_exp_normal_range_matches_eager(dtype: torch.dtype) -> None:
    """sigmoid's exp is marked for normal results only (`exp_normal`: clamped,
    one scaling multiply): 1 where 1 + exp(-x) rounds to 1, 0 where eager's is
    0, NaN where eager's is, and eager's values (within its tolerances, no
    subnormal larger than 4.2e-39 lost) across the clamps; silu likewise."""
    edges = [86.0, 88.37, 88.72, 700.0, 706.0, 709.43, 709.8, 745.2]
    x = torch.tensor(edges + [0.0, 1e-30, 40.0, 1e5, math.inf, math.nan], dtype=dtype)
    x = torch.cat([x, -x, torch.linspace(-760, 760, 30001, dtype=dtype)])
    for name, fn in (("sigmoid", torch.sigmoid), ("silu", torch.nn.functional.silu)):
        got = fusec.compile(lambda t, fn=fn: fn(t) * 2)(x)
        want = fn(x) * 2
        assert_matches(got, want, f"{name} {dtype}")
        if name == "sigmoid":
            assert bool((got[want == 2] == 2).all()) and bool((got[want == 0] <= 8.4e-39).all())
            far = x < -89 if dtype == torch.float32 else x < -710
            assert bool((got[far] == 0).all())
