"""`functionalize`: in-place writes to tensors nobody else can see become plain SSA.

The importer turns `y.add_(1)` into the out-of-place op and a write back
(`aten.copy_`), and later reads of `y` read `%y` again. When `%y` is a fresh tensor
(made by an op of this function that does not return a view: no `ShapeOp`, no
opaque op, no function argument) and no op reads it as a view, nothing else can
observe the write: the `aten.copy_` goes, and the reads after it read the written
value instead, so the pointwise chain fuses like any other:

    %y = aten.mul %x, %c : tensor<4xf32>, i64 -> tensor<4xf32>
    %t = aten.add %y, %d : tensor<4xf32>, i64 -> tensor<4xf32>
    aten.copy_ %y, %t : tensor<4xf32>, tensor<4xf32>
    %s = aten.sigmoid %y : tensor<4xf32> -> tensor<4xf32>
    ->
    %y = aten.mul %x, %c : tensor<4xf32>, i64 -> tensor<4xf32>
    %t = aten.add %y, %d : tensor<4xf32>, i64 -> tensor<4xf32>
    %s = aten.sigmoid %t : tensor<4xf32> -> tensor<4xf32>

Writes to function arguments (the caller sees them, as in eager) and to views or
tensors that have views stay; `fuse` never moves a read across them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusec.dialects.aten import CopyOp
from fusec.passes.aliasing import aliases_operands, is_view_op
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


def has_no_observed_alias(value: SSAValue, block: Block) -> bool:
    """Is `value` a fresh tensor of `block` that no op reads as a view?"""
    if not isinstance(value, OpResult) or value.op.parent is not block:
        return False
    if aliases_operands(value.op):
        return False
    return not any(
        is_view_op(use.operation) or aliases_operands(use.operation) for use in value.uses
    )


@dataclass
class ForwardUnaliasedWrite(RewritePattern):
    """Drop a write to an unaliased fresh tensor; the reads after it read the value.

    aten.copy_ %y, %t ; %s = aten.sigmoid %y   ->   %s = aten.sigmoid %t
    """

    _positions: dict[Block, dict[Operation, int]] = field(
        default_factory=dict[Block, dict[Operation, int]]
    )

    def position(self, op: Operation, block: Block) -> int:
        # Numbered once per block: the pass only erases ops, which keeps the order.
        numbers = self._positions.get(block)
        if numbers is None:
            numbers = self._positions[block] = {o: i for i, o in enumerate(block.ops)}
        return numbers[op]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CopyOp, rewriter: PatternRewriter) -> None:
        block = op.parent_block()
        dst, src = op.dst, op.src
        if block is None or src.type != dst.type or not has_no_observed_alias(dst, block):
            return
        here = self.position(op, block)

        def after_write(use_op: Operation) -> bool:
            anc = block.find_ancestor_op_in_block(use_op)
            return anc is not None and anc is not op and self.position(anc, block) > here

        rewriter.replace_uses_with_if(dst, src, lambda use: after_write(use.operation))
        rewriter.erase(op)


@dataclass(frozen=True)
class FunctionalizePass(ModulePass):
    """Remove in-place writes that no alias observes (see the module docstring).

    fusec-opt -p functionalize
    """

    name = "functionalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ForwardUnaliasedWrite(), apply_recursively=False).rewrite_module(op)
