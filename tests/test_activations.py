"""Activations and rounding ops written out as pointwise ops
(`fusec.frontend.import_activations`): one kernel with their neighbours, eager's values
on NaN, infinities, signed zeros and halves, at the torch level (functions,
methods, modules, in-place forms) and the ATen level (`torch.export`)."""

from __future__ import annotations

import fusec
import pytest
import torch
import torch.nn.functional as F
from torch import nn

FNS = {
    "hardtanh": lambda x: F.hardtanh(x, -2.0, 3.0) * 2,
    "relu6": lambda x: F.relu6(x) + 1,
    "hardsigmoid": lambda x: F.hardsigmoid(x) * 2,
    "hardswish": lambda x: F.hardswish(x) + 1,
    "elu": lambda x: F.elu(x, 0.7) * 2,
    "selu": lambda x: torch.selu(x) * 2,
    "celu": lambda x: F.celu(x, 1.3) * 2,
    "softplus": lambda x: F.softplus(x, 2.0, 5.0) * 2,
    "softplus_default": lambda x: F.softplus(x) * 2,
    "mish": lambda x: F.mish(x) * 2,
    "logsigmoid": lambda x: F.logsigmoid(x) * 2,
    "trunc": lambda x: torch.trunc(x) * 3,
    "floor": lambda x: torch.floor(x) * 3,
    "ceil": lambda x: x.ceil() * 3,
    "frac": lambda x: x.frac() * 3,
    "clamp_min": lambda x: torch.clamp_min(x, 0.5) * 2,
    "clamp_max": lambda x: x.clamp_max(0.5) * 2,
    "in_place": lambda x: F.relu6(x * 2, inplace=True) + F.hardswish(x + 1, inplace=True),
}


def _inputs(dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1000, generator=g) * 4
    specials = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 2.5, -2.5, 0.5, -0.5, -3.0, 3.0, 25.0]
    x[: len(specials)] = torch.tensor(specials)
    return x.to(dtype)


def _check(got: torch.Tensor, want: torch.Tensor) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype in (torch.float16, torch.bfloat16):  # fused code rounds once
        torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2, equal_nan=True)
        return
    torch.testing.assert_close(got, want, rtol=2e-6, atol=1e-6, equal_nan=True)
    real = ~want.isnan()
    assert torch.equal(torch.signbit(got[real]), torch.signbit(want[real]))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("name", list(FNS))
def test_written_out_forms_match_eager_in_one_kernel(name: str, dtype: torch.dtype) -> None:
    fn = FNS[name]
    x = _inputs(dtype)
    f = fusec.compile(fn)
    _check(f(x.clone()), fn(x.clone()))
    assert f.launches_per_call == 1


def test_modules_fuse_as_one_chain() -> None:
    chain = nn.Sequential(
        nn.Hardswish(), nn.ReLU6(), nn.ELU(0.5), nn.Softplus(1.5), nn.Mish(),
        nn.Hardtanh(-0.5, 0.5), nn.LogSigmoid(), nn.SELU(), nn.CELU(0.8), nn.Hardsigmoid(),
    )  # fmt: skip
    x = _inputs(torch.float32)
    f = fusec.compile(chain)
    _check(f(x), chain(x))
    assert f.launches_per_call == 1


def test_integer_inputs_stay_whole() -> None:
    """`torch.floor` of an int tensor is the identity, `F.relu6` of one clamps in
    integers: the written-out float forms are not used for them."""
    x = torch.arange(-8, 8)
    for fn in (lambda v: torch.floor(v) + 1, lambda v: F.relu6(v) * 2, lambda v: torch.trunc(v) - 1):
        f = fusec.compile(fn)
        got, want = f(x), fn(x)
        assert got.dtype == want.dtype and torch.equal(got, want)


def test_aten_level_overloads_fuse() -> None:
    """`torch.export` keeps `aten.hardswish`, `aten.elu`, `aten.softplus`, ...:
    the same written-out forms."""
    model = nn.Sequential(
        nn.Linear(16, 16), nn.Hardswish(), nn.Linear(16, 16), nn.Mish(),
        nn.Linear(16, 16), nn.ELU(), nn.Softplus(), nn.Hardsigmoid(),
    )  # fmt: skip
    x = torch.randn(8, 16)
    program = torch.export.export(model, (x,))
    ops = {str(n.target) for n in program.graph.nodes if n.op == "call_function"}
    assert {"aten.hardswish.default", "aten.mish.default", "aten.elu.default"} <= ops
    f = fusec.compile(program)
    torch.testing.assert_close(f(x), model(x))
    assert f.launches_per_call == 3  # each linear's output through its activation


ACTIVATIONS = {
    "hardswish": lambda: nn.Hardswish(),
    "hardsigmoid": lambda: nn.Hardsigmoid(),
    "hardtanh": lambda: nn.Hardtanh(-0.5, 0.7),
    "relu6": lambda: nn.ReLU6(),
    "elu": lambda: nn.ELU(0.6),
    "selu": lambda: nn.SELU(),
    "celu": lambda: nn.CELU(0.7),
    "softplus": lambda: nn.Softplus(2.0, 3.0),
    "mish": lambda: nn.Mish(),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_backward_ops_fuse_in_training(name: str) -> None:
    """AOTAutograd's backward graph keeps `aten.<act>_backward` (not decomposed:
    a decomposition's `aten.scalar_tensor` zero ran opaque), which imports as
    pointwise ops with ATen's CPU formula: gradients as eager's, one kernel
    (and one for the last layer's bias gradient)."""
    import copy

    from fusec.api.training import clear_compiled_graphs, compiled_graphs

    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(16, 16), ACTIVATIONS[name](), nn.Linear(16, 16))
    model = copy.deepcopy(eager)
    torch._dynamo.reset()
    clear_compiled_graphs()
    compiled = torch.compile(model, backend="fusec")
    x = torch.randn(32, 16) * 3
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    a, b = eager(xa), compiled(xb)
    (a * a).sum().backward()
    (b * b).sum().backward()
    torch.testing.assert_close(b, a)
    torch.testing.assert_close(xb.grad, xa.grad, rtol=1e-4, atol=1e-5)
    for p, q in zip(eager.parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5)
    (backward,) = [g for g in compiled_graphs() if g.kind == "backward"]
    assert any(str(n.target).endswith("_backward.default") for n in backward.gm.graph.nodes)
    # The activation's backward (with the first layer's bias gradient), and the
    # last layer's bias gradient, a column sum of the incoming gradient: a kernel
    # of its own (`fuse{lone-reductions}`).
    assert backward.launches_per_call == 2
