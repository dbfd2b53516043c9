"""A host program run step by step under a clock, for `fusec.explain(profile=True)`.

The ordinary call runs the program's generated function (`HostProgram.generated_run`),
which has no clock in it; this is a second, slower run loop over the same steps
and slots, built only when a profile is asked for, so the normal call path pays
nothing for it. Each top-level step is timed on its own:

    func.func @f(%x, %w) {
      %mm = aten.mm %x, %w                 step 0 torch   12.1 us
      %g = fusion.group (%mm) {...}        step 1 kernel   3.4 us
      func.return %g                       total          16.0 us (0.5 us between steps)
    }

An `scf.if` step (a guarded group) is timed as a whole: its then-region's
kernel, or its else-region's PyTorch ops where the guard failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fusec.runtime.program import HostProgram


@dataclass(frozen=True)
class TimedRun:
    """One run: each top-level step's seconds (in step order) and the whole run's."""

    results: list[Any]
    steps: list[float]
    total: float


def device_sync(inputs: Sequence[Any]) -> Callable[[], None]:
    """What waits for queued GPU work: kernels launch asynchronously, so a step's
    time only means something once the device has finished it."""
    import torch

    if any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs):
        return torch.cuda.synchronize
    return _nothing


def _nothing() -> None:
    return None


def timed_run(
    program: HostProgram, args: Sequence[Any], sync: Callable[[], None] = _nothing
) -> TimedRun:
    """Run `program` on `args` as its generated function would (same steps, same
    frees), timing each top-level step; the results are the program's."""
    clock = time.perf_counter
    slots: list[Any] = [None] * program.n_slots
    for slot, value in zip(program.arg_slots, args, strict=True):
        slots[slot] = value
    for slot, value in program.consts.items():
        slots[slot] = value
    times: list[float] = []
    sync()
    start = clock()
    for step in program.steps:
        xs = [slots[i] for i in step.ins]
        before = clock()
        outs = step.fn(*xs)
        sync()
        times.append(clock() - before)
        for slot, value in zip(step.outs, outs, strict=True):
            slots[slot] = value
        for slot in step.free:
            slots[slot] = None
    results = [slots[i] for i in program.out_slots]
    sync()
    return TimedRun(results, times, clock() - start)
