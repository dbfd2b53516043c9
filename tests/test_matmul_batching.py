"""`concat-matmul-sum` and `batch-shared-matmul` end to end: an unrolled LSTM's
weight gradients are one product per weight, its input projections one product
before the loop, and forward results and gradients still match eager (f64
tightly; f32 within what a changed summation order can move)."""

from __future__ import annotations

from typing import Any

import fusec
import pytest
import torch
from torch import nn
from training_models import LSTMLoop

TOL = {torch.float32: {"rtol": 1e-4, "atol": 1e-5}, torch.float64: {"rtol": 1e-10, "atol": 1e-12}}


def _grads(model: nn.Module, forward: Any, inputs: tuple) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)
    out = forward(*inputs)
    out.square().mean().backward()
    return [out.detach(), *(p.grad for p in model.parameters())]


def _products(ir: str) -> int:
    return ir.count("aten.mm ")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(("steps", "batch", "hidden"), [(2, 3, 8), (7, 2, 16), (20, 4, 12)])
def test_lstm_training_matches_eager(
    steps: int, batch: int, hidden: int, dtype: torch.dtype
) -> None:
    torch.manual_seed(steps)
    model = LSTMLoop(hidden, hidden, steps).to(dtype)
    inputs = tuple(
        torch.randn(*s, dtype=dtype)
        for s in ((steps, batch, hidden), (batch, hidden), (batch, hidden))
    )
    want = _grads(model, model, inputs)
    f = fusec.compile(model)
    got = _grads(model, f, inputs)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, **TOL[dtype])
    forward, backward = f.compiled_graphs
    # The forward: one product for every step's input projection, one per step
    # for the recurrence (the first step's `hx @ w_hh^T` included).
    assert _products(forward.function.ir()) == steps + 1
    # The backward: one per step for the recurrence's gradient (none for the
    # first step's `hx`, which needs no gradient), one per weight for the sum.
    assert _products(backward.function.ir()) == (steps - 1) + 2
    assert "aten.cat" in backward.function.ir()


@pytest.mark.parametrize("steps", [1, 5, 16])
def test_lstm_inference_matches_eager(steps: int) -> None:
    torch.manual_seed(steps)
    model = LSTMLoop(8, 8, steps)
    inputs = (torch.randn(steps, 3, 8), torch.randn(3, 8), torch.randn(3, 8))
    f = fusec.compile(model)
    with torch.no_grad():
        got, want = f(*inputs), model(*inputs)
    torch.testing.assert_close(got, want, **TOL[torch.float32])
    # One product for every step's input projection, one per step for the recurrence.
    assert _products(f.ir()) == steps + 1


def shared_and_other_uses(
    xs: torch.Tensor, w: torch.Tensor, v: torch.Tensor, a: torch.Tensor, b: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """Products that must not be merged: a term also used on its own, and
    products of other shapes; and ones that must: `xs[0] @ w`, `xs[2] @ w`."""
    p = xs[0] @ w
    q = xs[2] @ w
    used_elsewhere = a.t() @ b
    total = used_elsewhere + a.t() @ b.flip(0)
    other_shape = (a[:2].t() @ b[:2]).sum() + (a.t() @ b)[0, 0]
    return p + q.sin(), total, used_elsewhere * 2, other_shape, v @ w


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_mixed_products_match_eager(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    args = [torch.randn(*s, dtype=dtype) for s in ((3, 4, 16), (16, 64), (2, 16), (4, 64), (4, 32))]
    f = fusec.compile(shared_and_other_uses)
    for g, w in zip(f(*args), shared_and_other_uses(*args), strict=True):
        torch.testing.assert_close(g, w, **TOL[dtype])
