"""Kernels per call of `torch.compile(m, backend="fusec")`: the reference the other
entry points (`torch.export` + `fusec.compile`, `fusec.compile` itself) must meet."""

from __future__ import annotations

from typing import Any

import fusec
import torch
from fusec.api import training


def torch_compile_kernels(m: Any, *x: Any) -> int:
    """Kernels per call of `torch.compile(m, backend="fusec")`'s forward (Dynamo's
    graphs; AOTAutograd's forward graphs among them where autograd records the
    call), after checking two calls against `m`'s own results."""
    old = fusec.dynamo_graphs()  # held: `dynamo_graphs` drops the dead ones
    f = torch.compile(m, backend="fusec")
    for _ in range(2):
        torch.testing.assert_close(f(*x), m(*x))
    backward = [g.function for g in training.compiled_graphs() if g.kind == "backward"]
    new = [g for g in fusec.dynamo_graphs() if not any(g is o for o in old + backward)]
    return sum(g.launches_per_call for g in new)
