"""Regression tests for the wrong results random differential testing found
(issue 18): each case must give eager's answer, or raise eager's error, and the
cases that are fusible must run as a kernel (`launches_per_call`)."""

from __future__ import annotations

import fusec
import pytest
import torch
import torch.nn.functional as F


def same(got, want):
    """Exact equality of values, dtypes, shapes and the sign of zeros."""
    flat_got = got if isinstance(got, tuple | list) else (got,)
    flat_want = want if isinstance(want, tuple | list) else (want,)
    assert len(flat_got) == len(flat_want)
    for g, w in zip(flat_got, flat_want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0, atol=0, equal_nan=True)
        if g.is_floating_point():  # the sign of zeros (a NaN's sign is no answer)
            real = ~torch.isnan(w)
            assert torch.equal(torch.signbit(g)[real], torch.signbit(w)[real]), (g, w)


def fused(fn, *args, launches=1):
    """`fusec.compile(fn)(*args)`, checked to have run `launches` kernels."""
    f = fusec.compile(fn)
    out = f(*args)
    assert f.launches_per_call == launches, f.ir()
    return out


# ------------------------------------------------------- 1. integer division by 0


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: (a * 2) // b,
        lambda a, b: torch.div(a + 1, b, rounding_mode="trunc"),
        lambda a, b: torch.div(a + 1, b, rounding_mode="floor"),
    ],
    ids=["floordiv", "trunc", "floor"],
)
def test_integer_division_by_zero_raises_eagers_error(fn):
    a = torch.arange(-6, 6)
    b = torch.tensor([1, 2, 3, -4, 5, 6, -1, 2, 3, 4, 5, 6])
    f = fusec.compile(fn)
    same(f(a, b), fn(a, b))
    assert f.launches_per_call == 1
    b[5] = 0
    if a.is_cuda:
        same_where_defined(f(a, b), fn(a, b), b != 0)
        return
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, b)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(a, b)


def same_where_defined(got, want, defined):
    """CUDA eager does not raise on an integer division by zero: its quotient
    there is unspecified (PTX), so only the other elements are compared."""
    torch.cuda.synchronize()
    assert got.dtype == want.dtype and got.shape == want.shape
    assert torch.equal(got[defined], want[defined])


def dead_division(x0, x1):
    v4 = x0.int()
    v6 = torch.div(x1, v4, rounding_mode="floor")
    v4.mul_(v6)  # a write to a fresh value nobody reads: the quotient is dead
    return x1 * 2


def test_a_dead_integer_division_by_zero_still_raises():
    """Found by the random graphs (seed 4794): eager computes the quotient and
    raises even though nothing reads it; passes must not drop it as dead code."""
    f = fusec.compile(dead_division)
    same(
        f(torch.tensor([2]), torch.tensor([3])), dead_division(torch.tensor([2]), torch.tensor([3]))
    )
    if torch.tensor(0).is_cuda:  # no error to keep: CUDA eager does not raise
        same(
            f(torch.tensor([0]), torch.tensor([3])),
            dead_division(torch.tensor([0]), torch.tensor([3])),
        )
        return
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        dead_division(torch.tensor([0]), torch.tensor([3]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        f(torch.tensor([0]), torch.tensor([3]))


def test_integer_division_min_by_minus_one_wraps_as_eager():
    a = torch.tensor([-(2**63), 7, -7])
    b = torch.tensor([-1, -2, 2])
    # (eager's own trunc division traps on MIN / -1, so only floor is compared)
    fn = lambda a, b: (a + 0) // b  # noqa: E731
    same(fused(fn, a, b), fn(a, b))


# ------------------------------------------------- 2. symbols the JIT cannot resolve


def test_double_tanh_to_half_runs():
    fn = lambda a: torch.tanh(a).half()  # noqa: E731
    x = torch.randn(64, dtype=torch.float64)
    same(fused(fn, x), fn(x))


def test_module_calling_an_unresolvable_symbol_is_refused():
    from fusec.backends.llvm_jit import JitModule, UnresolvedSymbols

    ir = (
        "declare double @fusec_no_such_function(double)\n"
        "define double @f(double %x) {\n"
        "  %r = call double @fusec_no_such_function(double %x)\n"
        "  ret double %r\n}\n"
    )
    with pytest.raises(UnresolvedSymbols, match="fusec_no_such_function"):
        JitModule(ir)
    libm = "declare double @sin(double)\ndefine double @f(double %x) {\n"
    libm += "  %r = call double @sin(double %x)\n  ret double %r\n}\n"
    assert JitModule(libm).address("f")


def test_kernel_that_cannot_load_falls_back_to_pytorch(monkeypatch):
    from fusec.backends import llvm_jit

    monkeypatch.setattr(llvm_jit, "elf_undefined_symbols", lambda obj: ["__fusec_no_such_helper"])
    fn = lambda a: (a * 2 + 1).half()  # noqa: E731
    x = torch.randn(8, dtype=torch.float64, device="cpu")  # the CPU JIT's loader
    f = fusec.compile(fn)
    same(f(x), fn(x))
    assert f.launches_per_call == 0


# ------------------------------------------------------------ 7. scalar attributes


def test_leaky_relu_with_zero_slope():
    fn = lambda x: F.leaky_relu(x * 1, 0.0)  # noqa: E731
    x = torch.randn(32)
    same(fused(fn, x), fn(x))


def test_clamp_with_bool_bound():
    fn = lambda x: torch.clamp(x * 1, min=True)  # noqa: E731
    x = torch.randn(32)
    same(fused(fn, x), fn(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", ["lt", "le", "eq", "ge", "gt", "ne"])
def test_half_compared_with_python_float_rounds_the_scalar(dtype, op):
    x = torch.tensor([0.1, 0.2, 0.3333, 0.7, 1 / 3, 0.099976], dtype=dtype)
    for scalar in (0.1, 0.3333, 1 / 3, 0.7):
        fn = _compare_with(op, scalar)
        same(fused(fn, x), fn(x))


def _compare_with(op, scalar):
    return lambda x: getattr(x * 1, op)(scalar)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_arithmetic_and_clamp_round_python_scalars(dtype):
    x = torch.linspace(-1, 1, 101, dtype=dtype)
    for fn in (
        lambda x: torch.clamp(x, min=0.1, max=0.7) * 1,
        lambda x: torch.where(x > 0, x, 0.1),
    ):
        same(fused(fn, x), fn(x))


# ------------------------------------------------------------------- 9. numerics


def test_signed_zeros_in_clamp_maximum_minimum():
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, float("nan")])
    for fn in (
        lambda x: torch.clamp(x * 1, min=0.0),
        lambda x: torch.clamp(x * 1, max=-0.0),
        lambda x: torch.maximum(x * 1, -x),
        lambda x: torch.minimum(x * 1, -x),
        lambda x: torch.relu(x * 1),
    ):
        same(fused(fn, x), fn(x))


def test_pow_with_special_scalar_exponents():
    x = torch.tensor([-float("inf"), float("inf"), -0.0, 0.0, -2.0, 3.0, float("nan")])
    for e in (0.5, -0.5, 2.0, 3.0, -1.0, -2.0, 1.5, 2):
        fn = _power(e)
        same(fused(fn, x), fn(x))


def _power(e):
    return lambda x: (x * 1) ** e


# --------------------------------------------------- 10. fusible, and now fused


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8])
def test_integer_pow_is_fused(dtype):
    a = torch.tensor([-3, -2, -1, 0, 1, 2, 3, 5, 7], dtype=dtype)
    b = torch.tensor([0, 1, 2, 3, 4, 5, 9, -1, -2], dtype=dtype)
    fn = lambda a, b: (a + 0) ** b  # noqa: E731
    same(fused(fn, a, b), fn(a, b))
    fn2 = lambda a: (a + 0) ** 3  # noqa: E731
    same(fused(fn2, a), fn2(a))


@pytest.mark.parametrize(
    "fn",
    [
        lambda a, b: torch.multiply(a, b) + 1,
        lambda a, b: torch.divide(a, b) + 1,
        lambda a, b: torch.true_divide(a, b) + 1,
        lambda a, b: torch.max(a, b) + 1,
        lambda a, b: torch.min(a, b) + 1,
        lambda a, b: a.multiply(b).divide(a).true_divide(b).max(a).min(b),
    ],
    ids=["multiply", "divide", "true_divide", "max", "min", "methods"],
)
def test_aliases_are_fused(fn):
    a, b = torch.randn(16) + 3, torch.randn(16) + 3
    same(fused(fn, a, b), fn(a, b))


def test_max_min_reductions_still_run():
    x = torch.randn(4, 5)
    for fn in (lambda x: torch.max(x * 1), lambda x: torch.max(x * 1, 1)[0] + 1):
        same(fusec.compile(fn)(x), fn(x))


# ------------------------------------------------- 3-5. in-place writes and aliases


def run_both(fn, *args):
    """(eager result, eager inputs after), (fusec result, fusec inputs after),
    each on its own copy of `args` (strides kept)."""

    def copy(a):
        if not isinstance(a, torch.Tensor):
            return a
        c = torch.empty_strided(a.size(), a.stride(), dtype=a.dtype)
        c.copy_(a)
        return c

    eager_args = [copy(a) for a in args]
    fusec_args = [copy(a) for a in args]
    f = fusec.compile(fn)
    return (fn(*eager_args), eager_args), (f(*fusec_args), fusec_args), f


def check_in_place(fn, *args):
    (want, want_args), (got, got_args), f = run_both(fn, *args)
    torch.testing.assert_close(got, want)
    for g, w in zip(got_args, want_args, strict=True):
        torch.testing.assert_close(g, w)  # writes to the caller's tensors
    return f


def test_read_stays_before_an_in_place_write_through_a_view():
    def fn(x):
        v2 = x + 1
        v5 = v2[None]
        v6 = v2 * 3
        v5.sigmoid_()
        return v6, v2

    def on_input(v2):
        v5 = v2[None]
        v6 = v2 * 3
        v5.sigmoid_()
        return v6

    check_in_place(fn, torch.randn(4, 3))
    check_in_place(on_input, torch.randn(4, 3))


def test_no_op_cast_is_an_alias():
    def on_input(x):
        y = x.float()
        y.mul_(2)
        return y + 1

    def on_fresh(x):
        a = x + 1
        y = a.to(torch.float32)
        z = a * 3
        y.mul_(2)
        return z, a

    check_in_place(on_input, torch.randn(4))
    f = check_in_place(on_fresh, torch.randn(4))
    assert f.launches_per_call >= 1


def test_augmented_assignment_writes_in_place():
    def add(x, y):
        x += y
        return x * 2

    def through_view(x, y):
        v = x[1:]
        v *= y
        return x + 1

    def keeps_dtype(x, y):
        x -= y
        return x

    check_in_place(add, torch.randn(4), torch.randn(4))
    check_in_place(through_view, torch.randn(4), torch.randn(3))
    (want, _), (got, _), _ = run_both(keeps_dtype, torch.randn(4), torch.randn(4).double())
    assert got.dtype == want.dtype == torch.float32
    check_in_place(keeps_dtype, torch.randn(4), torch.randn(4).double())


def test_augmented_assignment_in_a_module():
    class M(torch.nn.Module):
        def forward(self, x):
            y = x * 2
            y += 1
            y /= 3
            return y

    check_in_place(M(), torch.randn(5))


# ------------------------------------------------------------------ 6. chunks


def test_chunk_into_size_one_pieces_then_a_larger_input():
    def fn(x):
        a, b = (x * 2).chunk(2, 1)
        return a.exp() + 1, b * 3

    f = fusec.compile(fn)
    for n in (2, 4, 6, 3):
        x = torch.randn(3, n)
        got, want = f(x), fn(x)
        assert [g.shape for g in got] == [w.shape for w in want]
        torch.testing.assert_close(got, want)


def test_group_with_an_empty_output_writes_its_other_outputs():
    def fn(x, y):
        a = x.exp()
        return a * 2, a + y

    f = fusec.compile(fn)
    x = torch.randn(3)
    for y in (torch.randn(2, 1), torch.randn(0, 1)):
        torch.testing.assert_close(f(x, y), fn(x, y))


def test_chunk_count_from_the_size():
    def fn(x):
        return torch.chunk(x.sigmoid() * 2, x.shape[0], 0)

    f = fusec.compile(fn)
    for n in (3, 4, 2):
        x = torch.randn(n, 2)
        torch.testing.assert_close(f(x), fn(x))


# -------------------------------------------------------------------- 8. shapes


def test_producer_feeding_consumers_that_do_not_broadcast_together():
    def fn(x, y, z):
        a = x.exp()
        return a + y, a * z

    f = fusec.compile(fn)
    args = (torch.randn(1, 3), torch.randn(2, 1), torch.randn(5, 1))
    torch.testing.assert_close(f(*args), fn(*args))
    # Compiled at shapes that broadcast together, called at ones that do not.
    g = fusec.compile(fn)
    args = (torch.randn(1, 3), torch.randn(2, 1), torch.randn(2, 1))
    torch.testing.assert_close(g(*args), fn(*args))
    assert g.launches_per_call == 1
    args = (torch.randn(1, 3), torch.randn(2, 1), torch.randn(5, 1))
    torch.testing.assert_close(g(*args), fn(*args))


def test_in_place_write_into_an_expanded_input_raises_as_eager():
    def fn(x):
        x.add_(1)
        return x * 2

    x = torch.randn(1, 4).expand(3, 4)
    with pytest.raises(RuntimeError, match="more than one element"):
        fn(torch.randn(1, 4).expand(3, 4))
    with pytest.raises(RuntimeError, match="more than one element"):
        fusec.compile(fn)(x)


def test_in_place_write_to_strided_inputs_that_alias():
    def fn(a, b):
        a.mul_(2)
        return b + 1  # b overlaps a: it reads the written values

    base = torch.randn(4, 6)
    a, b = base[:, ::2], base[:, :3]
    eager_base = base.clone()
    want = fn(eager_base[:, ::2], eager_base[:, :3])
    got = fusec.compile(fn)(a, b)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(base, eager_base)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.chunk(2, 0)[-1] * 1,
        lambda x: x.chunk(2, 0)[0] * 1,
        lambda x: x.chunk(4, 0)[-1] + 1,
        lambda x: torch.split(x, 2, 0)[-1] * 3,
        lambda x: x[1:] * 2,
        lambda x: x[::2] * 2,
        lambda x: x[-1] * 2 + x,
        lambda x: x.narrow(0, 1, 1) * 2,
    ],
    ids=["chunk-last", "chunk-first", "chunk4", "split", "slice", "step", "index", "narrow"],
)
def test_cuts_at_a_second_size(fn):
    """A cut's pieces (how many, which are size 1) change with the exact size,
    not only with which dims are 1; eager's errors (an index past the end) too."""
    f = fusec.compile(fn)
    for n in (2, 4, 3, 6, 5, 1, 8, 2):
        x = torch.randn(n)
        try:
            want = fn(x)
        except (RuntimeError, IndexError) as e:
            with pytest.raises(type(e)):
                f(x)
            continue
        got = f(x)
        assert got.shape == want.shape, n
        torch.testing.assert_close(got, want)


def test_lstm_tail_keeps_one_specialization_across_hidden_sizes():
    from reference_models import lstm_tail

    f = fusec.compile(lstm_tail)
    for batch, hidden in ((8, 16), (5, 8), (3, 32)):
        args = (torch.randn(batch, 4 * hidden), torch.randn(batch, hidden))
        torch.testing.assert_close(f(*args), lstm_tail(*args))
        assert f.launches_per_call == 1
    assert len(f.specializations) == 1


def test_read_stays_before_a_write_through_a_view_of_a_fused_value():
    """The write's destination is a view of a value that fusion then replaced
    by its group's result: the read of that value must still stay first."""

    def fn(x0):
        v0 = x0.chunk(3, 0)[0] * 1
        v2 = torch.logical_not(v0 > x0)
        v11 = torch.erf(v0)
        x0.add_(v2)
        v15 = torch.exp(v11)
        (v0.unsqueeze(0)).sigmoid_()
        return v15, -0.25 - v11

    check_in_place(fn, torch.randn(3))


def test_chunk_motion_keeps_a_read_before_a_write():
    """broadcasting-chunk must not move `gelu(x)` below a write to x."""

    def fn(x):
        v0 = F.gelu(x)
        x.neg_()
        return v0.chunk(3, 0)[0] * 1

    check_in_place(fn, torch.randn(5))
