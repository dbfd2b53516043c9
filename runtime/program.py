"""The host program: a compiled `func.func` as a flat list of steps over slots.

Building it (`fusec.codegen.host_program.build_program`) walks the IR once;
running it walks a Python list. Every SSA value
gets a slot index, constants are preloaded, and each step is a callable with its
operand and result slots resolved ahead of time:

    func.func @f(%x, %w) {                         slots: 0=%x 1=%w 2=%c 3=%mm 4=%g
      %c = arith.constant 2.0 : f64                 consts: {2: 2.0}
      %mm = aten.mm %x, %w                          step torch.mm         (0, 1) -> (3,)
      %g = fusion.group (%a = %mm, %b = %c) {...}   step kernel "group_0" (3, 2) -> (4,)
      func.return %g                                outputs: (4,)
    }

A `fusion.group` runs as its compiled kernel when there is one, and otherwise as a
sub-program of its body through PyTorch; everything else runs through PyTorch
(`fusec.runtime.torch_steps`), `aten.opaque` through its original fx target.

Guarded groups (the `guard` pass) run as the IR says: `fusion.guard` is a check
of each tensor's dtype, rank, size-1 dims, layout and device against values
precomputed from the IR (attribute reads only), and `scf.if` runs its then- or
else-region as a sub-program over the values the region uses from outside:

    %ok = fusion.guard (%a : ..., %b : ...)       step guard  (0, 1) -> (5,)
    %r = scf.if %ok { fusion.group ... }          step if     (5, 0, 1) -> (6,)
         else { aten.add ... }                      then: kernel, else: torch ops

`launches` counts the kernels of then-regions; a failed guard is counted in
`guard_failures` (and logged on the `FUSEC_LOGS=guards` channel with the input
and the reason; its last failure is in `failed_guards`), and
`last_launches` is what the last run actually launched.

Each step keeps its `recipe`, what it was made from (an op's `OpInfo`, a guard's
checks, a kernel's group), so `fusec.runtime.program_data` can write a program as
data and make it again, in another process, with no IR. This module reads no
IR and imports no xDSL (the runtime imports only the runtime and the backends);
what reads IR is in `fusec.codegen.host_program`.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from fusec.runtime import host_code

log = logging.getLogger("fusec")
guard_log = logging.getLogger("fusec.guards")


class UnsupportedProgram(Exception):
    """The IR holds an op the host program cannot run."""


@dataclass(frozen=True)
class Step:
    fn: Callable[..., Sequence[Any]]
    ins: tuple[int, ...]
    outs: tuple[int, ...]
    free: tuple[int, ...]
    kind: str
    """"torch", "opaque", "kernel", "group" (a group run through PyTorch), "guard"
    or "if"."""
    name: str
    branches: tuple[HostProgram, ...] = ()
    """The then- and else-programs of an "if" step."""
    recipe: Any = None
    """What the step was made from, for `fusec.runtime.program_data`: ("torch",
    OpInfo), ("opaque", node name), ("kernel", group op, its body's program
    thunk), ("group", body program), ("guard", checks, name), ("if",)."""
    at: int = -1
    """The index of the op it runs among its block's ops (-1: not known): which
    op a step is, now that steps may be dropped (views made from a root's
    sizes and strides need no step of their own)."""
    deferred: DeferredProgram | None = None
    """An "if" step's else-program not made yet (`branches` then holds only its
    then-program): a program loaded from the warm-start cache makes it when a
    guard first fails."""

    def programs(self) -> tuple[HostProgram, ...]:
        """The then- and else-programs of an "if" step (making a deferred one)."""
        if self.deferred is None:
            return self.branches
        return (*self.branches, self.deferred.get())


class DeferredProgram:
    """An else-program made on first use, from `make`: in a program loaded from
    the warm-start cache, an `scf.if`'s else-region (its group's ops through
    PyTorch) runs only when its guard fails, and making every one of them was
    most of a warm start's loading (the LSTM loop: 2,606 of 3,129 steps).
    `fallback_groups` is what the made program's will be."""

    def __init__(self, make: Callable[[], HostProgram], fallback_groups: list[str]):
        self._make: Callable[[], HostProgram] | None = make
        self._program: HostProgram | None = None
        self.fallback_groups = fallback_groups

    def get(self) -> HostProgram:
        program = self._program
        if program is None:
            make = self._make
            if make is None:  # another thread made it meanwhile (`_program` is set first)
                program = self._program
            else:
                program = self._program = make()
                self._make = None
        assert program is not None
        return program


FUSED_TORCH_OPS = frozenset({"aten.scaled_dot_product_attention"})
"""Ops a pass made of several written-out ones that PyTorch runs as one fused
kernel (`raise-attention`): a program with one does better than the function it
was compiled from even where it launches no kernel of its own."""


@dataclass
class HostProgram:
    """A runnable program; `launches` is the number of fused kernels one run launches."""

    n_slots: int
    arg_slots: tuple[int, ...]
    consts: dict[int, Any]
    steps: list[Step]
    out_slots: tuple[int, ...]
    launches: int = 0
    fallback_groups: list[str] = field(default_factory=list)
    guard_failures: int = 0
    """Failed `fusion.guard` checks over all runs (each ran its fallback)."""
    last_launches: int = 0
    """Kernels the last run launched: `launches` less those whose guard failed."""
    skipped_launches: int = 0
    """Kernels not launched over all runs because their guard failed."""
    failed_guards: dict[Any, str] = field(default_factory=dict)
    """The last failure of each `fusion.guard` that failed (for `fusec.explain`),
    by its op (by its step name in a program loaded from the warm-start cache)."""
    guard_names: dict[Any, str] = field(default_factory=dict)
    """How the guards log names a guard's group (e.g. with the user's lines);
    by default its ops, `group[sigmoid,mul]`."""
    group_key: Callable[[Any], str] | None = field(default=None, repr=False)
    """A kernel step's group op -> its canonical key, for the profiler events'
    args (set by the compiler, which owns the canonical form; called only once a
    profiler runs). None, or a step without its op (a warm start), gives none."""

    def __post_init__(self) -> None:
        self._generated: Callable[[Sequence[Any]], list[Any]] | None = None
        self._runs_passing: dict[frozenset[int], Callable[[Sequence[Any]], list[Any]]] = {}
        self._runs_profiled: dict[frozenset[int], Callable[[Sequence[Any]], list[Any]]] = {}

    def generated_run(self) -> Callable[[Sequence[Any]], list[Any]]:
        """The program as one generated function, made on first use: the
        then-program of an `scf.if` is written out inside its parent's run and
        never needs one of its own, nor does an else-program whose guard never
        fails (ViT-tiny's programs: 350, 174 of them then-programs)."""
        run = self._generated
        if run is None:
            run = self._generated = _generate_run(self)
        return run

    def improves_on_original(self) -> bool:
        """Whether running the program does better than running the original
        function: it launches kernels, or runs an op of `FUSED_TORCH_OPS`. A
        program that does neither is the original's ATen calls one by one, and
        callers run the original instead."""
        return self.launches > 0 or any(
            (step.kind == "torch" and step.name in FUSED_TORCH_OPS)
            or any(b.improves_on_original() for b in step.branches)
            or (step.deferred is not None and step.deferred.get().improves_on_original())
            for step in self.steps
        )

    def run_passing(self, guards: frozenset[int]) -> Callable[[Sequence[Any]], list[Any]]:
        """The generated run for calls known to pass the guard steps at indices
        `guards` (their inputs were checked before, e.g. against a
        specialization key): those steps are `True` and cost nothing."""
        run = self._runs_passing.get(guards)
        if run is None:
            run = self._runs_passing[guards] = _generate_run(self, guards)
        return run

    def run_profiled(self, guards: frozenset[int], args: Sequence[Any]) -> list[Any]:
        """Runs `args` as `run_passing(guards)` does, each kernel launch inside a
        `torch.profiler` event named for its ops (`fusec.runtime.profiler_events`):
        what the generated runs call instead of themselves while a profiler runs."""
        run = self._runs_profiled.get(guards)
        if run is None:
            run = self._runs_profiled[guards] = _generate_run(self, guards, profiled=True)
        return run(args)

    def launches_fixed(self, guards: frozenset[int]) -> bool:
        """Whether every run that passes the guard steps at indices `guards`
        launches all `launches` kernels: each `scf.if` holding kernels branches
        on one of those guards and holds no `scf.if` of its own that could
        skip one. The runs of such calls need not count skipped launches."""
        passed = {self.steps[j].outs[0] for j in guards if self.steps[j].kind == "guard"}
        return all(
            step.ins[0] in passed and step.branches[0].launches_fixed(frozenset())
            for step in self.steps
            if step.kind == "if" and step.branches and step.branches[0].launches
        )

    def guard_checks(self, index: int) -> tuple[InputCheck, ...]:
        """What the guard step at `index` checks of each of its inputs."""
        return self.steps[index].fn.checks  # type: ignore[attr-defined]

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        skipped = self.skipped_launches
        results = (self._generated or self.generated_run())(args)
        self.last_launches = self.launches - (self.skipped_launches - skipped)
        return results

    def all_steps(self) -> list[Step]:
        """Every step, those of `scf.if` branches included (after their if step)."""
        out: list[Step] = []
        for s in self.steps:
            out.append(s)
            for branch in s.programs():
                out += branch.all_steps()
        return out

    def launch_steps(self) -> list[Step]:
        """The kernel steps in the order a run launches them (then-regions where
        their `scf.if` is; else-regions, run through PyTorch, left out): the
        order that numbers their profiler events (`fusec_add_mul_0`, `..._1`)."""
        out: list[Step] = []
        for s in self.steps:
            if s.kind == "kernel":
                out.append(s)
            elif s.kind == "if" and s.branches:
                out += s.branches[0].launch_steps()
        return out

    def describe(self) -> str:
        """One line per step, for logs and debugging."""
        lines = [f"args {list(self.arg_slots)} consts {sorted(self.consts)}"]
        for s in self.steps:
            lines.append(f"  {s.kind:6} {s.name}: {list(s.ins)} -> {list(s.outs)}")
            for label, branch in zip(("then", "else"), s.programs(), strict=False):
                sub = branch.describe().replace("\n", "\n      ")
                lines.append(f"    {label}: {sub}")
        lines.append(f"  return {list(self.out_slots)}")
        return "\n".join(lines)


class RootHolder:
    """Whatever makes a program's steps: holds the top-level program, whose
    counters guard and if steps update, once it exists."""

    root: HostProgram | None = None


def assemble(
    n_slots: int,
    arg_slots: tuple[int, ...],
    consts: dict[int, Any],
    steps: Sequence[Step],
    out_slots: tuple[int, ...],
) -> HostProgram:
    """The program of `steps` (their `free` not yet filled in): each slot but the
    arguments, results and constants is freed after its last use; launches and
    fallback groups are counted from the steps."""
    keep = set(arg_slots) | set(out_slots) | set(consts)
    last_use: dict[int, int] = {}
    for i, step in enumerate(steps):
        for s in (*step.ins, *step.outs):
            last_use[s] = i
    frees: list[list[int]] = [[] for _ in steps]
    for s, i in last_use.items():
        if s not in keep:
            frees[i].append(s)
    launches, fallback = 0, []
    for step in steps:
        if step.kind == "kernel":
            launches += 1
        elif step.kind == "group":
            fallback.append("fusion.group")
        elif step.kind == "if":
            other = step.deferred or step.branches[1]
            launches += step.branches[0].launches
            fallback += step.branches[0].fallback_groups + other.fallback_groups
    program_steps = [
        dataclasses.replace(step, free=tuple(sorted(frees[i]))) for i, step in enumerate(steps)
    ]
    return HostProgram(n_slots, arg_slots, consts, program_steps, out_slots, launches, fallback)


def kernel_fn(
    kernel: Callable[[Sequence[Any]], Sequence[Any]], body_of: Callable[[], HostProgram]
) -> _KernelCall:
    """A kernel step: `kernel`, or the group's body through PyTorch for a call
    the kernel declines (`KernelDeclined`; the body program is made then)."""
    body: list[HostProgram] = []

    def declined(xs: Sequence[Any]) -> Sequence[Any]:
        if not body:
            body.append(body_of())
        return body[0](xs)

    return _KernelCall(kernel, declined)


def group_fn(body: HostProgram) -> Callable[..., Sequence[Any]]:
    """A group run through PyTorch: its body's program."""
    return lambda *xs: body(xs)


def guard_fn(
    checks: tuple[InputCheck, ...], what: str, key: Any, holder: RootHolder
) -> Callable[..., tuple[bool]]:
    """A `fusion.guard` step: `checks` generated flat; a failure is counted on
    `holder.root` under `key` (its op) and logged naming `what`, its group."""

    def failed(*xs: Any) -> tuple[bool]:
        root = holder.root
        assert root is not None
        root.guard_failures += 1
        for i, (x, c) in enumerate(zip(xs, checks, strict=True)):
            if not c.matches(x):
                why = f"input #{i} {c.mismatch(x)}"
                root.failed_guards[key] = why
                if guard_log.isEnabledFor(logging.INFO):
                    name = root.guard_names.get(key, what)
                    guard_log.info("guard of %s failed: %s; its ops run unfused", name, why)
                break
        return (False,)

    guard = _generate_guard(checks, failed)
    guard.checks = checks  # type: ignore[attr-defined]
    return guard


def if_fn(
    then: HostProgram, other: HostProgram | DeferredProgram, holder: RootHolder
) -> Callable[..., list[Any]]:
    """An `scf.if` step: its then- or else-program (made on first use when
    deferred); kernels a failed guard skips are counted on `holder.root`."""
    kernels = then.launches

    def run_if(cond: bool, *xs: Any) -> list[Any]:
        if cond:
            return then.generated_run()(xs)
        if kernels:
            assert holder.root is not None
            holder.root.skipped_launches += kernels
        made = other if isinstance(other, HostProgram) else other.get()
        return made.generated_run()(xs)

    return run_if


@dataclass(frozen=True)
class InputCheck:
    """What one `fusion.guard` input must be, precomputed from its type and spec
    (`fusec.codegen.host_program.input_check`)."""

    dtype: Any
    ndim: int
    ones: tuple[bool, ...]
    """Per dim whether it is size 1."""
    contiguous: bool
    device: str
    full_device: bool
    """Whether `device` names one device (`cuda:1`) rather than a type (`cuda`)."""

    def matches(self, x: Any) -> bool:
        return (
            isinstance(x, torch.Tensor)
            and x.dtype == self.dtype
            and x.dim() == self.ndim
            and tuple(s == 1 for s in x.shape) == self.ones
            and (not self.contiguous or x.is_contiguous())
            and (str(x.device) if self.full_device else x.device.type) == self.device
        )

    def mismatch(self, x: Any) -> str:
        """Why `x` does not match (for the debug log)."""
        if not isinstance(x, torch.Tensor):
            return f"is a {type(x).__name__}, not a tensor"
        if x.dtype != self.dtype:
            return f"has dtype {x.dtype}, expected {self.dtype}"
        if x.dim() != self.ndim:
            return f"has rank {x.dim()}, expected {self.ndim}"
        pattern = tuple(s == 1 for s in x.shape)
        if pattern != self.ones:
            want = "x".join("1" if o else "n" for o in self.ones)
            return f"has shape {tuple(x.shape)}, expected size-1 pattern {want or '()'}"
        if self.contiguous and not x.is_contiguous():
            return f"has strides {x.stride()}, expected contiguous"
        return f"is on {x.device}, expected {self.device}"


class _KernelCall:
    """A kernel as a step function (inputs as arguments): `kernel`, or
    `declined` (the group's body through PyTorch) for a call the kernel declines.
    The generated host code calls the kernel's `call` (its current fast path,
    e.g. `CpuKernel.call`) directly with the inputs' tuple."""

    __slots__ = ("kernel", "declined")

    def __init__(
        self,
        kernel: Callable[[Sequence[Any]], Sequence[Any]],
        declined: Callable[[Sequence[Any]], Sequence[Any]],
    ):
        self.kernel = kernel
        self.declined = declined

    def __call__(self, *xs: Any) -> Sequence[Any]:
        from fusec.runtime.operands import KernelDeclined

        try:
            return self.kernel(xs)
        except KernelDeclined:
            return self.declined(xs)


def _generate_run(
    program: HostProgram, passing: frozenset[int] = frozenset(), *, profiled: bool = False
) -> Callable[[Sequence[Any]], list[Any]]:
    """The program as one generated Python function: a local variable per slot,
    a line per step, no interpretation left per call. The then-region of an
    `scf.if` is written out inline (its kernel called right there); the
    else-region, the rare path, is the if step's own call. (In a run for calls
    known to pass a guard, `run_passing`, an `scf.if` on it is its then-region
    alone, without the test.)

        def run(args):
            s0, s1 = args
            s2 = c2
            (s3,) = f0(s0, s2)                  # a torch step
            (s4,) = f1(s3, s1)                  # a guard
            if s4:
                try:                            # the then-region, inline
                    (t2_s2,) = t2_k0.call((s3, s1))
                except KernelDeclined:
                    (t2_s2,) = t2_d0((s3, s1))
                (s5,) = (t2_s2,)
            else:
                (s5,) = f2(s4, s3, s1)          # the if step: runs the else-region
            del s3
            return [s5]

    A program with kernels first asks whether a profiler runs (one C call), and
    if one does, runs instead its `profiled` variant (`run_profiled`), where each
    kernel call is inside a named event (`fusec.runtime.profiler_events`):

        def run(args):
            if PROFILING():
                return PROFILED(args)
            ...

                with t2_e0():                   # the profiled variant
                    try:
                        (t2_s2,) = t2_k0.call((s3, s1))
                    ...
    """
    from fusec.runtime import profiler_events
    from fusec.runtime.operands import KernelDeclined

    env: dict[str, Any] = {"KernelDeclined": KernelDeclined}
    names = {i: f"s{i}" for i in program.arg_slots}
    lines = ["def run(args):"]
    events: _Events | None = None
    if profiled:
        events = _Events(program.group_key)
    elif program.launch_steps():  # else-programs have runs (and this check) of their own
        env["PROFILING"] = profiler_events.enabled
        env["PROFILED"] = functools.partial(program.run_profiled, passing)
        lines += ["    if PROFILING():", "        return PROFILED(args)"]
    if program.arg_slots:
        lines.append("    " + "".join(f"{names[i]}, " for i in program.arg_slots) + "= args")
    else:
        lines.append("    () = args")
    _emit_steps(program, names, env, lines, "    ", "", passing, events)
    lines.append("    return [" + ", ".join(names[i] for i in program.out_slots) + "]")
    return host_code.define("\n".join(lines), env, "run", "program_run")


def _emit_steps(
    program: HostProgram,
    names: dict[int, str],
    env: dict[str, Any],
    lines: list[str],
    indent: str,
    tag: str,
    passing: frozenset[int] = frozenset(),
    events: _Events | None = None,
) -> None:
    """Appends the lines of `program`'s constants and steps. `names` holds each
    slot's variable (those of the arguments are given); `tag` prefixes the
    variables and callables of an inlined then-region, so they stay apart; the
    guard steps at indices `passing` are known to pass, and an `scf.if` on one
    of them is its then-region alone. With `events`, each kernel call is inside
    its profiler event."""
    passed: set[int] = set()
    for slot, value in program.consts.items():
        names[slot] = f"{tag}s{slot}"
        env[f"{tag}c{slot}"] = value
        lines.append(f"{indent}{tag}s{slot} = {tag}c{slot}")
    for j, step in enumerate(program.steps):
        ins = [names[i] for i in step.ins]
        for i in step.outs:
            names[i] = f"{tag}s{i}"
        outs = "(" + "".join(f"{names[i]}, " for i in step.outs) + ")"
        env[f"{tag}f{j}"] = step.fn
        call = f"{tag}f{j}({', '.join(ins)})"
        if step.kind == "if" and step.branches and step.ins[0] in passed:
            then = step.branches[0]
            sub = {a: names[i] for a, i in zip(then.arg_slots, step.ins[1:], strict=True)}
            _emit_steps(then, sub, env, lines, indent, f"{tag}t{j}_", frozenset(), events)
            got = "".join(f"{sub[i]}, " for i in then.out_slots)
            if step.outs:
                lines.append(f"{indent}{outs} = ({got})")
        elif step.kind == "if" and step.branches:
            then = step.branches[0]
            sub = {a: names[i] for a, i in zip(then.arg_slots, step.ins[1:], strict=True)}
            lines.append(f"{indent}if {ins[0]}:")
            inner = indent + "    "
            _emit_steps(then, sub, env, lines, inner, f"{tag}t{j}_", frozenset(), events)
            got = "".join(f"{sub[i]}, " for i in then.out_slots)
            lines.append(f"{indent}    {outs} = ({got})" if step.outs else f"{indent}    pass")
            lines.append(f"{indent}else:")
            lines.append(f"{indent}    {outs} = {call}" if step.outs else f"{indent}    {call}")
        elif j in passing and step.kind == "guard":
            passed.update(step.outs)
            lines.append(f"{indent}{outs} = (True,)")
        elif isinstance(step.fn, _KernelCall):
            kernel = step.fn.kernel
            env[f"{tag}k{j}"], env[f"{tag}d{j}"] = kernel, step.fn.declined
            packed = f"({', '.join(ins)}{',' if len(ins) == 1 else ''})"
            fast = ".call" if callable(getattr(kernel, "call", None)) else ""
            at = indent
            if events is not None:
                env[f"{tag}e{j}"] = events.of(step)
                lines.append(f"{indent}with {tag}e{j}():")
                at = indent + "    "
            lines.append(f"{at}try:")
            lines.append(f"{at}    {outs} = {tag}k{j}{fast}({packed})")
            lines.append(f"{at}except KernelDeclined:")
            lines.append(f"{at}    {outs} = {tag}d{j}({packed})")
        else:
            lines.append(f"{indent}{outs} = {call}" if step.outs else f"{indent}{call}")
        if step.free:
            lines.append(f"{indent}del " + ", ".join(names[i] for i in step.free))


class _Events:
    """The profiler events of one profiled run's kernel steps, numbered in the
    order the run launches them (then-regions inline, as they are written out)."""

    def __init__(self, group_key: Callable[[Any], str] | None):
        self.group_key = group_key
        self.count = 0

    def of(self, step: Step) -> Callable[[], Any]:
        from fusec.runtime.profiler_events import event, event_name

        group = step.recipe[1] if step.recipe else None
        key = self.group_key(group) if self.group_key and group is not None else None
        self.count += 1
        return event(event_name(step.name, self.count - 1), key)


def _generate_guard(
    checks: Sequence[InputCheck], failed: Callable[..., tuple[bool]]
) -> Callable[..., tuple[bool]]:
    """A guard's checks as one generated function of its inputs: a flat run of
    `if`s over attribute reads (flat, since Python caps nesting at 100 levels and
    groups can have more inputs than that), `failed(*inputs)` when one does not hold.

        def guard(x0):
            if not (isinstance(x0, Tensor) and x0.dtype == d0 and x0.is_cpu):
                return failed(x0)
            z = x0.shape
            if not (len(z) == 2 and z[0] != 1 and z[1] == 1 and x0.is_contiguous()):
                return failed(x0)
            return OK
    """
    env: dict[str, Any] = {"Tensor": torch.Tensor, "OK": (True,), "failed": failed}
    xs = ", ".join(f"x{i}" for i in range(len(checks)))
    lines = [f"def guard({xs}):"]
    fail = f"        return failed({xs})"
    for i, c in enumerate(checks):
        x = f"x{i}"
        env[f"d{i}"] = c.dtype
        device = _device_test(x, c.device, c.full_device)
        lines.append(f"    if not (isinstance({x}, Tensor) and {x}.dtype == d{i} and {device}):")
        lines.append(fail)
        lines.append(f"    z = {x}.shape")
        conds = [f"len(z) == {c.ndim}"]
        conds += [f"z[{d}] {'==' if one else '!='} 1" for d, one in enumerate(c.ones)]
        if c.contiguous:
            conds.append(f"{x}.is_contiguous()")
        lines.append(f"    if not ({' and '.join(conds)}):")
        lines.append(fail)
    lines.append("    return OK")
    return host_code.define("\n".join(lines), env, "guard", "guard")


def _device_test(x: str, device: str, full: bool) -> str:
    if not full and device in ("cpu", "cuda"):
        return f"{x}.is_{device}"
    if full and device.startswith("cuda:") and device[5:].isdigit():
        return f"{x}.is_cuda and {x}.get_device() == {int(device[5:])}"
    return f"{'str(' + x + '.device)' if full else x + '.device.type'} == {device!r}"
