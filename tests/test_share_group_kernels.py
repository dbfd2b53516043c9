"""`share-group-kernels` on real calls: groups that differ from a repeated kernel
only at a boundary run that kernel (one compile), and results match eager even
on inputs where a careless fold would not (infinities, NaNs)."""

from __future__ import annotations

import fusec
import pytest
import torch


def tail_step(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # Two alpha-equivalent groups split by a matmul; only the first one's `a` is
    # read later, so the second would yield less.
    a = torch.exp(x)
    b = torch.neg(a)
    c = torch.exp(b @ w)
    d = torch.neg(c)
    return a, d


def missing_gradient(
    x: torch.Tensor, y: torch.Tensor, w: torch.Tensor, n: torch.Tensor, g: torch.Tensor
) -> torch.Tensor:
    # The first group is the second one with `n * g` absent (the last step of a
    # recurrence, which gets no gradient from a later step).
    h = torch.tanh(x) * y
    m = h @ w
    return (torch.tanh(m) + n * g) * y


def test_a_group_yielding_less_runs_the_other_groups_kernel() -> None:
    f = fusec.compile(tail_step)
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    for got, want in zip(f(x, w), tail_step(x, w), strict=True):
        torch.testing.assert_close(got, want)
    assert f.launches_per_call == 2
    assert fusec.cache_stats()["kernels_compiled"] == 1


@pytest.mark.parametrize("special", [None, float("inf"), float("nan")])
def test_a_group_missing_an_addend_runs_the_full_kernel_fed_zeros(special: float | None) -> None:
    f = fusec.compile(missing_gradient)
    torch.manual_seed(0)
    x, y, w, n, g = (torch.randn(4, 4) for _ in range(5))
    if special is not None:
        # Zero times these would not be zero: the fed zeros meet only each other.
        x[0, 0] = y[1, 1] = special
    torch.testing.assert_close(f(x, y, w, n, g), missing_gradient(x, y, w, n, g), equal_nan=True)
    assert f.launches_per_call == 2
    assert fusec.cache_stats()["kernels_compiled"] == 1
    assert "fusion.zeros_like" in f.ir()


def test_the_fed_zeros_are_made_once() -> None:
    """The zeros only feed the kernel (and its guard's fallback), which read them:
    one tensor serves every call, with no `zeros_like` per call, and each call
    with new inputs still equals eager."""
    f = fusec.compile(missing_gradient)
    torch.manual_seed(1)
    for k in range(3):
        args = [torch.randn(4, 4) for _ in range(5)]
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            got = f(*args)
        torch.testing.assert_close(got, missing_gradient(*args))
        calls = [e.name for e in prof.events() if e.name == "aten::zeros_like"]
        assert calls == ([] if k else ["aten::zeros_like"])
