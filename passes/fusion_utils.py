"""Bookkeeping and IR surgery shared by the `fuse` patterns.

The fuser must stay near-linear (the seeds' counter-example recomputed its alias
analysis on every step), so nothing here rescans a block per fusion step:

- `FusionState.position` numbers each block once; a group created for a consumer
  takes the consumer's number, and ops only ever leave a block (into a group), so
  the numbers stay a valid topological order for the whole pass.
- `FusionState.has_user_before` keeps, per value, a lazy min-heap of the
  positions of its users; entries whose op left the block are dropped on read, and
  groups that start using the value are pushed, so a query is amortized O(log n).
- Group surgery moves ops (O(1) each) instead of cloning them and rewrites a
  group's inputs once per step (`_Inputs`), not once per argument.
- Outputs grow in place (`_grow_outputs`) and existing `OpResult`s are re-owned
  rather than replaced, so no step redirects the uses of a group's old outputs:
  a value's outside uses are redirected once, when its producer enters a group.
- Two groups merge by moving the smaller body into the larger (`merge_groups`),
  so an op moves O(log n) times over the whole pass.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fusec.dialects.aten import PermuteOp, Pointwise, Reduction, TransposeOp
from fusec.dialects.fusion import GroupOp, YieldOp
from fusec.dialects.inference import is_scalar
from fusec.passes.aliasing import alias_root, may_alias, tensor_roots, written
from fusec.passes.xdsl_compat import set_block_args
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue, SSAValues
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint
from xdsl.traits import is_side_effect_free

if TYPE_CHECKING:
    from fusec.passes.lowering.reduction_domain import FusionShape

DEFAULT_ARG_LIMIT = 128
"""Kernel arguments (inputs + outputs) a group may take, as the seeds' NVRTC limit."""


def check_arg_limit(pass_name: str, arg_limit: int) -> None:
    """`ValueError` (a bad pass option) unless a group can take one input and
    one output."""
    if arg_limit < 2:
        raise ValueError(f"{pass_name}: arg-limit must be at least 2, got {arg_limit}")


def in_group(op: Operation) -> bool:
    """Ops already inside a `fusion.group` body are the group's business."""
    return isinstance(op.parent_op(), GroupOp)


def is_pointwise(op: Operation) -> bool:
    """An elementwise op without write effects: the code generator's bread and butter."""
    return (
        op.has_trait(Pointwise)
        and is_side_effect_free(op)
        and all(isinstance(r.type, TensorType) for r in op.results)
    )


def is_scalar_constant(op: Operation | None) -> bool:
    """`arith.constant` of a Python scalar (f64/i64/i1): cloned into groups, never an input."""
    return isinstance(op, ConstantOp) and is_scalar(op.result.type)


def unswapped(v: SSAValue) -> SSAValue | None:
    """`x` when `v` is `x` with its last two dims swapped (`transpose` of those
    dims, or the `permute` that swaps them): a weight's `t(w)` before a product,
    a key's `k.transpose(-2, -1)` in attention."""
    op = v.owner
    t = v.type
    if not isinstance(t, TensorType) or t.get_num_dims() < 2:
        return None
    rank = t.get_num_dims()
    if isinstance(op, TransposeOp):
        dims = {d % rank for d in (op.dim0.value.data, op.dim1.value.data)}
        return op.input if dims == {rank - 2, rank - 1} else None
    if isinstance(op, PermuteOp):
        swap = [*range(rank - 2), rank - 1, rank - 2]
        return op.input if [d % rank for d in op.dims.get_values()] == swap else None
    return None


def is_consumer(op: Operation) -> bool:
    """Ops a producer can fuse into: pointwise ops, reductions and existing groups."""
    from fusec.passes.lowering.reduction_domain import is_fusible_reduction

    return isinstance(op, GroupOp) or is_pointwise(op) or is_fusible_reduction(op)


def is_group_input(value: SSAValue) -> bool:
    """Values a group may take as an argument: tensors and Python scalars."""
    return isinstance(value.type, TensorType) or is_scalar(value.type)


@dataclass
class FusionState:
    """Positions and user heaps, kept valid incrementally under the fuse rewrites."""

    arg_limit: int = DEFAULT_ARG_LIMIT
    max_group_ops: int = 0
    """Most ops a group's body may hold (0: no cap)."""
    _pos: dict[Operation, int] = field(default_factory=dict[Operation, int])
    _numbered: set[Block] = field(default_factory=set[Block])
    _users: dict[SSAValue, list[tuple[int, int, Operation]]] = field(
        default_factory=dict[SSAValue, list[tuple[int, int, Operation]]]
    )
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    cloned_constants: set[Operation] = field(default_factory=set[Operation])
    _sizes: dict[GroupOp, int] = field(default_factory=dict[GroupOp, int])
    _reducing: dict[GroupOp, bool] = field(default_factory=dict[GroupOp, bool])
    _writes: dict[Block, tuple[list[int], list[Operation]]] = field(
        default_factory=dict[Block, tuple[list[int], list[Operation]]]
    )

    fusion_shapes: dict[Operation, FusionShape] = field(
        default_factory=dict[Operation, "FusionShape"]
    )
    """Each group's reduction domain and space (`reduction_domain`), kept by `try_fuse`."""
    _version: dict[Operation, int] = field(default_factory=dict[Operation, int])
    _scanned: dict[Operation, int] = field(default_factory=dict[Operation, int])
    _hints: dict[Operation, dict[Operation, None]] = field(
        default_factory=dict[Operation, dict[Operation, None]]
    )

    def changed(self, group: Operation) -> None:
        """`group`'s inputs or outputs changed: its next match scans all producers."""
        self._version[group] = self._version.get(group, 0) + 1

    def hint(self, consumer: Operation, producer: Operation) -> None:
        """`producer` changed since `consumer` last failed to fuse anything."""
        self._hints.setdefault(consumer, {})[producer] = None

    def producers_to_retry(self, consumer: Operation) -> list[Operation] | None:
        """None: scan every producer. Otherwise `consumer` is unchanged since a scan
        in this walk fused nothing, and only the producers changed since can fuse
        now (a group at the argument limit would otherwise be rescanned, k tries of
        O(k) each, on every step that grows one of its producers)."""
        if self._scanned.get(consumer) != self._version.get(consumer, 0):
            return None
        return list(self._hints.pop(consumer, {}))

    def scanned(self, consumer: Operation) -> None:
        self._scanned[consumer] = self._version.get(consumer, 0)
        self._hints.pop(consumer, None)

    def new_walk(self) -> None:
        """Each walk of the fixpoint loop scans every consumer again, so fusions made
        possible by other changes (a user that moved away) are still found."""
        self._scanned.clear()
        self._hints.clear()

    def size(self, group: GroupOp) -> int:
        """Ops in `group`'s body (its yield included, scalar constants not: they are
        cloned into every group that reads them and cost a kernel nothing), counted
        once per group."""
        size = self._sizes.get(group)
        if size is None:
            ops = group.body.block.ops
            size = self._sizes[group] = sum(1 for o in ops if not is_scalar_constant(o))
        return size

    def grow(self, group: GroupOp, by: int) -> None:
        self._sizes[group] = self.size(group) + by

    def reduces(self, op: Operation) -> bool:
        """Does `op` reduce (a group: does it hold a reduction)? A group's body is
        scanned once; `fused` keeps the answer as groups grow, so a chain of n ops
        does not cost n scans of its growing group."""
        if not isinstance(op, GroupOp):
            return op.has_trait(Reduction)
        reducing = self._reducing.get(op)
        if reducing is None:
            reducing = self._reducing[op] = any(o.has_trait(Reduction) for o in op.body.block.ops)
        return reducing

    def fused(self, group: GroupOp, reducing: bool) -> None:
        """`group` is the result of a fusion step whose parts reduced iff `reducing`."""
        self._reducing[group] = reducing

    def position(self, op: Operation) -> int:
        """Topological index of `op` in its block (numbering the block on first use)."""
        pos = self._pos.get(op)
        if pos is None:
            block = op.parent_block()
            assert block is not None and block not in self._numbered, "op was never numbered"
            self._numbered.add(block)
            for i, o in enumerate(block.ops):
                self._pos[o] = 2 * i
            pos = self._pos[op]
        return pos

    def take_position(self, new: Operation, old: Operation) -> None:
        """`new` replaces `old` in place; every value `new` reads learns of its new user."""
        self._pos[new] = self.position(old)
        self.note_users(new)

    def note_users(self, op: Operation) -> None:
        for value in set(op.operands):
            heap = self._users.get(value)
            if heap is not None:
                heapq.heappush(heap, (self._pos[op], next(self._seq), op))

    def forget(self, op: Operation) -> None:
        self._pos.pop(op, None)
        if isinstance(op, GroupOp):
            self._sizes.pop(op, None)
            self._reducing.pop(op, None)

    def note_user(self, value: SSAValue, op: Operation) -> None:
        """`op` (already numbered) started reading `value`."""
        heap = self._users.get(value)
        if heap is not None:
            heapq.heappush(heap, (self._pos[op], next(self._seq), op))

    def _heap(self, value: SSAValue, block: Block) -> list[tuple[int, int, Operation]]:
        heap = self._users.get(value)
        if heap is None:
            users: dict[Operation, None] = {}
            for use in value.uses:
                anc = block.find_ancestor_op_in_block(use.operation)
                if anc is not None:
                    users[anc] = None
            heap = [(self.position(u), next(self._seq), u) for u in users]
            heapq.heapify(heap)
            self._users[value] = heap
        return heap

    def first_user(self, value: SSAValue, block: Block) -> tuple[int, Operation] | None:
        """The earliest op of `block` that uses `value`, with its position."""
        heap = self._heap(value, block)
        while heap:
            pos, _, user = heap[0]
            if user.parent_block() is block and self._pos.get(user) == pos:
                return pos, user
            heapq.heappop(heap)
        return None

    def next_consumer(self, group: GroupOp) -> Operation | None:
        """The only op that may take `group` as a producer: one that no other user of
        its outputs precedes, so the earliest user of any output."""
        block = group.parent_block()
        assert block is not None
        firsts = [f for r in group.results if (f := self.first_user(r, block)) is not None]
        return min(firsts, key=lambda f: f[0])[1] if firsts else None

    def crosses_write(self, producer: Operation, consumer: Operation) -> bool:
        """Would moving `producer` to `consumer` carry a read of a tensor past an
        `aten.copy_` that may write it? Ops move down, into a later consumer's
        group, except a reduction that moves up into a sibling's group
        (`fuse.FuseReductionIntoSibling`): then the writes between the two count
        as well. Writes never move, so their positions are collected once per
        block."""
        block = consumer.parent_block()
        assert block is not None
        writes = self._writes.get(block)
        if writes is None:
            found = [(self.position(o), o) for o in block.ops if written(o)]
            writes = self._writes[block] = ([p for p, _ in found], [o for _, o in found])
        positions, copies = writes
        first, last = sorted((self.position(producer), self.position(consumer)))
        lo = bisect.bisect_right(positions, first)
        hi = bisect.bisect_left(positions, last)
        if lo >= hi:
            return False
        reads = tensor_roots(producer.operands)
        # Roots are found now, not cached: fusing replaces the values a write's
        # destination is a view of (an op's result by its group's).
        return any(
            may_alias(alias_root(d), r) for c in copies[lo:hi] for d in written(c) for r in reads
        )

    def has_user_before(self, value: SSAValue, consumer: Operation) -> bool:
        """Does an op other than `consumer` use `value` before `consumer`'s position?
        Such a use would have to read a group output defined after it: a cycle."""
        block = consumer.parent_block()
        assert block is not None
        heap = self._heap(value, block)
        limit = self.position(consumer)
        held: list[tuple[int, int, Operation]] = []
        found = False
        while heap:
            entry = heap[0]
            user = entry[2]
            if user.parent_block() is not block or self._pos.get(user) != entry[0]:
                heapq.heappop(heap)  # stale: fused into a group, erased or moved
                continue
            if user is consumer:
                held.append(heapq.heappop(heap))
                continue
            found = entry[0] < limit
            break
        for entry in held:
            heapq.heappush(heap, entry)
        return found


# --------------------------------------------------------------------------- surgery


def distinct_inputs(values: Iterable[SSAValue]) -> list[SSAValue]:
    """Operands that become group arguments: everything but scalar constants."""
    seen: dict[SSAValue, None] = {}
    for v in values:
        if not (isinstance(v, OpResult) and is_scalar_constant(v.op)):
            seen[v] = None
    return list(seen)


def consumer_inputs(consumer: Operation) -> set[SSAValue]:
    """What `consumer` (a group, or an op about to become one) takes as arguments."""
    if isinstance(consumer, GroupOp):
        return set(consumer.inputs)
    return set(distinct_inputs(consumer.operands))


def arg_count_after(
    consumer: Operation, producer: Operation, inputs: set[SSAValue] | None = None
) -> int:
    """Inputs + outputs of the group that fusing `producer` into `consumer` gives;
    `inputs` is `consumer_inputs(consumer)`, passed in when trying many producers."""
    if inputs is None:
        inputs = consumer_inputs(consumer)
    n_out = len(consumer.results)
    if isinstance(producer, GroupOp):
        prod_inputs = set(producer.inputs)
    else:
        prod_inputs = set(distinct_inputs(producer.operands))
    dropped = sum(1 for r in producer.results if r in inputs)
    added = sum(1 for v in prod_inputs if v not in inputs)
    extra_out = sum(1 for r in producer.results if any(u.operation is not consumer for u in r.uses))
    return len(inputs) - dropped + added + n_out + extra_out


def _clone_constant(
    const: Operation, block: Block, anchor: Operation, state: FusionState
) -> SSAValue:
    clone = const.clone()
    block.insert_op_before(clone, anchor)
    state.cloned_constants.add(const)
    return clone.results[0]


class _Inputs:
    """A group's inputs while one fusion step edits them.

    Arguments are added and dropped in a dict; `commit` then writes the operand list
    and the block arguments once, so a step costs O(k) for k inputs instead of the
    O(k) per added or dropped argument that `Block.insert_arg`/`erase_arg` and the
    `operands` setter each cost.
    """

    def __init__(self, group: GroupOp, state: FusionState) -> None:
        self.group = group
        self.state = state
        self.block = group.body.block
        self.inner: dict[SSAValue, BlockArgument] = dict(
            zip(group.inputs, self.block.args, strict=True)
        )
        self.order: list[SSAValue] = list(group.inputs)
        self.dirty = False

    def get(self, outer: SSAValue, anchor: Operation) -> SSAValue:
        """The value inside the group standing for `outer`, adding an argument if
        needed; scalar constants are cloned in before `anchor` instead."""
        inner = self.inner.get(outer)
        if inner is not None:
            return inner
        if isinstance(outer, OpResult) and is_scalar_constant(outer.op):
            return _clone_constant(outer.op, self.block, anchor, self.state)
        inner = BlockArgument(outer.type, self.block, len(self.order))
        self.dirty = True
        self.inner[outer] = inner
        self.order.append(outer)
        return inner

    def drop(self, outer: SSAValue, replacement: SSAValue) -> None:
        """`outer` is now computed inside the group: its argument's uses read
        `replacement`."""
        self.inner.pop(outer).replace_all_uses_with(replacement)
        self.dirty = True

    def commit(self, order: Sequence[SSAValue] | None = None) -> None:
        """Write the inputs back, in `order` (default: kept ones, then added ones)."""
        if order is None and not self.dirty:
            return
        inputs = [v for v in (self.order if order is None else order) if v in self.inner]
        args = [self.inner[v] for v in inputs]
        for i, arg in enumerate(args):
            arg.index = i
        set_block_args(self.block, args)
        before = set(self.group.operands)
        self.group.operands = inputs
        for v in inputs:
            if v not in before:
                self.state.note_user(v, self.group)


def _own_results(op: Operation, results: Sequence[OpResult]) -> None:
    """Make `results` (existing values, with their uses) the results of `op`.

    Re-owning a value keeps every use of it valid, where making a new op and
    calling `replace_all_uses_with` costs a step O(uses of all its outputs).
    """
    for i, r in enumerate(results):
        r.op = op
        r.index = i
    op.results = SSAValues(results)


def _grow_outputs(group: GroupOp, yielded: Sequence[SSAValue], results: Sequence[OpResult]) -> None:
    """Append outputs to `group` in place: `yielded` inside, `results` outside."""
    if not yielded:
        return
    yield_op = group.yield_op
    yield_op.operands = [*yield_op.operands, *yielded]
    _own_results(group, [*group.results, *results])


def _revisit_consumer(group: GroupOp, rewriter: PatternRewriter, state: FusionState) -> None:
    """A grown group may now fuse into a later op that tried it before; only its
    first user can take it, so that op alone is queued again (queueing every user of
    every output made a step cost O(uses) and the pass O(n^2))."""
    state.changed(group)
    consumer = state.next_consumer(group)
    if consumer is not None:
        state.hint(consumer, group)
        rewriter.notify_op_modified(consumer)


def wrap_in_group(op: Operation, rewriter: PatternRewriter, state: FusionState) -> GroupOp:
    """`%r = aten.neg %x` -> `%r = fusion.group (%a = %x) { aten.neg %a; fusion.yield }`."""
    inputs = distinct_inputs(op.operands)
    block = Block(arg_types=[v.type for v in inputs])
    group = GroupOp(inputs, [r.type for r in op.results], Region(block))
    rewriter.insert(group, InsertPoint.before(op))
    state.take_position(group, op)
    for old, new in zip(op.results, group.results, strict=True):
        rewriter.replace_all_uses_with(old, new)
    op.detach()
    state.forget(op)
    block.add_op(op)
    block.add_op(YieldOp(*op.results))
    state.grow(group, 0)
    ins = _Inputs(group, state)
    op.operands = [ins.get(v, op) for v in op.operands]
    ins.commit()
    _revisit_consumer(group, rewriter, state)
    return group


def absorb_op(
    group: GroupOp, producer: Operation, rewriter: PatternRewriter, state: FusionState
) -> GroupOp:
    """Move `producer` to the top of `group`; its results used outside become outputs
    (only their uses are redirected)."""
    block = group.body.block
    ins = _Inputs(group, state)
    anchor = block.first_op
    assert anchor is not None
    producer.detach()
    state.forget(producer)
    block.insert_op_before(producer, anchor)
    state.grow(group, 1)
    producer.operands = [ins.get(v, producer) for v in producer.operands]
    for r in producer.results:
        if r in ins.inner:
            ins.drop(r, r)
    ins.commit()
    escaping = [
        r for r in producer.results if any(u.operation.parent_op() is not group for u in r.uses)
    ]
    outer = [OpResult(r.type, group, 0) for r in escaping]
    _grow_outputs(group, escaping, outer)
    for r, new in zip(escaping, outer, strict=True):
        rewriter.replace_uses_with_if(r, new, lambda use: use.operation.parent_op() is not group)
    rewriter.notify_op_modified(group)
    _revisit_consumer(group, rewriter, state)
    return group


def merge_groups(
    group: GroupOp, producer: GroupOp, rewriter: PatternRewriter, state: FusionState
) -> GroupOp:
    """Merge `producer` (an earlier group) into `group`: one group at `group`'s place
    whose body is `producer`'s ops then `group`'s, reading `group`'s inputs then the
    new ones, yielding `group`'s outputs then `producer`'s still used elsewhere.

    The smaller body moves into the larger (union by size), so the pass moves each op
    O(log n) times in all; a kept `producer` moves to `group`'s place, which is legal
    as no use of its outputs lies between the two (`has_user_before`).
    """
    consumer_outputs = list(group.outputs)
    consumer_inputs_ = list(group.inputs)
    if state.size(producer) > state.size(group):
        kept, gone = producer, group
        ins = _Inputs(kept, state)
        yield_op = kept.yield_op
        inner_of: dict[SSAValue, SSAValue] = dict(zip(producer.outputs, yield_op.values, strict=True))
        gone_block = gone.body.block
        for outer, arg in zip(consumer_inputs_, gone_block.args, strict=True):
            inner = inner_of.get(outer)
            arg.replace_all_uses_with(inner if inner is not None else ins.get(outer, yield_op))
        gone_yield = gone.yield_op
        tail = list(gone_yield.values)
        for op in list(gone_block.ops):
            if op is not gone_yield:
                op.detach()
                kept.body.block.insert_op_before(op, yield_op)
        in_consumer = set(consumer_inputs_)
        order = [v for v in consumer_inputs_ if v not in inner_of]
        order += [v for v in producer.inputs if v not in in_consumer]
        escaping = [
            (o, inner_of[o])
            for o in producer.outputs
            if any(u.operation is not gone for u in o.uses)
        ]
        gone_yield.operands = []
        gone.results = SSAValues()
        yield_op.operands = [*tail, *(inner for _, inner in escaping)]
        _own_results(kept, [*consumer_outputs, *(o for o, _ in escaping)])
        kept.attributes = dict(gone.attributes)
        outer_block = gone.parent_block()
        assert outer_block is not None
        kept.detach()
        outer_block.insert_op_before(kept, gone)
        state.take_position(kept, gone)
        state.grow(kept, state.size(gone) - 1)
        state.forget(gone)
        rewriter.erase(gone, safe_erase=False)
        ins.commit(order)
        state.note_users(kept)
    else:
        kept, gone = group, producer
        block = kept.body.block
        ins = _Inputs(kept, state)
        anchor = block.first_op
        assert anchor is not None
        pblock = gone.body.block
        for outer, arg in zip(gone.inputs, pblock.args, strict=True):
            arg.replace_all_uses_with(ins.get(outer, anchor))
        gone_yield = gone.yield_op
        yielded = list(gone_yield.values)
        for op in list(pblock.ops):
            if op is not gone_yield:
                op.detach()
                block.insert_op_before(op, anchor)
        outs = list(gone.outputs)
        for outer, inner in zip(outs, yielded, strict=True):
            if outer in ins.inner:
                ins.drop(outer, inner)
        ins.commit()
        escaping = [(o, i) for o, i in zip(outs, yielded, strict=True) if o.first_use is not None]
        gone_yield.operands = []
        gone.results = SSAValues()
        _grow_outputs(kept, [i for _, i in escaping], [o for o, _ in escaping])
        state.grow(kept, state.size(gone) - 1)
        state.forget(gone)
        rewriter.erase(gone, safe_erase=False)
    rewriter.notify_op_modified(kept)
    _revisit_consumer(kept, rewriter, state)
    return kept
