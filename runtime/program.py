"""The host program: a compiled `func.func` as a flat list of steps over slots.

Building it walks the IR once; running it walks a Python list. Every SSA value
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
(`fusec.torch_ops`), `aten.opaque` through its original fx target.

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
data and make it again, in another process, with no IR: this module imports xDSL
only where it reads IR (`build_program`), never to run or rebuild a program.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
from fusec.runtime import host_code

if TYPE_CHECKING:
    from fusec.dialects.aten import OpaqueOp
    from fusec.dialects.fusion import GroupOp, GuardOp
    from xdsl.dialects import arith, func, scf
    from xdsl.ir import Block, Operation, Region, SSAValue

log = logging.getLogger("fusec")
guard_log = logging.getLogger("fusec.guards")

KernelProvider = Callable[["GroupOp"], Callable[[Sequence[Any]], Sequence[Any]] | None]
"""Returns a group's kernel (inputs in group order -> outputs), or None to run the
group's body through PyTorch instead."""

OpaqueProvider = Callable[["OpaqueOp"], Callable[..., tuple[Any, ...]]]


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

    def __post_init__(self) -> None:
        self._run = _generate_run(self)
        self._runs_passing: dict[frozenset[int], Callable[[Sequence[Any]], list[Any]]] = {}

    def run_passing(self, guards: frozenset[int]) -> Callable[[Sequence[Any]], list[Any]]:
        """The generated run for calls known to pass the guard steps at indices
        `guards` (their inputs were checked before, e.g. against a
        specialization key): those steps are `True` and cost nothing."""
        run = self._runs_passing.get(guards)
        if run is None:
            run = self._runs_passing[guards] = _generate_run(self, guards)
        return run

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

    def guard_checks(self, index: int) -> tuple[_InputCheck, ...]:
        """What the guard step at `index` checks of each of its inputs."""
        return self.steps[index].fn.checks  # type: ignore[attr-defined]

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        skipped = self.skipped_launches
        results = self._run(args)
        self.last_launches = self.launches - (self.skipped_launches - skipped)
        return results

    def all_steps(self) -> list[Step]:
        """Every step, those of `scf.if` branches included (after their if step)."""
        out: list[Step] = []
        for s in self.steps:
            out.append(s)
            for branch in s.branches:
                out += branch.all_steps()
        return out

    def describe(self) -> str:
        """One line per step, for logs and debugging."""
        lines = [f"args {list(self.arg_slots)} consts {sorted(self.consts)}"]
        for s in self.steps:
            lines.append(f"  {s.kind:6} {s.name}: {list(s.ins)} -> {list(s.outs)}")
            for label, branch in zip(("then", "else"), s.branches, strict=False):
                sub = branch.describe().replace("\n", "\n      ")
                lines.append(f"    {label}: {sub}")
        lines.append(f"  return {list(self.out_slots)}")
        return "\n".join(lines)


def _constant_value(op: arith.ConstantOp) -> Any:
    from xdsl.dialects.builtin import FloatAttr, IntegerAttr

    attr = op.value
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, IntegerAttr):
        width = getattr(attr.type, "width", None)
        if width is not None and width.data == 1:
            return bool(attr.value.data)
        return int(attr.value.data)
    raise UnsupportedProgram(f"constant {attr} is not a Python scalar")


class RootHolder:
    """Whatever makes a program's steps: holds the top-level program, whose
    counters guard and if steps update, once it exists."""

    root: HostProgram | None = None


class _Builder(RootHolder):
    def __init__(self, kernels: KernelProvider, opaque: OpaqueProvider):
        self.kernels = kernels
        self.opaque = opaque

    def build(
        self,
        block: Block,
        returned: Sequence[SSAValue],
        args: Sequence[SSAValue] | None = None,
    ) -> HostProgram:
        """The program of `block`; `args` (default: the block's arguments) are the
        values it takes, e.g. what an `scf.if` region uses from outside."""
        from fusec.dialects.fusion import YieldOp
        from xdsl.dialects import arith, func, scf

        slot: dict[SSAValue, int] = {}

        def new(v: SSAValue) -> int:
            slot[v] = len(slot)
            return slot[v]

        arg_slots = tuple(new(a) for a in (block.args if args is None else args))
        consts: dict[int, Any] = {}
        steps: list[Step] = []
        for op in block.ops:
            if isinstance(op, func.ReturnOp | YieldOp | scf.YieldOp):
                break
            if isinstance(op, arith.ConstantOp):
                consts[new(op.result)] = _constant_value(op)
                continue
            branches: tuple[HostProgram, ...] = ()
            if isinstance(op, scf.IfOp):
                fn, ins, branches = self.if_step(op, slot)
                kind, recipe = "if", ("if",)
            else:
                ins = tuple(slot[o] for o in op.operands)
                fn, kind, recipe = self.step_fn(op)
            outs = tuple(new(r) for r in op.results)
            steps.append(Step(fn, ins, outs, (), kind, _step_name(op), branches, recipe))
        return assemble(len(slot), arg_slots, consts, steps, tuple(slot[v] for v in returned))

    def step_fn(self, op: Operation) -> tuple[Callable[..., Sequence[Any]], str, Any]:
        """A step's function, kind and recipe."""
        from fusec.dialects.aten import OpaqueOp
        from fusec.dialects.fusion import GroupOp, GuardOp
        from fusec.runtime.torch_steps import step_callable
        from fusec.torch_ops import has_torch_callable, op_info

        if isinstance(op, GroupOp):
            kernel = self.kernels(op)
            body_of = functools.partial(self.build, op.body.block, list(op.yield_op.values))
            if kernel is not None:
                return kernel_fn(kernel, body_of), "kernel", ("kernel", op, body_of)
            body = body_of()
            if body.launches:
                raise UnsupportedProgram("a group nested in a group")
            return group_fn(body), "group", ("group", body)
        if isinstance(op, GuardOp):
            checks = tuple(
                _InputCheck.of(v.type, spec)
                for v, spec in zip(op.inputs, op.specs.data, strict=True)
            )
            what = _guarded_name(op)
            return guard_fn(checks, what, op, self), "guard", ("guard", checks, what)
        if isinstance(op, OpaqueOp):
            return self.opaque(op), "opaque", ("opaque", op.node and op.node.data)
        if not has_torch_callable(op):
            raise UnsupportedProgram(f"no eager PyTorch implementation for {op.name}")
        info = op_info(op)
        return step_callable(info), "torch", ("torch", info)

    def if_step(
        self, op: scf.IfOp, slot: dict[SSAValue, int]
    ) -> tuple[Callable[..., Sequence[Any]], tuple[int, ...], tuple[HostProgram, ...]]:
        if len(op.false_region.blocks) != 1:
            raise UnsupportedProgram("scf.if without an else-region")
        captured = _captures(op.true_region, op.false_region)
        then, other = (
            self.build(r.block, list(_yielded(r)), captured)
            for r in (op.true_region, op.false_region)
        )
        return (
            if_fn(then, other, self),
            (slot[op.cond], *(slot[v] for v in captured)),
            (then, other),
        )


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
            launches += step.branches[0].launches
            fallback += step.branches[0].fallback_groups + step.branches[1].fallback_groups
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
    checks: tuple[_InputCheck, ...], what: str, key: Any, holder: RootHolder
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


def if_fn(then: HostProgram, other: HostProgram, holder: RootHolder) -> Callable[..., list[Any]]:
    """An `scf.if` step: its then- or else-program; kernels a failed guard skips
    are counted on `holder.root`."""
    kernels = then.launches

    def run_if(cond: bool, *xs: Any) -> list[Any]:
        if cond:
            return then._run(xs)
        if kernels:
            assert holder.root is not None
            holder.root.skipped_launches += kernels
        return other._run(xs)

    return run_if


@dataclass(frozen=True)
class _InputCheck:
    """What one `fusion.guard` input must be, precomputed from its type and spec."""

    dtype: Any
    ndim: int
    ones: tuple[bool, ...]
    """Per dim whether it is size 1."""
    contiguous: bool
    device: str
    full_device: bool
    """Whether `device` names one device (`cuda:1`) rather than a type (`cuda`)."""

    @staticmethod
    def of(t: Any, spec: Any) -> _InputCheck:
        from fusec.torch_ops import torch_dtype
        from xdsl.dialects.builtin import TensorType

        assert isinstance(t, TensorType)
        rank = t.get_num_dims()
        ones = set(spec.ones_dims)
        device = spec.device.data
        return _InputCheck(
            torch_dtype(t),
            rank,
            tuple(d in ones for d in range(rank)),
            spec.layout.data == "contiguous",
            device,
            ":" in device,
        )

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
    program: HostProgram, passing: frozenset[int] = frozenset()
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
    """
    from fusec.runtime.operands import KernelDeclined

    env: dict[str, Any] = {"KernelDeclined": KernelDeclined}
    names = {i: f"s{i}" for i in program.arg_slots}
    lines = ["def run(args):"]
    if program.arg_slots:
        lines.append("    " + "".join(f"{names[i]}, " for i in program.arg_slots) + "= args")
    else:
        lines.append("    () = args")
    _emit_steps(program, names, env, lines, "    ", "", passing)
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
) -> None:
    """Appends the lines of `program`'s constants and steps. `names` holds each
    slot's variable (those of the arguments are given); `tag` prefixes the
    variables and callables of an inlined then-region, so they stay apart; the
    guard steps at indices `passing` are known to pass, and an `scf.if` on one
    of them is its then-region alone."""
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
            _emit_steps(then, sub, env, lines, indent, f"{tag}t{j}_")
            got = "".join(f"{sub[i]}, " for i in then.out_slots)
            if step.outs:
                lines.append(f"{indent}{outs} = ({got})")
        elif step.kind == "if" and step.branches:
            then = step.branches[0]
            sub = {a: names[i] for a, i in zip(then.arg_slots, step.ins[1:], strict=True)}
            lines.append(f"{indent}if {ins[0]}:")
            _emit_steps(then, sub, env, lines, indent + "    ", f"{tag}t{j}_")
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
            lines.append(f"{indent}try:")
            lines.append(f"{indent}    {outs} = {tag}k{j}{fast}({packed})")
            lines.append(f"{indent}except KernelDeclined:")
            lines.append(f"{indent}    {outs} = {tag}d{j}({packed})")
        else:
            lines.append(f"{indent}{outs} = {call}" if step.outs else f"{indent}{call}")
        if step.free:
            lines.append(f"{indent}del " + ", ".join(names[i] for i in step.free))


def _generate_guard(
    checks: Sequence[_InputCheck], failed: Callable[..., tuple[bool]]
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


def _captures(*regions: Region) -> list[SSAValue]:
    """Values the regions use but do not define, in order of first use."""
    inside: set[SSAValue] = set()
    used: dict[SSAValue, None] = {}
    for region in regions:
        for op in region.walk():
            inside.update(op.results)
            for r in op.regions:
                for b in r.blocks:
                    inside.update(b.args)
        for b in region.blocks:
            inside.update(b.args)
    for region in regions:
        for op in region.walk():
            for v in op.operands:
                if v not in inside:
                    used.setdefault(v, None)
    return list(used)


def _yielded(region: Region) -> Sequence[SSAValue]:
    from xdsl.dialects import scf

    term = region.block.last_op
    if not isinstance(term, scf.YieldOp):
        raise UnsupportedProgram("scf.if region does not end with scf.yield")
    return term.operands


def _guarded_name(op: GuardOp) -> str:
    from fusec.dialects.fusion import GroupOp
    from xdsl.dialects import scf

    for use in op.ok.uses:
        user = use.operation
        if isinstance(user, scf.IfOp):
            for inner in user.true_region.block.ops:
                if isinstance(inner, GroupOp):
                    return _step_name(inner)
    return "fusion.guard"


def _step_name(op: Operation) -> str:
    from fusec.dialects.aten import OpaqueOp
    from fusec.dialects.fusion import GroupOp, YieldOp
    from xdsl.dialects import scf

    if isinstance(op, OpaqueOp):
        return f"{op.target.data}"
    if isinstance(op, GroupOp):
        names = [o.name for o in op.body.block.ops if not isinstance(o, YieldOp)]
        return "group[" + ",".join(n.removeprefix("aten.") for n in names) + "]"
    if isinstance(op, scf.IfOp):
        then = [o for o in op.true_region.block.ops if not isinstance(o, scf.YieldOp)]
        return "if[" + ", ".join(_step_name(o) for o in then) + "]"
    return op.name


def build_program(
    function: func.FuncOp,
    kernels: KernelProvider,
    opaque: OpaqueProvider,
) -> HostProgram:
    """The host program of `function`; groups get their kernels from `kernels`."""
    from xdsl.dialects import func

    block = function.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise UnsupportedProgram("function does not end with func.return")
    builder = _Builder(kernels, opaque)
    program = builder.root = builder.build(block, list(ret.arguments))
    return program


def no_kernels(group: GroupOp) -> None:
    """A kernel provider that runs every group through PyTorch."""
    return None
