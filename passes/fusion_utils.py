"""Bookkeeping and IR surgery shared by the `fuse` patterns.

The fuser must stay near-linear (the seeds' counter-example recomputed its alias
analysis on every step), so nothing here rescans a block per fusion step:

- `FusionState.position` numbers each block once; a group created for a consumer
  takes the consumer's number, and ops only ever leave a block (into a group), so
  the numbers stay a valid topological order for the whole pass.
- `FusionState.has_user_before` keeps, per value, a lazy min-heap of the
  positions of its users; entries whose op left the block are dropped on read, and
  groups that start using the value are pushed, so a query is amortized O(log n).
- Group surgery moves ops (O(1) each) instead of cloning them, edits group
  operands in place, and builds a new `fusion.group` only when outputs are added.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from fusec.dialects.aten import Pointwise
from fusec.dialects.fusion import GroupOp, YieldOp
from fusec.dialects.inference import is_scalar
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint
from xdsl.traits import is_side_effect_free

DEFAULT_ARG_LIMIT = 128
"""Kernel arguments (inputs + outputs) a group may take, as the seeds' NVRTC limit."""


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


def is_consumer(op: Operation) -> bool:
    """Ops a producer can fuse into: pointwise ops and existing groups."""
    return isinstance(op, GroupOp) or is_pointwise(op)


def is_group_input(value: SSAValue) -> bool:
    """Values a group may take as an argument: tensors and Python scalars."""
    return isinstance(value.type, TensorType) or is_scalar(value.type)


@dataclass
class FusionState:
    """Positions and user heaps, kept valid incrementally under the fuse rewrites."""

    arg_limit: int = DEFAULT_ARG_LIMIT
    _pos: dict[Operation, int] = field(default_factory=dict[Operation, int])
    _numbered: set[Block] = field(default_factory=set[Block])
    _users: dict[SSAValue, list[tuple[int, int, Operation]]] = field(
        default_factory=dict[SSAValue, list[tuple[int, int, Operation]]]
    )
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    cloned_constants: set[Operation] = field(default_factory=set[Operation])

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
            if user.parent_block() is not block or self._pos.get(user) is None:
                heapq.heappop(heap)  # stale: fused into a group or erased
                continue
            if user is consumer:
                held.append(heapq.heappop(heap))
                continue
            found = entry[0] < limit
            break
        for entry in held:
            heapq.heappush(heap, entry)
        return found

    def uses_outside(self, value: SSAValue, group: Operation) -> bool:
        """Is `value` used by anything but `group` (or ops inside it)?"""
        return any(
            use.operation is not group and use.operation.parent_op() is not group
            for use in value.uses
        )


# --------------------------------------------------------------------------- surgery


def _input_map(group: GroupOp) -> dict[SSAValue, SSAValue]:
    return dict(zip(group.inputs, group.body.block.args, strict=True))


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
    const: Operation, block: Block, anchor: Operation | None, state: FusionState
) -> SSAValue:
    clone = const.clone()
    if anchor is None:
        block.add_op(clone)
    else:
        block.insert_op_before(clone, anchor)
    state.cloned_constants.add(const)
    return clone.results[0]


def _inner_value(
    v: SSAValue,
    group: GroupOp,
    inputs: dict[SSAValue, SSAValue],
    anchor: Operation | None,
    state: FusionState,
) -> SSAValue:
    """The value inside `group` standing for outer `v`, adding an argument if needed."""
    inner = inputs.get(v)
    if inner is not None:
        return inner
    if isinstance(v, OpResult) and is_scalar_constant(v.op):
        return _clone_constant(v.op, group.body.block, anchor, state)
    inner = group.body.block.insert_arg(v.type, len(group.body.block.args))
    group.operands = [*group.operands, v]
    inputs[v] = inner
    heap = state._users.get(v)  # pyright: ignore[reportPrivateUsage]
    if heap is not None:
        heapq.heappush(heap, (state.position(group), next(state._seq), group))  # pyright: ignore[reportPrivateUsage]
    return inner


def _drop_input(group: GroupOp, outer: SSAValue, replacement: SSAValue) -> None:
    """`outer` is now computed inside the group: its argument reads `replacement`."""
    block = group.body.block
    idx = list(group.inputs).index(outer)
    arg = block.args[idx]
    arg.replace_all_uses_with(replacement)
    block.erase_arg(arg)
    ops = list(group.operands)
    del ops[idx]
    group.operands = ops


def wrap_in_group(op: Operation, rewriter: PatternRewriter, state: FusionState) -> GroupOp:
    """`%r = aten.neg %x` -> `%r = fusion.group (%a = %x) { aten.neg %a; fusion.yield }`."""
    inputs = distinct_inputs(op.operands)
    block = Block(arg_types=[v.type for v in inputs])
    group = GroupOp(inputs, [r.type for r in op.results], Region(block))
    rewriter.insert(group, InsertPoint.before(op))
    state.take_position(group, op)
    for old, new in zip(op.results, group.results, strict=True):
        rewriter.replace_all_uses_with(old, new)
    mapping = _input_map(group)
    op.detach()
    state.forget(op)
    block.add_op(op)
    op.operands = [_inner_value(v, group, mapping, op, state) for v in op.operands]
    block.add_op(YieldOp(*op.results))
    return group


def _rebuild_with_outputs(
    group: GroupOp,
    new_outputs: Sequence[tuple[SSAValue, SSAValue]],
    rewriter: PatternRewriter,
    state: FusionState,
) -> GroupOp:
    """Groups cannot grow results in place: build one with `new_outputs` appended
    (inner value, outer value whose outside uses read it) and retire the old one."""
    if not new_outputs:
        return group
    yield_op = group.yield_op
    yield_op.operands = [*yield_op.operands, *(inner for inner, _ in new_outputs)]
    body = rewriter.move_region_contents_to_new_regions(group.body)
    new = GroupOp(
        list(group.inputs),
        [*group.outputs.types, *(inner.type for inner, _ in new_outputs)],
        body,
    )
    new.attributes |= group.attributes
    rewriter.insert(new, InsertPoint.before(group))
    state.take_position(new, group)
    n_old = len(group.outputs)
    for old, res in zip(group.outputs, new.results[:n_old], strict=True):
        rewriter.replace_all_uses_with(old, res)
    for (_, outer), res in zip(new_outputs, new.results[n_old:], strict=True):
        rewriter.replace_uses_with_if(outer, res, lambda use: use.operation.parent_op() is not new)
    state.forget(group)
    rewriter.erase(group)
    return new


def absorb_op(
    group: GroupOp, producer: Operation, rewriter: PatternRewriter, state: FusionState
) -> GroupOp:
    """Move `producer` to the top of `group`; its results used outside become outputs."""
    block = group.body.block
    mapping = _input_map(group)
    anchor = block.first_op
    producer.detach()
    state.forget(producer)
    assert anchor is not None
    block.insert_op_before(producer, anchor)
    producer.operands = [
        _inner_value(v, group, mapping, producer, state) for v in producer.operands
    ]
    outputs: list[tuple[SSAValue, SSAValue]] = []
    for r in producer.results:
        if r in mapping:
            _drop_input(group, r, r)
            mapping = _input_map(group)
        if any(u.operation.parent_op() is not group for u in r.uses):
            outputs.append((r, r))
    rewriter.notify_op_modified(group)
    return _rebuild_with_outputs(group, outputs, rewriter, state)


def merge_groups(
    group: GroupOp, producer: GroupOp, rewriter: PatternRewriter, state: FusionState
) -> GroupOp:
    """Inline `producer`'s body at the top of `group` (which reads its outputs)."""
    block = group.body.block
    mapping = _input_map(group)
    anchor = block.first_op
    assert anchor is not None
    pblock = producer.body.block
    for outer, arg in zip(list(producer.inputs), list(pblock.args), strict=True):
        arg.replace_all_uses_with(_inner_value(outer, group, mapping, anchor, state))
    yielded = list(producer.yield_op.values)
    for op in list(pblock.ops):
        if isinstance(op, YieldOp):
            continue
        op.detach()
        block.insert_op_before(op, anchor)
    outputs: list[tuple[SSAValue, SSAValue]] = []
    for outer, inner in zip(list(producer.outputs), yielded, strict=True):
        if outer in mapping:
            _drop_input(group, outer, inner)
            mapping = _input_map(group)
        if any(u.operation is not group for u in outer.uses):
            outputs.append((inner, outer))
    group = _rebuild_with_outputs(group, outputs, rewriter, state)
    state.forget(producer)
    rewriter.erase(producer, safe_erase=False)
    rewriter.notify_op_modified(group)
    return group
