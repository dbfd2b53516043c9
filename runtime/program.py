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
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fusec.dialects.aten import OpaqueOp
from fusec.dialects.fusion import GroupOp, YieldOp
from fusec.torch_ops import torch_callable
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

log = logging.getLogger("fusec")

KernelProvider = Callable[[GroupOp], Callable[[Sequence[Any]], Sequence[Any]] | None]
"""Returns a group's kernel (inputs in group order -> outputs), or None to run the
group's body through PyTorch instead."""

OpaqueProvider = Callable[[OpaqueOp], Callable[..., tuple[Any, ...]]]


class UnsupportedProgram(Exception):
    """The IR holds an op the host program cannot run."""


@dataclass(frozen=True)
class Step:
    fn: Callable[..., Sequence[Any]]
    ins: tuple[int, ...]
    outs: tuple[int, ...]
    free: tuple[int, ...]
    kind: str
    """"torch", "opaque", "kernel" or "group" (a group run through PyTorch)."""
    name: str


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

    def __post_init__(self) -> None:
        template: list[Any] = [None] * self.n_slots
        for slot, value in self.consts.items():
            template[slot] = value
        self._template = template
        self._steps = tuple((s.fn, s.ins, s.outs, s.free) for s in self.steps)

    def __call__(self, args: Sequence[Any]) -> list[Any]:
        slots = self._template.copy()
        for slot, value in zip(self.arg_slots, args, strict=True):
            slots[slot] = value
        for fn, ins, outs, free in self._steps:
            results = fn(*[slots[i] for i in ins])
            for slot, value in zip(outs, results, strict=True):
                slots[slot] = value
            for slot in free:
                slots[slot] = None
        return [slots[i] for i in self.out_slots]

    def describe(self) -> str:
        """One line per step, for logs and debugging."""
        lines = [f"args {list(self.arg_slots)} consts {sorted(self.consts)}"]
        for s in self.steps:
            lines.append(f"  {s.kind:6} {s.name}: {list(s.ins)} -> {list(s.outs)}")
        lines.append(f"  return {list(self.out_slots)}")
        return "\n".join(lines)


def _constant_value(op: arith.ConstantOp) -> Any:
    attr = op.value
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, IntegerAttr):
        width = getattr(attr.type, "width", None)
        if width is not None and width.data == 1:
            return bool(attr.value.data)
        return int(attr.value.data)
    raise UnsupportedProgram(f"constant {attr} is not a Python scalar")


class _Builder:
    def __init__(self, kernels: KernelProvider, opaque: OpaqueProvider):
        self.kernels = kernels
        self.opaque = opaque

    def build(self, block: Block, returned: Sequence[SSAValue]) -> HostProgram:
        slot: dict[SSAValue, int] = {}

        def new(v: SSAValue) -> int:
            slot[v] = len(slot)
            return slot[v]

        arg_slots = tuple(new(a) for a in block.args)
        consts: dict[int, Any] = {}
        steps: list[
            tuple[Callable[..., Sequence[Any]], tuple[int, ...], tuple[int, ...], str, str]
        ] = []
        launches = 0
        fallback: list[str] = []
        for op in block.ops:
            if isinstance(op, func.ReturnOp | YieldOp):
                break
            if isinstance(op, arith.ConstantOp):
                consts[new(op.result)] = _constant_value(op)
                continue
            ins = tuple(slot[o] for o in op.operands)
            fn, kind = self.step_fn(op)
            if kind == "kernel":
                launches += 1
            elif kind == "group":
                fallback.append(op.name)
            outs = tuple(new(r) for r in op.results)
            steps.append((fn, ins, outs, kind, _step_name(op)))
        out_slots = tuple(slot[v] for v in returned)
        keep = set(arg_slots) | set(out_slots) | set(consts)
        last_use: dict[int, int] = {}
        for i, (_, ins, outs, _, _) in enumerate(steps):
            for s in (*ins, *outs):
                last_use[s] = i
        frees: list[list[int]] = [[] for _ in steps]
        for s, i in last_use.items():
            if s not in keep:
                frees[i].append(s)
        program_steps = [
            Step(fn, ins, outs, tuple(sorted(frees[i])), kind, name)
            for i, (fn, ins, outs, kind, name) in enumerate(steps)
        ]
        return HostProgram(
            len(slot), arg_slots, consts, program_steps, out_slots, launches, fallback
        )

    def step_fn(self, op: Operation) -> tuple[Callable[..., Sequence[Any]], str]:
        if isinstance(op, GroupOp):
            kernel = self.kernels(op)
            if kernel is not None:
                return (lambda *xs: kernel(xs)), "kernel"
            body = self.build(op.body.block, list(op.yield_op.values))
            if body.launches:
                raise UnsupportedProgram("a group nested in a group")
            return (lambda *xs: body(xs)), "group"
        if isinstance(op, OpaqueOp):
            return self.opaque(op), "opaque"
        try:
            return torch_callable(op), "torch"
        except KeyError as e:
            raise UnsupportedProgram(str(e.args[0])) from None


def _step_name(op: Operation) -> str:
    if isinstance(op, OpaqueOp):
        return f"{op.target.data}"
    if isinstance(op, GroupOp):
        names = [o.name for o in op.body.block.ops if not isinstance(o, YieldOp)]
        return "group[" + ",".join(n.removeprefix("aten.") for n in names) + "]"
    return op.name


def build_program(
    function: func.FuncOp,
    kernels: KernelProvider,
    opaque: OpaqueProvider,
) -> HostProgram:
    """The host program of `function`; groups get their kernels from `kernels`."""
    block = function.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise UnsupportedProgram("function does not end with func.return")
    return _Builder(kernels, opaque).build(block, list(ret.arguments))


def no_kernels(group: GroupOp) -> None:
    """A kernel provider that runs every group through PyTorch."""
    return None
