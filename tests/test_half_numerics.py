"""float16/bfloat16 kernels against eager, bit for bit (issue 31, items 3 and 4).

PyTorch's CPU kernels compute a half op in float32 and round its result to the
half type; a Python scalar is converted to the op's dtype first, except the
second operand of mul and div, which they read as a float32. A fused kernel
must give the same bits: tiny scalars must not round to 0, overflow to inf
must stay inf, and an explicit cast must see the rounded value.
"""

from __future__ import annotations

import fusec
import pytest
import torch
import torch.nn.functional as F

HALVES = [torch.float16, torch.bfloat16]


def _inputs(dtype: torch.dtype) -> torch.Tensor:
    """Special values, then 1012 of every magnitude from 1e-8 to 1e5."""
    g = torch.Generator().manual_seed(0)
    special = torch.tensor(
        [1.0, 0.0, -3.0, 60000.0, 2.0, 0.1, -1.0, 1.0009765625, -0.0, 65504.0, 3e-8, 7.0]
    )
    spread = torch.randn(1012, generator=g) * torch.logspace(-8, 5, 1012)
    return torch.cat([special, spread]).to(dtype)


def same(got: torch.Tensor, want: torch.Tensor) -> None:
    """Equal values, dtypes and shapes, NaNs where eager's are, signed zeros."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if not got.is_floating_point():
        assert torch.equal(got, want), (got[got != want], want[got != want])
        return
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan)
    bad = (got != want) & ~nan
    assert not bad.any(), (got[bad][:5], want[bad][:5])
    assert torch.equal(torch.signbit(got[~nan]), torch.signbit(want[~nan]))


def fused_same(fn, *args) -> None:
    """`fn` run as one fused kernel gives eager's result."""
    f = fusec.compile(fn)
    got = f(*args)
    assert f.launches_per_call == 1, f.ir()
    same(got, fn(*args))


# Each case negates first, so even a one-op case runs in a kernel (neg is exact).
SCALAR_CASES = {
    "mul_tiny": lambda x: -x * 1e-8,
    "rmul_tiny": lambda x: 1e-8 * -x,
    "mul_huge_times_zero": lambda x: -x * 1e10,
    "mul_inexact": lambda x: -x * 0.1,
    "div_large": lambda x: -x / 1e5,
    "rdiv_tiny": lambda x: 1e-8 / -x,
    "rdiv": lambda x: 0.1 / -x,
    "floor_div_tiny": lambda x: torch.div(-x, 1e-8, rounding_mode="floor"),
    "trunc_div_scalar": lambda x: torch.div(-x, 0.3, rounding_mode="trunc"),
    "add_rounds_scalar": lambda x: -x + 7e4,
    "rsub_rounds_scalar": lambda x: 0.1 - (-x),
    "add_alpha_rounded": lambda x: torch.add(-x, -x, alpha=1e-8),
    "pow_rounds_exponent": lambda x: (-x) ** 1.0001,
    "rpow_rounds_base": lambda x: 2.0001**-x,
    "pow_half": lambda x: (-x) ** 0.5,
    "pow_cube": lambda x: (-x) ** 3,
    "pow_minus_two": lambda x: (-x) ** -2.0,
    "lt_rounds_scalar": lambda x: -x < 1.0001,
    "leaky_relu_slope": lambda x: F.leaky_relu(-x, 1e-8),
    "add_0d_tensor_rounds": lambda x: -x + torch.tensor(0.1),
    "mul_0d_tensor_op_math": lambda x: -x * torch.tensor(1e-8),
    "add_int_tensor_rounds": lambda x: -x + torch.arange(x.numel()) * 1001,
}


@pytest.mark.parametrize("dtype", HALVES, ids=["f16", "bf16"])
@pytest.mark.parametrize("name", list(SCALAR_CASES))
def test_scalar_operands_match_eager(name: str, dtype: torch.dtype) -> None:
    fused_same(SCALAR_CASES[name], _inputs(dtype))


ROUNDING_CASES = {
    "overflow_stays_inf": lambda x: (x * 1000) / 1000,
    "float_cast_sees_rounded": lambda x: (x * 3.3).float() * 1.0001,
    "int_cast_sees_rounded": lambda x: (x.clamp(-300, 300) * 10.1).to(torch.int64),
    "bool_cast_sees_rounded": lambda x: (x * 1.1 - 2.2).to(torch.bool),
    "comparison_sees_rounded": lambda x: (x * 1.1) > 2.2,
    "chain": lambda x: torch.sigmoid(x * 2).exp() - 1,
    "trunc_div_tensors": lambda x: torch.div(x, x.flip(0) * 0.3, rounding_mode="trunc"),
    "floor_div_tensors": lambda x: torch.div(x, x.flip(0) * 0.3, rounding_mode="floor"),
    "mean_rounded_before_use": lambda x: (
        (x * 1e-3).view(-1, 8) - (x * 1e-3).view(-1, 8).mean(-1, keepdim=True)
    ),
}


@pytest.mark.parametrize("dtype", HALVES, ids=["f16", "bf16"])
@pytest.mark.parametrize("name", list(ROUNDING_CASES))
def test_each_half_result_is_rounded_as_in_eager(name: str, dtype: torch.dtype) -> None:
    fused_same(ROUNDING_CASES[name], _inputs(dtype))


# Operators fusec writes out as several ops are one op-math kernel in eager.
WRITTEN_OUT = {
    "softmax": lambda x: torch.softmax(x.view(-1, 8) * 0.01, -1),
    "hardswish": lambda x: F.hardswish(x * 1e-3),
    "mish": lambda x: F.mish(x * 1e-3),
    "selu": lambda x: F.selu(x * 1e-3),
}


@pytest.mark.parametrize("dtype", HALVES, ids=["f16", "bf16"])
@pytest.mark.parametrize("name", list(WRITTEN_OUT))
def test_written_out_operators_keep_op_math(name: str, dtype: torch.dtype) -> None:
    fused_same(WRITTEN_OUT[name], _inputs(dtype))


def test_opmath_steps_are_marked_and_printed() -> None:
    """The marker survives fusion and outlining, so a kernel sees it."""
    f = fusec.compile(lambda x: F.hardswish(x * 2))
    f(torch.randn(8, dtype=torch.float16))
    assert "fusion.opmath_step" in str(f.ir())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_scalar_divided_by_tensor_is_reciprocal_times_scalar(dtype: torch.dtype) -> None:
    """`s / x` is Python's `x.__rtruediv__(s)`: `x.reciprocal() * s` in eager."""
    x = torch.randn(1000).mul(10).to(dtype)
    x[x == 0] = 3
    fused_same(lambda x: 3.0 / (x * 2), x)


def _scalar_times_half_unfused(x):
    # The chunk of a computed value leaves the group without a kernel: its ops
    # run through PyTorch, where `torch.mul(s, x)` would round `s` to x's dtype.
    v = 1e-5 * x
    return v * 1, v.float().chunk(2, 0)[-1] * 1


@pytest.mark.parametrize("dtype", HALVES, ids=["f16", "bf16"])
def test_scalar_times_half_in_a_group_run_through_pytorch(dtype: torch.dtype) -> None:
    # random graph 3777: 1e-5 * (-1.0003e30 as bfloat16) was one bfloat16 step off
    x = torch.tensor([0.0, -0.625, -1.0003e30]).to(dtype)
    f = fusec.compile(_scalar_times_half_unfused)
    got = f(x)
    assert f.launches_per_call == 0
    for g, w in zip(got, _scalar_times_half_unfused(x), strict=True):
        same(g, w)
