"""Kernels per call of `torch.compile(m, backend="fusec")`: the reference the other
entry points (`torch.export` + `fusec.compile`, `fusec.compile` itself) must meet;
the top-level ATen calls of a call (`top_level_aten`); and the kernels a call
launches that compute something (`compute_kernels`), copy kernels left out."""

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


def torch_compile_compute_kernels(m: Any, *x: Any) -> int:
    """`compute_kernels` of a call of `torch.compile(m, backend="fusec")` (its
    forward where autograd records the call), after checking two calls
    against `m`'s own results."""
    f = torch.compile(m, backend="fusec")
    for _ in range(2):
        torch.testing.assert_close(f(*x), m(*x))
    return compute_kernels(lambda: f(*x))


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


COPY_OPS = frozenset(
    {"to", "to_dtype", "cat", "view", "reshape", "transpose", "permute", "expand",
     "squeeze", "unsqueeze", "slice", "narrow", "chunk", "split"}
)  # fmt: skip
"""Ops of a kernel that only moves or converts data: a copy kernel."""


def compute_kernels(fn: Callable[[], Any]) -> int:
    """Fused kernels `fn` launches, copy kernels left out (those whose ops, as the
    profiler events name them, `fusec_to_3`, are all in `COPY_OPS`).

    Which copies a graph holds depends on the graph's form, not on fusion: the
    graphs AOTAutograd hands `torch.compile`'s backend copy attention outputs
    and gradients to contiguous memory, where an exported program or Dynamo's
    torch-level graph has other copies or none, and those graphs make their lone
    copies kernels (`fuse{lone-copies=true}`). Entry points compared for the
    same fusion compare these counts."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    n = 0
    for event in prof.events():
        if not event.name.startswith("fusec_"):
            continue
        ops = event.name.split("_")[1:-1]
        words = set("_".join(ops).replace("to_dtype", "to").split("_"))
        if not words <= COPY_OPS:
            n += 1
    return n
