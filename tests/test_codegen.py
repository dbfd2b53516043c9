"""Generated host kernels against eager PyTorch: every op x dtype, broadcasting,
expanded (stride-0), non-contiguous, 0-d and empty tensors, views of inputs."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
import torch
from fusec.codegen.kernel import build_kernel
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.fusion import GroupOp, YieldOp
from fusec.runtime.cpu import load_kernel
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute, SSAValue

DT = {torch.float32: inf.F32, torch.float64: inf.F64, torch.float16: inf.F16,
      torch.bfloat16: inf.BF16, torch.int32: inf.I32, torch.int64: inf.I64,
      torch.bool: inf.BOOL}  # fmt: skip
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int32, torch.int64]
ALL = FLOATS + INTS + [torch.bool]


def ir_type(x: torch.Tensor | float | int | bool) -> Attribute:
    if isinstance(x, torch.Tensor):
        return TensorType(DT[x.dtype], list(x.shape))
    return inf.BOOL if isinstance(x, bool) else inf.I64 if isinstance(x, int) else inf.F64


def make_group(
    inputs: Sequence[torch.Tensor | float | int | bool],
    body: Callable[..., Sequence[SSAValue] | SSAValue],
) -> GroupOp:
    """A group over `inputs` whose body `body(*block_args)` builds with aten builders."""
    from xdsl.ir import Block, Region

    block = Block(arg_types=[ir_type(x) for x in inputs])
    ops: list = []

    class Rec:
        def __getattr__(self, name: str):
            cls = getattr(aten, name)

            def build(*args, **kw):
                shape_op = cls.get_irdl_definition() and aten.ShapeOp in [
                    type(t) for t in cls.traits
                ]
                op = cls(list(args), kw) if shape_op else cls(*args, **kw)
                ops.append(op)
                return op.results[0] if len(op.results) == 1 else op.results

            return build

    outs = body(Rec(), *block.args)
    outs = [outs] if isinstance(outs, SSAValue) else list(outs)
    block.add_ops([*ops, YieldOp(*outs)])
    # The group's operands are irrelevant to code generation; reuse the block args.
    group = GroupOp(list(block.args), [o.type for o in outs], Region(block))
    return group


def run(inputs, body) -> list[torch.Tensor]:
    return load_kernel(build_kernel(make_group(inputs, body)))(inputs)


def check(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype in (torch.float16, torch.bfloat16):
        # Computed in f32 and rounded once at the store; eager rounds every op.
        torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2, equal_nan=True)
    else:
        torch.testing.assert_close(got, want, equal_nan=True)


def sample(dtype: torch.dtype, shape: Sequence[int], positive: bool = False) -> torch.Tensor:
    g = torch.Generator().manual_seed(hash((dtype, tuple(shape))) % 1000)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g, dtype=torch.float64) * 2
        return (x.abs() + 0.1 if positive else x).to(dtype)
    x = torch.randint(-20, 20, shape, generator=g, dtype=dtype)
    return x.abs() + 1 if positive else x


UNARY = {
    "NegOp": (torch.neg, FLOATS + INTS, False), "AbsOp": (torch.abs, FLOATS + INTS, False),
    "ReluOp": (torch.relu, FLOATS + INTS, False), "ExpOp": (torch.exp, ALL, False),
    "Expm1Op": (torch.expm1, ALL, False), "LogOp": (torch.log, ALL, True),
    "Log1pOp": (torch.log1p, FLOATS + INTS, True), "SqrtOp": (torch.sqrt, ALL, True),
    "RsqrtOp": (torch.rsqrt, FLOATS + INTS, True), "ReciprocalOp": (torch.reciprocal, FLOATS + INTS, True),
    "SigmoidOp": (torch.sigmoid, ALL, False), "TanhOp": (torch.tanh, ALL, False),
    "SiluOp": (torch.nn.functional.silu, FLOATS, False), "ErfOp": (torch.erf, ALL, False),
    "SinOp": (torch.sin, ALL, False), "CosOp": (torch.cos, ALL, False),
    "LogicalNotOp": (torch.logical_not, ALL, False),
}  # fmt: skip


@pytest.mark.parametrize("op", sorted(UNARY))
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_unary(op: str, dtype: torch.dtype) -> None:
    fn, dtypes, positive = UNARY[op]
    if dtype not in dtypes:
        pytest.skip("PyTorch does not define it")
    x = sample(dtype, (5, 37), positive)
    (got,) = run([x], lambda b, a: getattr(b, op)(a))
    check(got, fn(x))


BINARY = {
    "AddOp": (torch.add, ALL), "SubOp": (torch.sub, FLOATS + INTS), "MulOp": (torch.mul, ALL),
    "DivOp": (torch.div, ALL), "MaximumOp": (torch.maximum, ALL),
    "MinimumOp": (torch.minimum, ALL), "EqOp": (torch.eq, ALL), "NeOp": (torch.ne, ALL),
    "LtOp": (torch.lt, ALL), "LeOp": (torch.le, ALL), "GtOp": (torch.gt, ALL),
    "GeOp": (torch.ge, ALL), "LogicalAndOp": (torch.logical_and, ALL),
    "LogicalOrOp": (torch.logical_or, ALL), "LogicalXorOp": (torch.logical_xor, ALL),
    "PowOp": (torch.pow, FLOATS),
}  # fmt: skip


@pytest.mark.parametrize("op", sorted(BINARY))
@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_binary_broadcast(op: str, dtype: torch.dtype) -> None:
    fn, dtypes = BINARY[op]
    if dtype not in dtypes:
        pytest.skip("PyTorch does not define it")
    positive = op in ("PowOp", "DivOp") and not dtype.is_floating_point
    a = sample(dtype, (4, 1, 6), positive or op == "PowOp")
    b = sample(dtype, (3, 1), positive)
    (got,) = run([a, b], lambda bld, x, y: getattr(bld, op)(x, y))
    check(got, fn(a, b))


@pytest.mark.parametrize("dtypes", [(torch.float16, torch.float32), (torch.int32, torch.float64),
                                    (torch.bool, torch.int64), (torch.bfloat16, torch.float16),
                                    (torch.int32, torch.int64)], ids=str)  # fmt: skip
def test_promotion(dtypes: tuple[torch.dtype, torch.dtype]) -> None:
    a, b = sample(dtypes[0], (7, 9)), sample(dtypes[1], (9,))
    got = run([a, b], lambda bld, x, y: [bld.MulOp(x, y), bld.AddOp(x, y)])
    check(got[0], a * b)
    check(got[1], a + b)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("scalar", [2.5, 3, True])
def test_python_scalars(dtype: torch.dtype, scalar: float | int | bool) -> None:
    x = sample(dtype, (3, 8))
    (got,) = run([x, scalar], lambda b, a, s: b.MulOp(a, s))
    check(got, x * scalar)


@pytest.mark.parametrize("src", ALL, ids=str)
@pytest.mark.parametrize("dst", ALL, ids=str)
def test_casts(src: torch.dtype, dst: torch.dtype) -> None:
    x = sample(src, (33,))
    if src.is_floating_point and not dst.is_floating_point and dst != torch.bool:
        x = x * 10  # exercise truncation toward zero
    (got,) = run([x], lambda b, a: b.ToOp(a, DT[dst]))
    check(got, x.to(dst))


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_rounding_division(dtype: torch.dtype, mode: str) -> None:
    a = sample(dtype, (64,)) * 3
    b = sample(dtype, (64,))
    if not dtype.is_floating_point:
        b = torch.where(b == 0, torch.ones_like(b), b)
    (got,) = run([a, b], lambda bld, x, y: bld.DivOp(x, y, rounding_mode=StringAttr(mode)))
    check(got, torch.div(a, b, rounding_mode=mode))


def test_nan_and_inf_semantics() -> None:
    nan, inf_ = float("nan"), float("inf")
    a = torch.tensor([nan, 1.0, -inf_, inf_, 0.0, -2.0, nan])
    b = torch.tensor([0.0, nan, 1.0, nan, -0.0, 3.0, nan])
    got = run(
        [a, b],
        lambda bld, x, y: [bld.MaximumOp(x, y), bld.MinimumOp(x, y), bld.ReluOp(x),
                           bld.ClampOp(x, min=FloatAttr(-1.0, inf.F64), max=FloatAttr(0.5, inf.F64)),
                           bld.NeOp(x, y), bld.EqOp(x, y)],
    )  # fmt: skip
    want = [
        torch.maximum(a, b),
        torch.minimum(a, b),
        torch.relu(a),
        a.clamp(-1.0, 0.5),
        a != b,
        a == b,
    ]
    for g, w in zip(got, want, strict=True):
        check(g, w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=str)
def test_parametrised_unary(dtype: torch.dtype) -> None:
    x = sample(torch.float32, (6, 10))
    got = run(
        [x],
        lambda b, a: [b.LeakyReluOp(a, negative_slope=FloatAttr(0.2, inf.F64)),
                      b.GeluOp(a), b.GeluOp(a, approximate=StringAttr("tanh")),
                      b.AddOp(a, a, alpha=IntegerAttr(3, inf.I64))],
    )  # fmt: skip
    check(got[0], torch.nn.functional.leaky_relu(x, 0.2))
    check(got[1], torch.nn.functional.gelu(x))
    check(got[2], torch.nn.functional.gelu(x, approximate="tanh"))
    check(got[3], torch.add(x, x, alpha=3))
    xi = sample(torch.int64, (9,))
    (gi,) = run(
        [xi], lambda b, a: b.ClampOp(a, min=IntegerAttr(-3, inf.I64), max=IntegerAttr(4, inf.I64))
    )
    check(gi, xi.clamp(-3, 4))


def test_where() -> None:
    c, a, b = sample(torch.bool, (4, 5)), sample(torch.float16, (5,)), sample(torch.float32, (4, 1))
    (got,) = run([c, a, b], lambda bld, x, y, z: bld.WhereOp(x, y, z))
    check(got, torch.where(c, a, b))


def lstm_body(b, gates, cx):
    i, f, g, o = b.ChunkOp(gates, chunks=IntegerAttr(4, inf.I64), dim=IntegerAttr(1, inf.I64))
    cy = b.AddOp(b.MulOp(b.SigmoidOp(f), cx), b.MulOp(b.SigmoidOp(i), b.TanhOp(g)))
    return [b.MulOp(b.SigmoidOp(o), b.TanhOp(cy)), cy]


def lstm_eager(gates: torch.Tensor, cx: torch.Tensor) -> list[torch.Tensor]:
    i, f, g, o = gates.chunk(4, 1)
    cy = f.sigmoid() * cx + i.sigmoid() * g.tanh()
    return [o.sigmoid() * cy.tanh(), cy]


def test_lstm_tail_any_size_one_kernel() -> None:
    gates, cx = sample(torch.float32, (8, 64)), sample(torch.float32, (8, 16))
    kernel = load_kernel(build_kernel(make_group([gates, cx], lstm_body)))
    for n, h in [(8, 16), (3, 5), (1000, 40), (0, 7)]:
        g2, c2 = sample(torch.float32, (n, 4 * h)), sample(torch.float32, (n, h))
        for got, want in zip(kernel([g2, c2]), lstm_eager(g2, c2), strict=True):
            check(got, want)


def test_strided_inputs() -> None:
    x, y = sample(torch.float32, (4, 6)), sample(torch.float32, (4, 6))
    kernel = load_kernel(build_kernel(make_group([x, y], lambda b, a, c: b.MulOp(b.ExpOp(a), c))))
    big = sample(torch.float32, (300, 200))
    cases = [
        (big.t()[:, :300], sample(torch.float32, (200, 300))),  # transposed
        (big[::2, 1::3], sample(torch.float32, (67,)).expand(150, 67)),  # sliced, expanded
        (sample(torch.float32, (1, 5)).expand(7, 5), sample(torch.float32, (7, 5))[:, ::1]),
    ]
    for a, c in cases:
        (got,) = kernel([a, c])
        check(got, torch.exp(a) * c)


def test_zero_dim_and_empty() -> None:
    x, y = torch.tensor(1.5), torch.tensor(-2.0)
    (got,) = run([x, y], lambda b, a, c: b.AddOp(b.SinOp(a), c))
    check(got, torch.sin(x) + y)
    z, w = sample(torch.float32, (0, 3)), sample(torch.float32, (3,))
    (got,) = run([z, w], lambda b, a, c: b.SubOp(a, c))
    check(got, z - w)
    s, t = torch.tensor(3.0), sample(torch.float32, (2, 3))
    (got,) = run([s, t], lambda b, a, c: b.MulOp(a, c))
    check(got, s * t)


def test_views_of_inputs() -> None:
    x = sample(torch.float32, (6, 8))
    i64 = inf.I64

    def narrow(b, a):
        n = b.NarrowOp(
            a, dim=IntegerAttr(1, i64), start=IntegerAttr(2, i64), length=IntegerAttr(3, i64)
        )
        return b.NegOp(n)

    def transpose_slice(b, a):
        t = b.TransposeOp(a, dim0=IntegerAttr(0, i64), dim1=IntegerAttr(1, i64))
        s = b.SliceOp(t, dim=IntegerAttr(1, i64), start=IntegerAttr(0, i64),
                      end=IntegerAttr(1, i64), step=IntegerAttr(1, i64))  # fmt: skip
        return b.AddOp(t, s)

    check(run([x], narrow)[0], -x.narrow(1, 2, 3))
    check(run([x], transpose_slice)[0], x.t() + x.t()[:, 0:1])


def test_parallel_split_large() -> None:
    x = sample(torch.float32, (1 << 18,))
    (got,) = run([x, 0.5], lambda b, a, s: b.TanhOp(b.MulOp(a, s)))
    check(got, torch.tanh(x * 0.5))


def test_compute_heavy_kernel_loop_is_interleaved() -> None:
    """A kernel of expanded transcendentals (chain8's tanh then sigmoid) gets its
    vector loop interleaved `HEAVY_INTERLEAVE` times (independent dependency
    chains side by side), a plain add keeps LLVM's own choice (the option is
    reset between modules), and results match eager on sizes that leave a
    remainder of every kind."""
    from fusec.backends.llvm_jit import HEAVY_INTERLEAVE, loop_interleave, optimize_for_host
    from fusec.codegen.kernel import kernel_llvm_ir

    def chain8(b, a, c):
        t = b.TanhOp(b.AddOp(b.MulOp(a, c), a))
        s = b.SigmoidOp(b.MulOp(t, c))
        return b.MulOp(b.ReluOp(b.SubOp(s, a)), c)

    for n in (1, 15, 16, 63, 64, 65, 1000 + 13):
        x, y = sample(torch.float32, (n,)), sample(torch.float32, (n,))
        heavy = make_group([x, y], chain8)
        (got,) = load_kernel(build_kernel(heavy))([x, y])
        want = torch.relu(torch.sigmoid(torch.tanh(x * y + x) * y) - x) * y
        check(got, want)
    _, heavy_ir, _ = kernel_llvm_ir(heavy)
    _, light_ir, _ = kernel_llvm_ir(make_group([x, y], lambda b, a, c: b.AddOp(a, c)))
    assert loop_interleave(heavy_ir) == HEAVY_INTERLEAVE and loop_interleave(light_ir) == 0
    light_before = optimize_for_host(light_ir)
    optimized = optimize_for_host(heavy_ir)
    body = optimized[optimized.index("vector.body:") :]
    body = body[: body.index("br i1")]
    assert body.count("fdiv") == 2 * HEAVY_INTERLEAVE, body
    assert optimize_for_host(light_ir) == light_before


def test_large_kernel_has_no_vector_epilogue() -> None:
    """A kernel over `LARGE_KERNEL_LINES` gets no vector epilogue (half of its
    code generation time) and stays right on sizes that leave a remainder; the
    next small kernel is optimized exactly as before (the LLVM option is reset)."""
    from fusec.backends.llvm_jit import LARGE_KERNEL_LINES, optimize_for_host
    from fusec.codegen.kernel import kernel_llvm_ir

    x = sample(torch.float32, (1000 + 13,))

    def chain(b, a):
        for _ in range(80):
            a = b.TanhOp(b.SigmoidOp(a))
        return a

    large = make_group([x], chain)
    _, ir_text, _ = kernel_llvm_ir(large)
    assert ir_text.count("\n") > LARGE_KERNEL_LINES
    small = make_group([x], lambda b, a: b.TanhOp(a))
    _, small_ir, _ = kernel_llvm_ir(small)
    small_before = optimize_for_host(small_ir)
    optimized = optimize_for_host(ir_text)
    assert "vec.epilog" not in optimized and "vector.body" in optimized
    assert optimize_for_host(small_ir) == small_before
    (got,) = load_kernel(build_kernel(large))([x])
    want = x
    for _ in range(80):
        want = torch.tanh(torch.sigmoid(want))
    check(got, want)
