"""Kernels per call of `torch.compile(m, backend="fusec")`: the reference the other
entry points (`torch.export` + `fusec.compile`, `fusec.compile` itself) must meet;
and the top-level ATen calls of a call (`top_level_aten`)."""

from __future__ import annotations

import collections
from collections.abc import Callable
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


def top_level_aten(fn: Callable[[], Any]) -> collections.Counter[str]:
    """ATen calls `fn` makes that no other ATen call made."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    counts: collections.Counter[str] = collections.Counter()
    for event in prof.events():
        if not event.name.startswith("aten::"):
            continue
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        if parent is None:
            counts[event.name] += 1
    return counts
