"""In-place ops through `fusec.compile`: `functionalize` turns writes to fresh values
into plain values (and they fuse), writes to inputs and views of inputs stay, and
the caller's tensors end up exactly as eager leaves them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fusec
import pytest
import torch
import torch.nn.functional as F
from torch import nn


def run_both(fn: Callable[..., Any], *inputs: Any) -> tuple[Any, Any, Any, list[Any]]:
    """Compiled and eager results, each on its own clones of `inputs`; returns
    (compiled fn, compiled result, eager result) and checks the inputs after."""
    compiled = fusec.compile(fn)
    mine = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    theirs = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]
    got = compiled(*mine)
    want = fn(*theirs)
    for m, t in zip(mine, theirs, strict=True):
        if isinstance(t, torch.Tensor):
            torch.testing.assert_close(m, t, msg="the caller's tensor differs from eager")
    return compiled, got, want, mine


def assert_same(got: Any, want: Any) -> None:
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
    else:
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got, want)


def test_chain_on_a_fresh_value_is_one_kernel() -> None:
    def f(x):
        y = x * 2
        y.add_(1)
        y.sigmoid_()
        return y

    fn, got, want, _ = run_both(f, torch.randn(8, 5))
    assert_same(got, want)
    assert fn.launches_per_call == 1
    assert "aten.copy_" not in fn.ir()


@pytest.mark.parametrize(
    "body",
    [
        lambda x, y: torch.relu_(x * y - 0.5),
        lambda x, y: F.relu(x * y - 0.5, inplace=True),
        lambda x, y: (x + y).mul_(2).sub_(y).div_(3),
        lambda x, y: torch.exp(x).tanh_(),
    ],
    ids=["torch.relu_", "F.relu-inplace", "mul_-sub_-div_", "tanh_"],
)
def test_in_place_forms_fuse_like_out_of_place(body: Callable[..., Any]) -> None:
    def f(x, y):
        return body(x, y)

    fn, got, want, _ = run_both(f, torch.randn(4, 6), torch.randn(6))
    assert_same(got, want)
    assert fn.launches_per_call == 1


def test_inplace_relu_module() -> None:
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.act = nn.ReLU(inplace=True)

        def forward(self, x, y):
            z = x + y
            self.act(z)
            return z * 3, z

    fn, got, want, _ = run_both(M(), torch.randn(3, 4), torch.randn(3, 4))
    assert_same(got, want)
    assert fn.launches_per_call == 1


def test_in_place_on_an_input_mutates_it_as_eager() -> None:
    def f(x, y):
        a = torch.exp(x)  # read before the write: must see the old x
        x.mul_(y)
        x.add_(1)
        return a + x, x * 2

    fn, got, want, mine = run_both(f, torch.randn(4, 3), torch.randn(3))
    assert_same(got, want)
    assert "aten.copy_" in fn.ir()
    # The second call reuses the compiled program and mutates again, as eager.
    x, y = torch.randn(4, 3), torch.randn(3)
    x2 = x.clone()
    assert_same(fn(x, y), f(x2, y))
    torch.testing.assert_close(x, x2)


def test_in_place_on_a_view_of_an_input() -> None:
    def f(x):
        x[0].add_(10)
        x[:, 1:].mul_(2)
        return x.sigmoid()

    fn, got, want, _ = run_both(f, torch.randn(3, 4))
    assert_same(got, want)


def test_in_place_through_operator_iadd_and_chained_results() -> None:
    def f(x, y):
        z = x - y
        z += y * y
        w = z.mul_(2)
        w.neg_()
        return z, w + 1

    fn, got, want, _ = run_both(f, torch.randn(5), torch.randn(5))
    assert_same(got, want)
    assert fn.launches_per_call == 1


def test_dtype_kept_by_in_place_ops() -> None:
    def f(x, y):
        z = x * 1
        z.mul_(y)  # float32 destination, float64 operand: stays float32
        z.lt_(0.5)
        return z

    fn, got, want, _ = run_both(f, torch.randn(6), torch.randn(6, dtype=torch.float64))
    assert_same(got, want)
    assert got.dtype == torch.float32


def test_same_tensor_passed_twice() -> None:
    def f(x, y):
        x.add_(1)
        return y * 2  # y is x: it sees the write

    compiled = fusec.compile(f)
    a = torch.randn(4)
    b = a.clone()
    got = compiled(a, a)
    want = f(b, b)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(a, b)
