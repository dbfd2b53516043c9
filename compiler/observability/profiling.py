"""Where a compiled call's time goes: `fusec.explain(fn, *inputs, profile=True)`.

The graph's host program runs `runs` times under a clock (`fusec.runtime.step_timing`,
a run loop of its own: the ordinary call path is untouched), interleaved with as
many ordinary calls timed from outside. Each fused kernel and each op run through
PyTorch gets a row; `host` is the time between them (the run loop, the guards);
`total` is their sum and `call` the ordinary call's own time, measured apart, so
`total / call` says how far the breakdown can be trusted:

    profile (mean of the 10 fastest of 20 runs):
      op18      PyTorch              27.3 us   9.7%   aten.matmul %matmul (gpt2_block.py:29)
      group_1   kernel               16.3 us   5.8%   mul,where,amax,sub,... (gpt2_block.py:30, ...)
      ...
      host      between steps        70.5 us  25.1%
      kernels 56.6 us, PyTorch ops 153.9 us, host 70.5 us: total 280.9 us; an
      ordinary call 293.9 us (the breakdown is 95.6% of it)

Rows are matched to the report's groups and ops by order: the program's
top-level steps are the function's ops in IR order, as the report's are.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fusec.api.compiled import CompiledFunction
    from fusec.observability.explanation import GraphReport


class Unprofiled(ValueError):
    """The call ran no host program (eagerly, or a training call): nothing to time."""


@dataclass(frozen=True)
class ProfileRow:
    """One fused kernel or one op run through PyTorch (or a group run through
    PyTorch because it had no kernel or its guard failed)."""

    id: str
    """The report's group name (`group_3`) or op id (`op12`)."""
    kind: str
    """"kernel", "PyTorch" (an op outside every group) or "group via PyTorch"."""
    label: str
    seconds: float
    share: float = 0.0
    """Of `GraphProfile.total`."""


@dataclass
class GraphProfile:
    """A graph's time per call, averaged over the fastest half of the runs."""

    rows: list[ProfileRow]
    """Sorted, slowest first."""
    host: float
    """Seconds between the steps (the run loop, guards) per call."""
    total: float
    """Seconds per instrumented call: the rows and `host` add up to it."""
    call: float
    """Seconds per ordinary (uninstrumented) call, timed apart."""
    runs: int
    kept: int
    notes: list[str] = field(default_factory=list)

    @property
    def kernel_seconds(self) -> float:
        return sum(r.seconds for r in self.rows if r.kind == "kernel")

    @property
    def torch_seconds(self) -> float:
        return sum(r.seconds for r in self.rows if r.kind != "kernel")

    def share_of(self, ident: str) -> float:
        return next((r.share for r in self.rows if r.id == ident), 0.0)

    def lines(self) -> list[str]:
        out = [f"  profile (mean of the {self.kept} fastest of {self.runs} runs):"]
        for r in self.rows:
            out.append(
                f"    {r.id:9} {r.kind:17} {_us(r.seconds):>10} {100 * r.share:5.1f}%   {r.label}"
            )
        host_share = self.host / self.total if self.total else 0.0
        out.append(
            f"    {'host':9} {'between steps':17} {_us(self.host):>10} {100 * host_share:5.1f}%"
        )
        ratio = self.total / self.call if self.call else 0.0
        out.append(
            f"    kernels {_us(self.kernel_seconds)}, PyTorch ops {_us(self.torch_seconds)}, "
            f"host {_us(self.host)}: total {_us(self.total)}; an ordinary call "
            f"{_us(self.call)} (the breakdown is {100 * ratio:.1f}% of it)"
        )
        out += [f"    note: {n}" for n in self.notes]
        return out


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"


def profile_graph(
    fn: CompiledFunction, args: Sequence[Any], report: GraphReport, runs: int = 20
) -> GraphProfile:
    """Time `fn`'s last specialization on `args` (`fn` was just called on them),
    step by step, and attribute each step to `report`'s groups and ops."""
    from fusec.runtime.step_timing import device_sync, timed_run

    spec = fn.last
    if spec is None or spec.program is None or spec.training is not None:
        raise Unprofiled(
            "the call ran no host program of fusec's "
            f"({report.eager_reason or 'a training call'}); nothing to time"
        )
    bound = fn._bind(args, {})
    call_args = tuple(bound) if bound is not None else tuple(args)
    inputs = (
        call_args
        if spec.args_are_inputs == len(call_args)
        else [g(call_args) for g in spec.getters]
    )
    program = spec.program
    sync = device_sync(inputs)
    owners = _step_owners(program, report)
    runs = max(2, runs)
    for _ in range(3):  # warm up: caches, lazy kernel loads, the allocator
        timed_run(program, inputs, sync)
        fn(*args)
    timed: list[Any] = []
    plain: list[float] = []
    clock = time.perf_counter
    for _ in range(runs):
        timed.append(timed_run(program, inputs, sync))
        sync()
        start = clock()
        fn(*args)
        sync()
        plain.append(clock() - start)
    # The fastest half: a loaded machine's stalls are not the graph's time.
    kept = sorted(timed, key=lambda t: t.total)[: max(1, runs // 2)]
    steps = [statistics.fmean(t.steps[i] for t in kept) for i in range(len(program.steps))]
    total = statistics.fmean(t.total for t in kept)
    call = statistics.fmean(sorted(plain)[: max(1, runs // 2)])
    per_owner: dict[str, float] = {}
    for i, owner in enumerate(owners):
        if owner is not None:
            per_owner[owner] = per_owner.get(owner, 0.0) + steps[i]
    stepped = sum(per_owner.values())
    rows = [
        ProfileRow(ident, *_describe(report, ident), seconds, seconds / total if total else 0.0)
        for ident, seconds in per_owner.items()
    ]
    rows.sort(key=lambda r: r.seconds, reverse=True)
    notes = []
    if any(getattr(x, "is_cuda", False) for x in inputs):
        notes.append("CUDA: the device was synchronized after every step")
    return GraphProfile(rows, max(0.0, total - stepped), total, call, runs, len(kept), notes)


def _step_owners(program: Any, report: GraphReport) -> list[str | None]:
    """The report's group name or op id of each top-level step (None for a
    guard: host time), by order: kernel and group steps are the report's groups,
    an if step on a guard its guarded groups, any other step its op outside
    every group, by `Step.at` (the ops a dropped view step stood for have no
    step and no time)."""
    groups = iter(g.name for g in report.groups)
    at = {o.at: o.id for o in report.unfused}
    owners: list[str | None] = []
    guards = {s.outs[0] for s in program.steps if s.kind == "guard"}
    for step in program.steps:
        if step.kind == "guard":
            owners.append(None)
        elif step.kind in ("kernel", "group"):
            owners.append(next(groups, None))
        elif step.kind == "if" and step.ins and step.ins[0] in guards:
            inner = [s for s in step.branches[0].steps if s.kind in ("kernel", "group")]
            # One step, one time: it goes to the first of its groups.
            names = [next(groups, None) for _ in inner]
            owners.append(names[0] if names else None)
        else:
            owners.append(at.get(step.at))
    return owners


def _describe(report: GraphReport, ident: str) -> tuple[str, str]:
    """A row's kind and label."""
    for g in report.groups:
        if g.name == ident:
            ops = ",".join(o.name.removeprefix("aten.") for o in g.ops)
            lines = ", ".join(dict.fromkeys(str(o.source) for o in g.ops if o.source))
            where = f" ({lines})" if lines else ""
            if g.runs_as_kernel and g.guard_failure is None:
                return "kernel", f"{ops}{where}"
            return "group via PyTorch", f"{ops}{where}"
    for o in report.unfused:
        if o.id == ident:
            return "PyTorch", o.label()
    return "PyTorch", ident
