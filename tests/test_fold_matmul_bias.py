"""`fold-matmul-bias` end to end: bias adds nothing fused with run inside their
matrix product again, and results still match eager."""

from __future__ import annotations

import copy
import re

import fusec
import pytest
import torch
from model_cases import assert_same
from torch import nn
from training_models import make_gpt2, make_mlp


class Projection(nn.Module):
    """A linear whose result is split (nothing pointwise to fuse its bias with)."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return self.qkv(x).split(16, dim=-1)


def _products_with_bias(ir: str) -> int:
    """`aten.linear` ops with three operands plus `aten.addmm` ops in `ir`."""
    linear = re.findall(r"aten\.linear %[^,\s]+, %[^,\s]+, %[^\s:]+ :", ir)
    return len(linear) + ir.count("aten.addmm")


@pytest.mark.parametrize("shape", [(4, 16), (2, 3, 16)])
def test_split_projection_keeps_its_bias_in_the_product(shape: tuple[int, ...]) -> None:
    torch.manual_seed(0)
    model = Projection()
    x = torch.randn(*shape)
    f = fusec.compile(model)
    with torch.no_grad():
        assert_same(f(x), model(x))
        ir = f.ir()
    assert _products_with_bias(ir) == 1, ir
    assert "aten.add " not in ir, ir


def test_mlp_last_layer_folds_and_the_others_fuse() -> None:
    torch.manual_seed(0)
    model, (x,), _ = make_mlp(batch=8)
    f = fusec.compile(model)
    with torch.no_grad():
        assert_same(f(x), model(x))
        ir = f.ir()
    assert _products_with_bias(ir) == 1, ir  # the last layer; the others fuse with relu
    assert f.launches_per_call == 2


@pytest.mark.parametrize("make", [make_mlp, make_gpt2], ids=["mlp", "gpt2"])
def test_training_with_folded_biases_matches_eager(make) -> None:
    torch.manual_seed(0)
    model, inputs, loss_fn = make()
    compiled = torch.compile(copy.deepcopy(model), backend="fusec")
    for m, fwd in ((model, model), (compiled, compiled)):
        m.zero_grad(set_to_none=True)
        loss_fn(fwd(*inputs)).backward()
    torch._dynamo.reset()
    for p, q in zip(model.parameters(), compiled.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)
