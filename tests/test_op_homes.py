"""One home per op (issue 32): every pointwise op of the `aten` dialect has an
import entry (torch-level and ATen-level), a CPU and a GPU scalar handler, and a
PyTorch step for the host, each found by op class. A new pointwise op fails here
until all of them exist (docs/DESIGN.md, "Adding a pointwise op")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from fusec.codegen.torch_ops import TORCH_STEPS
from fusec.dialects import aten
from fusec.frontend.aten_import import import_aten
from fusec.frontend.importer import import_fx, trace
from fusec.passes.lowering.scalar_ops import POINTWISE_METHODS, CpuScalarOps
from fusec.passes.lowering.scalar_ops_nvptx import NvptxScalarOps
from fusec.runtime.torch_steps import STEP_KINDS, torch_function

POINTWISE = [cls for cls in aten.ATEN_OPS if cls.has_trait(aten.Pointwise)]


def _x() -> torch.Tensor:
    return torch.randn(4, 3)


def _pair() -> list[torch.Tensor]:
    return [torch.randn(4, 3), torch.randn(4, 3)]


EXAMPLES: dict[type, tuple[Callable[..., Any], Callable[[], list[torch.Tensor]]]] = {
    aten.NegOp: (lambda x: -x, lambda: [_x()]),
    aten.AbsOp: (lambda x: x.abs(), lambda: [_x()]),
    aten.ReluOp: (lambda x: torch.relu(x), lambda: [_x()]),
    aten.ExpOp: (lambda x: x.exp(), lambda: [_x()]),
    aten.Expm1Op: (lambda x: torch.expm1(x), lambda: [_x()]),
    aten.LogOp: (lambda x: x.log(), lambda: [_x()]),
    aten.Log1pOp: (lambda x: torch.log1p(x), lambda: [_x()]),
    aten.SqrtOp: (lambda x: x.sqrt(), lambda: [_x()]),
    aten.RsqrtOp: (lambda x: x.rsqrt(), lambda: [_x()]),
    aten.ReciprocalOp: (lambda x: x.reciprocal(), lambda: [_x()]),
    aten.SigmoidOp: (lambda x: torch.sigmoid(x), lambda: [_x()]),
    aten.TanhOp: (lambda x: torch.tanh(x), lambda: [_x()]),
    aten.SiluOp: (lambda x: F.silu(x), lambda: [_x()]),
    aten.ErfOp: (lambda x: torch.erf(x), lambda: [_x()]),
    aten.SinOp: (lambda x: x.sin(), lambda: [_x()]),
    aten.CosOp: (lambda x: x.cos(), lambda: [_x()]),
    aten.LogicalNotOp: (lambda x: torch.logical_not(x), lambda: [_x() > 0]),
    aten.LeakyReluOp: (lambda x: F.leaky_relu(x, 0.2), lambda: [_x()]),
    aten.GeluOp: (lambda x: F.gelu(x), lambda: [_x()]),
    aten.ClampOp: (lambda x: torch.clamp(x, -1.0, 1.0), lambda: [_x()]),
    aten.ToOp: (lambda x: x.to(torch.float64), lambda: [_x()]),
    aten.AddOp: (lambda a, b: a + b, _pair),
    aten.SubOp: (lambda a, b: a - b, _pair),
    aten.DivOp: (lambda a, b: a / b, _pair),
    aten.MulOp: (lambda a, b: a * b, _pair),
    aten.PowOp: (lambda a, b: torch.pow(a, b), _pair),
    aten.MaximumOp: (lambda a, b: torch.maximum(a, b), _pair),
    aten.MinimumOp: (lambda a, b: torch.minimum(a, b), _pair),
    aten.EqOp: (lambda a, b: a == b, _pair),
    aten.NeOp: (lambda a, b: a != b, _pair),
    aten.LtOp: (lambda a, b: a < b, _pair),
    aten.LeOp: (lambda a, b: a <= b, _pair),
    aten.GtOp: (lambda a, b: a > b, _pair),
    aten.GeOp: (lambda a, b: a >= b, _pair),
    aten.LogicalAndOp: (lambda a, b: torch.logical_and(a, b), _pair),
    aten.LogicalOrOp: (lambda a, b: torch.logical_or(a, b), _pair),
    aten.LogicalXorOp: (lambda a, b: torch.logical_xor(a, b), _pair),
    aten.WhereOp: (lambda a, b: torch.where(a > 0, a, b), _pair),
    aten.FullLikeOp: (lambda x: torch.full_like(x, 2.0), lambda: [_x()]),
}
"""Per pointwise op class, a PyTorch function that imports as it, and its inputs."""

IDS = [cls.name for cls in POINTWISE]


def test_every_pointwise_op_has_an_example():
    assert sorted(c.name for c in POINTWISE) == sorted(c.name for c in EXAMPLES)


def _classes(module: Any) -> set[type]:
    return {type(op) for op in module.walk()}


def _fx_fn(fn: Callable[..., Any], n: int) -> Callable[..., Any]:
    # torch.fx traces a function of named parameters, not a lambda of *args.
    return (lambda x: fn(x)) if n == 1 else (lambda a, b: fn(a, b))


@pytest.mark.parametrize("cls", POINTWISE, ids=IDS)
def test_torch_level_import_entry(cls):
    fn, make = EXAMPLES[cls]
    inputs = make()
    imported = import_fx(trace(_fx_fn(fn, len(inputs))), inputs)
    assert cls in _classes(imported.module), str(imported.module)


@pytest.mark.parametrize("cls", POINTWISE, ids=IDS)
def test_aten_level_import_entry(cls):
    from torch.fx.experimental.proxy_tensor import make_fx

    fn, make = EXAMPLES[cls]
    inputs = make()
    imported = import_aten(make_fx(fn)(*inputs), inputs)
    assert cls in _classes(imported.module), str(imported.module)


@pytest.mark.parametrize("cls", POINTWISE, ids=IDS)
def test_cpu_and_gpu_scalar_handlers(cls):
    method = POINTWISE_METHODS[cls]
    assert method in vars(CpuScalarOps), f"CpuScalarOps has no method {method!r}"
    # The GPU one is the CPU one unless NvptxScalarOps overrides it.
    assert callable(getattr(NvptxScalarOps, method))


def test_nvptx_overrides_only_what_the_cpu_handler_has():
    """A misspelt override would silently leave CUDA's semantics unused."""
    own = {n for n, v in vars(NvptxScalarOps).items() if callable(v) and not n.startswith("__")}
    assert own, "NvptxScalarOps overrides nothing"
    assert own <= set(vars(CpuScalarOps)), own - set(vars(CpuScalarOps))


@pytest.mark.parametrize("cls", POINTWISE, ids=IDS)
def test_pytorch_step(cls):
    step = TORCH_STEPS[cls]
    assert step.kind in STEP_KINDS
    for name in (step.fn, step.swapped):
        if name is not None:
            assert callable(torch_function(name))


def test_every_step_names_a_known_kind_and_callable():
    for cls, step in TORCH_STEPS.items():
        assert step.kind in STEP_KINDS, cls.name
        for name in (step.fn, step.swapped):
            if name is not None:
                torch_function(name)
