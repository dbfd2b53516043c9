"""`sink-views`: pointwise ops move above the views (reshapes) that feed them, so
the pointwise work on both sides of a view can fuse.

ATen graphs (AOTAutograd, torch.export) flatten a `[b, t, c]` activation to
`[b*t, c]` around every matmul: the bias add is on `[b*t, c]`, the activation or
residual add after it on `[b, t, c]`, and the `aten.view` between them is a
barrier to `fuse`. A view only renames indices of the same elements in the same
order, so a pointwise op may run on the view's source instead, its other tensor
operands viewed to that shape, and the view applied to its result:

    %m = aten.view %a : tensor<16x32xf32> -> tensor<2x8x32xf32>
    %r = aten.add %x, %m : tensor<2x8x32xf32>, tensor<2x8x32xf32> -> tensor<2x8x32xf32>
    ->
    %v = aten.view %x : tensor<2x8x32xf32> -> tensor<16x32xf32>
    %s = aten.add %v, %a : tensor<16x32xf32>, tensor<16x32xf32> -> tensor<16x32xf32>
    %r = aten.view %s : tensor<16x32xf32> -> tensor<2x8x32xf32>

Only ops without broadcasting between tensors qualify (every tensor operand has
the result's shape; Python scalars are fine), reading at least one view of a
pointwise result or a reduction (a view of an argument or of a matrix product
has nothing above it to fuse with: moving the ops after it would only split them
between two shapes); all views among the operands must share one source shape.
A view with other readers stays for them (views cost nothing). The runtime runs `aten.view` as a reshape, so a
viewed operand of any layout is right.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import ReshapeOp, ViewOp
from fusec.dialects.inference import tensor_type
from fusec.passes.fusion_utils import in_group, is_pointwise
from fusec.passes.lowering.reduction_domain import is_fusible_reduction
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

_VIEWS = (ViewOp, ReshapeOp)


def _view_of(v: SSAValue) -> Operation | None:
    return v.op if isinstance(v, OpResult) and isinstance(v.op, _VIEWS) else None


def _pointwise_result(v: SSAValue) -> bool:
    return isinstance(v, OpResult) and is_pointwise(v.op)


def _fusible_result(v: SSAValue) -> bool:
    """A result `fuse` can group with what reads it: pointwise, or a reduction
    (an LSTM's per-step bias gradients, summed across the steps)."""
    return isinstance(v, OpResult) and (is_pointwise(v.op) or is_fusible_reduction(v.op))


@dataclass
class MovePointwiseAboveView(RewritePattern):
    """`op(view(a), x)` -> `view(op(a, view(x)))` for a pointwise `op` without
    broadcasting (module docstring).

    %m = aten.view %a : tensor<16xf32> -> tensor<4x4xf32>
    %r = aten.gelu %m : tensor<4x4xf32> -> tensor<4x4xf32>
    -> %g = aten.gelu %a : tensor<16xf32> -> tensor<16xf32>
       %r = aten.view %g : tensor<16xf32> -> tensor<4x4xf32>

    Operands that are not views get a view to the source shape only when that
    buys a fusion and cannot be undone: they are not pointwise results, and some
    view read is of one (otherwise `add(view(a), b)` and `add(a, view(b))` would
    rewrite into each other forever).
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if in_group(op) or not is_pointwise(op) or len(op.results) != 1:
            return
        result_type = op.results[0].type
        assert isinstance(result_type, TensorType)
        shape = result_type.get_shape()
        tensors = [v for v in op.operands if isinstance(v.type, TensorType)]
        if any(tensor_type(t.type).get_shape() != shape for t in tensors):
            return
        views = {w: None for t in tensors if (w := _view_of(t)) is not None}
        if not views:
            return
        sources = {tuple(tensor_type(v.operands[0].type).get_shape()) for v in views}
        if len(sources) != 1:
            return
        (source,) = sources
        if not any(_fusible_result(v.operands[0]) for v in views):
            return  # a view of an argument or a product: no fusion to gain above it
        others = [t for t in tensors if _view_of(t) is None]
        if any(_pointwise_result(t) for t in others):
            return
        operands: list[SSAValue] = []
        for v in op.operands:
            view = _view_of(v)
            if view is not None:
                operands.append(view.operands[0])
            elif isinstance(v.type, TensorType):
                reshaped = ViewOp(v, list(source))
                rewriter.insert(reshaped, InsertPoint.before(op))
                operands.append(reshaped.results[0])
            else:
                operands.append(v)
        moved = type(op).create(
            operands=operands,
            result_types=[TensorType(result_type.get_element_type(), list(source))],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
        )
        back = ViewOp(moved.results[0], list(shape))
        moved.results[0].name_hint = op.results[0].name_hint
        rewriter.replace(op, [moved, back], [back.results[0]])
        for view in views:
            if not any(r.uses for r in view.results):  # views with other readers stay
                rewriter.erase(view)


@dataclass(frozen=True)
class SinkViewsPass(ModulePass):
    """Moves views below the pointwise ops that read them (module docstring).

    fusec-opt -p sink-views model.mlir
    """

    name = "sink-views"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MovePointwiseAboveView()).rewrite_module(op)
