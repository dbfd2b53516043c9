"""`slice-pointwise`: a pointwise op read only through slices runs once per slice,
on slices of its operands, so each piece fuses with what reads it.

AOTAutograd writes the backward of Llama's rotary embedding (`rotate_half`,
`cat((-x2, x1))`) as the gradient times `sin`, cut in two halves by slices
that the kernel negating and concatenating them reads. A view of a pointwise
result is a barrier to `fuse`, so the product ran through PyTorch; run on the
halves of its operands, each half is a producer the kernel takes in:

    %m = aten.mul %g, %s : tensor<2x2x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<2x2x8x8xf32>
    %lo = aten.slice %m dim = 3 start = 0 end = 4 step = 1 : tensor<2x2x8x8xf32> -> tensor<2x2x8x4xf32>
    %hi = aten.slice %m dim = 3 start = 4 end = 8 step = 1 : tensor<2x2x8x8xf32> -> tensor<2x2x8x4xf32>
->
    %g0 = aten.slice %g dim = 3 start = 0 end = 4 step = 1 : ...
    %s0 = aten.slice %s dim = 3 start = 0 end = 4 step = 1 : ...
    %lo = aten.mul %g0, %s0 : tensor<2x2x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<2x2x8x4xf32>
    %g1 = aten.slice %g dim = 3 start = 4 end = 8 step = 1 : ...
    %s1 = aten.slice %s dim = 3 start = 4 end = 8 step = 1 : ...
    %hi = aten.mul %g1, %s1 : tensor<2x2x8x4xf32>, tensor<1x1x8x4xf32> -> tensor<2x2x8x4xf32>

It fires when every use of a single-result pointwise op's result is a slice
along one dim of static size, the slices together take no element twice (no
work is repeated), and everything reading the slices can fuse (pointwise ops,
reductions, groups, or a `cat`, whose parts `fuse-concat-exits` writes from the
kernel). An operand that is broadcast along the dim (size 1, or of lower rank)
is read whole; Python scalars stay as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import AtenOp, CatOp, SliceOp
from fusec.dialects.inference import DYNAMIC, normalize_dim, tensor_type
from fusec.passes.fusion_remarks import derived_from
from fusec.passes.fusion_utils import in_group, is_consumer, is_pointwise
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint


def _fusible_reader(op: Operation) -> bool:
    return is_consumer(op) or isinstance(op, CatOp)


def _sliced_operand(
    v: SSAValue, cut: SliceOp, dim: int, rank: int, new_ops: list[Operation]
) -> SSAValue:
    """`v` cut as `cut` cuts the result (dim `dim` of `rank`), or `v` itself
    where it is broadcast along that dim (or not a tensor)."""
    t = v.type
    if not isinstance(t, TensorType):
        return v
    d = dim - (rank - t.get_num_dims())
    if d < 0 or t.get_shape()[d] == 1:
        return v
    piece = SliceOp([v], {**cut.properties, "dim": IntegerAttr(d, i64)})
    new_ops.append(piece)
    return piece.result


@dataclass
class PointwiseBelowSlices(RewritePattern):
    """`slice(f(a, b))` for every use of `f(a, b)` -> `f(slice(a), slice(b))` per slice."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter) -> None:
        value = op.input
        if not isinstance(value, OpResult):
            return
        producer = value.op
        if (
            not isinstance(producer, AtenOp)
            or not is_pointwise(producer)
            or len(producer.results) != 1
            or in_group(producer)
            or in_group(op)
        ):
            return
        t = tensor_type(value.type)
        rank = t.get_num_dims()
        dim = normalize_dim(op.dim.value.data, rank)
        size = t.get_shape()[dim]
        cuts = [u.operation for u in value.uses]
        if size == DYNAMIC or not all(
            isinstance(c, SliceOp)
            and normalize_dim(c.dim.value.data, rank) == dim
            and c.parent_block() is producer.parent_block()
            and all(_fusible_reader(u.operation) for u in c.result.uses)
            for c in cuts
        ):
            return
        slices = [c for c in cuts if isinstance(c, SliceOp)]
        taken = [
            i
            for s in slices
            for i in range(size)[s.start.value.data : s.end.value.data : s.step.value.data]
        ]
        if len(taken) != len(set(taken)):
            return  # a piece taken twice would be computed twice
        for s in slices:
            new_ops: list[Operation] = []
            operands = [_sliced_operand(v, s, dim, rank, new_ops) for v in producer.operands]
            piece = type(producer).create(
                operands=operands,
                properties=dict(producer.properties),
                attributes=dict(producer.attributes),
                result_types=[s.result.type],
            )
            piece.verify()
            new_ops.append(piece)
            derived_from(new_ops, producer)
            rewriter.insert(new_ops, InsertPoint.before(s))
            rewriter.replace(s, [], [piece.results[0]])
        rewriter.erase(producer)


@dataclass(frozen=True)
class SlicePointwisePass(ModulePass):
    """A pointwise op read only through slices runs once per slice, on slices of
    its operands (see the module docstring).

    fusec-opt -p slice-pointwise
    """

    name = "slice-pointwise"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(PointwiseBelowSlices(), apply_recursively=False).rewrite_module(op)
