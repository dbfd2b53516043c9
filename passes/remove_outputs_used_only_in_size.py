"""`remove-outputs-used-only-in-size`: a group output that is read only for its size
is not written at all (the seeds' `removeOutputsUsedOnlyInSize`).

The size of a pointwise result is the broadcast of its tensor inputs' sizes, so
`aten.size` of the output becomes `fusion.broadcast_sizes` (the seeds'
`prim::BroadcastSizes`) of `aten.size` of the group inputs it is computed from, and
the kernel loses an output:

    %r:2 = fusion.group (%a = %x, %b = %y) : (tensor<4x1xf32>, tensor<3xf32>)
        -> (tensor<4x3xf32>, tensor<4x3xf32>) {
      %z = aten.mul %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
      %w = aten.tanh %z : tensor<4x3xf32> -> tensor<4x3xf32>
      fusion.yield %w, %z : tensor<4x3xf32>, tensor<4x3xf32>
    }
    %s = aten.size %r#1 : tensor<4x3xf32> -> !aten.size<2>
    ->
    %r = fusion.group (%a = %x, %b = %y) : (tensor<4x1xf32>, tensor<3xf32>)
        -> (tensor<4x3xf32>) {
      %z = aten.mul %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
      %w = aten.tanh %z : tensor<4x3xf32> -> tensor<4x3xf32>
      fusion.yield %w : tensor<4x3xf32>
    }
    %sx = aten.size %x : tensor<4x1xf32> -> !aten.size<2>
    %sy = aten.size %y : tensor<3xf32> -> !aten.size<1>
    %s = fusion.broadcast_sizes %sx, %sy : !aten.size<2>, !aten.size<1> -> !aten.size<2>

An output computed through anything but pointwise ops (a chunk piece, a view), or
whose static shape is not the broadcast of its inputs' shapes, is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import Pointwise, SizeOp
from fusec.dialects.fusion import BroadcastSizesOp, GroupOp
from fusec.dialects.inference import broadcast_shapes, is_scalar
from xdsl.context import Context
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import BlockArgument, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import VerifyException


def broadcast_sources(group: GroupOp, value: SSAValue) -> list[SSAValue] | None:
    """The group inputs whose sizes broadcast to `value`'s size (the tensor leaves of
    its pointwise cone), or None when `value`'s size is not that broadcast."""
    leaves: dict[int, None] = {}
    seen: set[SSAValue] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if isinstance(v, BlockArgument):
            if isinstance(v.type, TensorType):
                leaves[v.index] = None
            elif not is_scalar(v.type):
                return None
        elif isinstance(v, OpResult) and v.op.has_trait(Pointwise):
            stack.extend(v.op.operands)
        elif not (isinstance(v, OpResult) and isinstance(v.op, ConstantOp) and is_scalar(v.type)):
            return None
    sources = [group.inputs[i] for i in sorted(leaves)]
    shapes = [s.type.get_shape() for s in sources if isinstance(s.type, TensorType)]
    out = value.type
    if not sources or not isinstance(out, TensorType):
        return None
    try:
        if broadcast_shapes(*shapes) != tuple(out.get_shape()):
            return None
    except VerifyException:
        return None
    return sources


def size_only(result: SSAValue) -> bool:
    """Is `result` used, and only by `aten.size`?"""
    return result.first_use is not None and all(
        isinstance(u.operation, SizeOp) for u in result.uses
    )


@dataclass
class ReplaceSizeOnlyOutputs(RewritePattern):
    """Drop group outputs used only by `aten.size`; their sizes are broadcasts of
    input sizes.

        %r:2 = fusion.group (...) { ... fusion.yield %w, %z } ; aten.size %r#1
        -> %r = fusion.group (...) { ... fusion.yield %w } ;
           fusion.broadcast_sizes (aten.size %x), (aten.size %y)
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, group: GroupOp, rewriter: PatternRewriter) -> None:
        yielded = list(group.yield_op.values)
        dropped: set[int] = set()
        for i, result in enumerate(group.results):
            if not size_only(result):
                continue
            sources = broadcast_sources(group, yielded[i])
            if sources is None:
                continue
            for use in list(result.uses):
                size_op = use.operation
                new_ops: list[Operation] = [SizeOp(s) for s in sources]
                if len(new_ops) > 1:
                    new_ops.append(BroadcastSizesOp([o.results[0] for o in new_ops]))
                rewriter.replace(size_op, new_ops)
            dropped.add(i)
        if not dropped:
            return
        kept = [i for i in range(len(yielded)) if i not in dropped]
        group.yield_op.operands = [yielded[i] for i in kept]
        body = rewriter.move_region_contents_to_new_regions(group.body)
        new = GroupOp(group.inputs, [group.results[i].type for i in kept], body)
        new.attributes = dict(group.attributes)
        results: list[SSAValue | None] = [None] * len(yielded)
        for j, i in enumerate(kept):
            results[i] = new.results[j]
        rewriter.replace(group, new, results)
        # What computed only the dropped outputs is dead now; erased through the
        # rewriter (users first), so the walker's worklist forgets those ops.
        for op in reversed(list(new.body.block.ops)[:-1]):
            if is_side_effect_free(op) and not any(r.uses for r in op.results):
                rewriter.erase(op)


@dataclass(frozen=True)
class RemoveOutputsUsedOnlyInSizePass(ModulePass):
    """Drop group outputs read only for their size (see the module docstring).

    fusec-opt -p remove-outputs-used-only-in-size
    """

    name = "remove-outputs-used-only-in-size"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ReplaceSizeOnlyOutputs(), apply_recursively=False).rewrite_module(op)
