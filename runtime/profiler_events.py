"""Fused kernel launches as named `torch.profiler` events.

While a profiler runs (`torch.profiler.profile`, `torch.autograd.profiler`,
Kineto started any other way), each launch of a fused kernel is one CPU event
named for its group's ops, in order, without repeats, with the kernel's index
in its program (the order the program launches them in) as a suffix:

    group[sigmoid,mul,add,mul]      ->  fusec_sigmoid_mul_add_1
    group[mul,where,amax,sub,exp,sum,div,to_dtype,...]
                                    ->  fusec_mul_where_amax_sub_exp_sum_etc_0

and the group's canonical key (what `fusec.explain` shows, shared by
alpha-equivalent groups and their kernel) in the event's args as `group`
(Kineto writes an event's args to the Chrome trace when `record_shapes=True`).

The host program checks `enabled()` once per call, in its generated run, and
only a call that finds a profiler running takes the run that wraps each launch
(`HostProgram.run_profiled`); the events come from that one run whatever the
kernel's device (a `CudaKernel` is called there as a `CpuKernel` is).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import torch

enabled: Callable[[], bool] = torch._C._autograd._profiler_enabled
"""Whether a profiler is recording on this thread: one C call (about 40 ns)."""

_MAX_OPS_CHARS = 40
"""How long the ops part of a name grows before the rest are `etc`."""

_NOT_OPS = frozenset({"arith.constant"})
"""Body ops that compute nothing of their own (a scalar the group folds in)."""

_Fast = getattr(getattr(torch._C, "_profiler", None), "_RecordFunctionFast", None)


def event_name(step_name: str, index: int) -> str:
    """The event name of kernel step `step_name` (`group[sigmoid,mul]`, as
    `fusec.runtime.program` names group steps) launched `index`-th."""
    inner = step_name.partition("[")[2].rpartition("]")[0] or step_name
    ops: list[str] = []
    for op in inner.split(","):
        if op.strip() in _NOT_OPS:
            continue
        word = re.sub(r"\W+", "_", op.strip().rpartition(".")[2]).strip("_")
        if word and word not in ops:
            ops.append(word)
    kept: list[str] = []
    for op in ops:
        if kept and len("_".join([*kept, op])) > _MAX_OPS_CHARS:
            kept.append("etc")
            break
        kept.append(op)
    return "_".join(["fusec", *kept, str(index)])


def event(name: str, key: str | None) -> Callable[[], Any]:
    """A new context manager per call recording event `name` (with `key` in its
    args, when known)."""
    if _Fast is not None:
        # Its arguments must be a tuple and a dict: anything else aborts the
        # process (a C++ check that terminates), so they are fixed here.
        return functools.partial(_Fast, name, (), {"group": key} if key else {})
    from torch.autograd.profiler import record_function

    return functools.partial(record_function, name, key)
