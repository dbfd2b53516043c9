"""Views move down to their first use before `fuse` walks the program.

ATen graphs take a view of a value as soon as it exists, often to save it for
the backward or to return it. `fuse` moves a producer into its consumer's group
only when no other user of it comes before the consumer (`has_user_before`: the
group's output would be read before it is defined), so such an early view cuts a
chain in two:

    %t = aten.tanh %x                       %t = aten.tanh %x
    %v = aten.view %t       (returned)      %a = aten.add %t, %one
    %a = aten.add %t, %one          ->      %r = aten.mul %h, %a
    %r = aten.mul %h, %a                    %v = aten.view %t
    func.return %r, %v                      func.return %r, %v

(GPT-2's GELU: two kernels before, one after). A view computes nothing, so it
may sit anywhere between its operand and its first user. The exceptions are
`aten.reshape`, which copies when its input's layout needs it, and `aten.cat`,
which always copies: they must not move past an op that may write memory
(`aten.copy_`, an `aten.opaque` call), or they would read what that op wrote.
"""

from __future__ import annotations

from collections.abc import Iterator

from fusec.dialects.aten import CatOp, ReshapeOp
from fusec.dialects.fusion import GroupOp
from fusec.passes.aliasing import is_view_op
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import is_side_effect_free

_COPYING = (ReshapeOp, CatOp)
"""Shape ops that may copy (a reshape of a strided input, always a cat): they
read their sources where they stand."""


def move_views_to_first_use(module: ModuleOp) -> None:
    """Move each view that stands in a chain's way to just before its first user,
    in every block of `module` but the groups' bodies (already fused: their order
    is their kernel's)."""
    blocks: list[Block] = []
    for op in module.walk():
        if not isinstance(op, GroupOp):
            blocks.extend(b for r in op.regions for b in r.blocks)
    for block in blocks:
        _reorder(block)


def _reorder(block: Block) -> None:
    order: list[Operation] = []
    deferred: dict[Operation, None] = {}  # insertion-ordered set
    position = {op: i for i, op in enumerate(block.ops)}

    def in_the_way(view: Operation) -> bool:
        """A later op reads the view's source too (the case `fuse` trips on), or
        the source is a view moved down already."""
        source = view.operands[0].owner
        if isinstance(source, Operation) and source in deferred:
            return True
        here = position[view]
        return any(
            position.get(use.operation, -1) > here and not is_view_op(use.operation)
            for use in view.operands[0].uses
        )

    def emit(op: Operation) -> None:
        for operand in _operands(op):
            owner = operand.owner
            if isinstance(owner, Operation) and owner in deferred:
                del deferred[owner]
                emit(owner)
        order.append(op)

    def release(views: list[Operation]) -> None:
        """Emit these deferred views now (those an earlier one pulled in are gone)."""
        for view in views:
            if view in deferred:
                del deferred[view]
                emit(view)

    for op in list(block.ops):
        if (
            is_view_op(op)
            and op.operands
            and not op.regions
            and block.last_op is not op
            and in_the_way(op)
        ):
            deferred[op] = None
            continue
        if not is_side_effect_free(op):
            release([v for v in deferred if isinstance(v, _COPYING)])
        if op is block.last_op:
            release(list(deferred))
        emit(op)
    release(list(deferred))  # a block without a terminator
    if order == list(block.ops):
        return
    for op in order:
        op.detach()
    block.add_ops(order)


def _operands(op: Operation) -> Iterator[SSAValue]:
    """`op`'s operands and those of the ops nested in it."""
    yield from op.operands
    for region in op.regions:
        for nested in region.walk():
            yield from nested.operands
