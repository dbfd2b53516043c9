"""Why an op stayed outside every `fusion.group`: remarks the `fuse` pass records.

The reasons come from the pass itself: `try_fuse` notes each check that refused a
(consumer, producer) pair, and at the end of the pass every op of a function body
still outside a group gets one `FusionRemark`, built from what the pass saw:

    %0 = aten.mm %x, %w      -> barrier: matrix product (aten.mm), runs through PyTorch
    %1 = aten.opaque "torch.softmax"(%0)
                             -> barrier: op fusec does not model (torch.softmax)
    %2 = aten.exp %1         -> arg-limit: fusing aten.exp into a group of aten.tanh, ...
                                needs 130 kernel arguments (arg-limit=128)
    %3 = aten.neg %0         -> no-partner: inputs from aten.mm; used by aten.opaque

Remarks are collected only inside `collect_remarks()` (what `fusec.compile`,
`fusec.explain` and `fusec-opt --view-fusion-graph` use), so the pass costs nothing
extra otherwise:

    with collect_remarks() as remarks:
        PassPipeline.parse_spec(...).apply(ctx, module)
    remarks[op]   # FusionRemark(kind="barrier", detail="matrix product (aten.mm)")

A later `fuse` run replaces the remarks of an earlier one for the ops it sees.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from fusec.dialects.aten import (
    AddmmOp,
    CatOp,
    CopyOp,
    LinearOp,
    MatmulLikeOp,
    OpaqueOp,
    ReductionOp,
    ScaledDotProductAttentionOp,
    ShapeOp,
    SizeOp,
)
from fusec.dialects.fusion import GroupOp
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation

KINDS: dict[str, str] = {
    "barrier": "an op the fuser never fuses",
    "arg-limit": "fusing would pass the kernel argument limit",
    "group-size": "fusing would pass the group size cap (`fuse{max-group-ops=N}`)",
    "alias-write": "fusing would move a read past a write that may alias it",
    "cycle": "another user of the value comes before the consumer (fusing would make a cycle)",
    "cat-exit": "it reads a cat that is an exit of the consumer's group",
    "no-partner": "no pointwise producer or consumer to fuse with",
    "unsupported-dtype": "no kernel for the dtype",
    "fallback": "the group's kernel could not be built; it runs through PyTorch",
    "guard-failed": "the group's guard failed on these inputs; its ops ran unfused",
}
"""Remark kinds and what they mean: `fuse` makes the first seven, the importer
`unsupported-dtype` (on `aten.opaque`), the runtime the last two. A graph that runs
eagerly as a whole has no ops to remark on: its report says why instead."""

FIXABLE = frozenset({"arg-limit", "group-size", "alias-write", "fallback", "guard-failed"})
"""Kinds where an op that could have fused did not (a limit, a conservative alias
check, a kernel that failed to build, a guard), as opposed to
the graph's own structure (barriers, cycles, no partner): what
`fusec.compile(..., strict=True)` rejects."""


@dataclass(frozen=True)
class FusionRemark:
    """Why one op is outside every group."""

    kind: str
    """A key of `KINDS`."""
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


class Remarks(dict[Operation, FusionRemark]):
    """The remark per op; `derived` maps ops a pass built to the op they replace
    (`derived_from`), so they keep the user's source line."""

    def __init__(self) -> None:
        super().__init__()
        self.derived: dict[Operation, Operation] = {}


_COLLECTOR: ContextVar[Remarks | None] = ContextVar("fusec_fusion_remarks", default=None)


@contextlib.contextmanager
def collect_remarks() -> Iterator[Remarks]:
    """Collect the remarks of the `fuse` runs inside the block (nesting is fine:
    the inner block collects its own)."""
    remarks = Remarks()
    token = _COLLECTOR.set(remarks)
    try:
        yield remarks
    finally:
        _COLLECTOR.reset(token)


def collecting() -> bool:
    return _COLLECTOR.get() is not None


def cloned_from(clone: Operation, original: Operation) -> None:
    """`clone` is `original.clone()`: each op inside stands for its original."""
    if _COLLECTOR.get() is not None:
        for new, old in zip(clone.walk(), original.walk(), strict=True):
            derived_from([new], old)


def derived_from(new_ops: Sequence[Operation], old: Operation) -> None:
    """A pass replaced `old` by `new_ops`: they stand for the same user code."""
    remarks = _COLLECTOR.get()
    if remarks is not None:
        origin = remarks.derived.get(old, old)
        for op in new_ops:
            remarks.derived[op] = origin


def replaced_outside_groups(new: Operation, old: Sequence[Operation]) -> None:
    """A pass after `fuse` replaced `old`, ops outside every group, by `new`, also
    outside one: the old ops' remarks go and `new` gets its barrier's remark (a
    matrix product that took in a bias add stays a barrier)."""
    remarks = _COLLECTOR.get()
    if remarks is None:
        return
    for op in old:
        remarks.pop(op, None)
    kind = barrier_kind(new)
    if kind is not None:
        remarks[new] = FusionRemark("barrier", kind)


def barrier_kind(op: Operation) -> str | None:
    """What kind of barrier `op` is to the fuser, or None for a pointwise op."""
    if isinstance(op, MatmulLikeOp | AddmmOp | LinearOp):
        return f"matrix product ({op.name}), runs through PyTorch"
    if isinstance(op, ScaledDotProductAttentionOp):
        return f"attention ({op.name}), runs through PyTorch"
    if isinstance(op, ReductionOp):
        return f"reduction ({op.name})"
    if isinstance(op, OpaqueOp):
        return f"op fusec does not model ({op.target.data})"
    if isinstance(op, CopyOp):
        return "in-place write (aten.copy_) that an alias may observe"
    if isinstance(op, SizeOp):
        return "size query (aten.size)"
    if isinstance(op, CatOp):
        return "concatenation (aten.cat) that is not an exit of one group"
    if op.has_trait(ShapeOp):
        return f"view or layout op ({op.name}) that no group holds all uses of"
    if not all(isinstance(r.type, TensorType) for r in op.results):
        return f"{op.name} has a non-tensor result"
    return None


_RANK = {"arg-limit": 0, "group-size": 0, "alias-write": 1, "cycle": 2, "cat-exit": 3}


class RejectionLog:
    """The checks that refused pairs during one `fuse` run, per op of the pair."""

    def __init__(self) -> None:
        self._by_op: dict[Operation, FusionRemark] = {}

    def refused(self, consumer: Operation, producer: Operation, kind: str, detail: str) -> None:
        if not collecting():
            return
        remark = FusionRemark(kind, detail)
        for op in (consumer, producer):
            old = self._by_op.get(op)
            # The most telling reason wins: a limit or a write over a cycle.
            if old is None or _RANK[kind] < _RANK[old.kind]:
                self._by_op[op] = remark

    def finish(self, module: Operation, is_pointwise: Callable[[Operation], bool]) -> None:
        """Give every op outside a group in each function body its remark."""
        remarks = _COLLECTOR.get()
        if remarks is None:
            return
        for f in module.walk():
            if not isinstance(f, func.FuncOp):
                continue
            for op in f.body.block.ops:
                remark = self._remark(op, is_pointwise)
                if remark is not None:
                    remarks[op] = remark
                else:
                    remarks.pop(op, None)

    def _remark(
        self, op: Operation, is_pointwise: Callable[[Operation], bool]
    ) -> FusionRemark | None:
        if isinstance(op, GroupOp | func.ReturnOp | arith.ConstantOp | scf.IfOp):
            return None
        if not is_pointwise(op):
            return FusionRemark("barrier", barrier_kind(op) or f"{op.name} is not pointwise")
        refused = self._by_op.get(op)
        if refused is not None:
            return refused
        return FusionRemark("no-partner", _neighbours(op))


def _neighbours(op: Operation) -> str:
    """'inputs from X; used by Y' for a pointwise op that had nothing to fuse with."""
    producers = sorted(
        {
            o.owner.name
            for o in op.operands
            if isinstance(o.owner, Operation) and not isinstance(o.owner, arith.ConstantOp)
        }
    )
    users = sorted({u.operation.name for r in op.results for u in r.uses})
    inputs = ", ".join(producers) if producers else "function arguments"
    used = ", ".join(users) if users else "nothing"
    return f"inputs from {inputs}; used by {used}"
