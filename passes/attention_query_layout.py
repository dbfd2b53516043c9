"""`attention-query-layout`: a kernel computing attention's query writes it in
`[batch, seq, heads, dim]` order, the layout eager gives it, so the attention
output read back as `[batch, seq, heads * dim]` is a view, not a copy.

PyTorch's CPU attention (`_scaled_dot_product_flash_attention_for_cpu`, what
`F.scaled_dot_product_attention` runs on float CPU tensors) lays its output out
as its query is laid out. Eager's query is a pointwise result (Llama's rotary
embedding) of `linear(x).view(b, t, h, d).transpose(1, 2)`, and a pointwise op
keeps its operands' layout, so the output is `[b, t, h, d]` in memory and
`out.transpose(1, 2).reshape(b, t, h * d)` before the output projection is a
view. A kernel writes its results contiguous: the query was `[b, h, t, d]` in
memory, and the reshape copied the attention output (an ATen call and a copy
per layer). Here the group computes the query transposed, reading its operands
through transposes (views of its inputs, free in the kernel), and the query is
the transpose of that result (a view the host makes from sizes and strides):

    %q = fusion.group (%a = %x, %b = %c) : (tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32>) -> (tensor<2x4x8x8xf32>) {
      %m = aten.mul %a, %b : tensor<2x4x8x8xf32>, tensor<1x1x8x8xf32> -> tensor<2x4x8x8xf32>
      fusion.yield %m : tensor<2x4x8x8xf32>
    }
    %o = aten.scaled_dot_product_attention %q, %k, %v ...
->
    %t = fusion.group (%a = %x, %b = %c) : (...) -> (tensor<2x8x4x8xf32>) {
      %at = aten.transpose %a dim0 = 1 dim1 = 2 : tensor<2x4x8x8xf32> -> tensor<2x8x4x8xf32>
      %bt = aten.transpose %b dim0 = 1 dim1 = 2 : tensor<1x1x8x8xf32> -> tensor<1x8x1x8xf32>
      %m = aten.mul %at, %bt : tensor<2x8x4x8xf32>, tensor<1x8x1x8xf32> -> tensor<2x8x4x8xf32>
      fusion.yield %m : tensor<2x8x4x8xf32>
    }
    %q = aten.transpose %t dim0 = 1 dim1 = 2 : tensor<2x8x4x8xf32> -> tensor<2x4x8x8xf32>
    %o = aten.scaled_dot_product_attention %q, %k, %v ...

It applies to a group of pointwise ops (and views of its inputs) whose results
are all 4-d and of static shapes (the host makes the transpose without a
PyTorch call only where it knows the sizes), when one of them is the query of
an attention op (`aten.scaled_dot_product_attention`, or the opaque calls
Dynamo's and AOTAutograd's graphs make). Operands of lower rank are read as
broadcast does, with leading dims of size 1.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import AtenOp, OpaqueOp, TransposeOp, UnsqueezeOp
from fusec.dialects.fusion import GroupOp, YieldOp
from fusec.dialects.inference import DYNAMIC
from fusec.passes.aliasing import is_view_op
from fusec.passes.fusion_utils import is_pointwise
from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

ATTENTION_TARGETS = frozenset(
    {
        "aten.scaled_dot_product_attention",
        "torch._C._nn.scaled_dot_product_attention",
        "aten._scaled_dot_product_flash_attention_for_cpu.default",
    }
)
"""Attention ops whose output takes its query's layout: the op fusec models and
the calls Dynamo's torch-level graphs and AOTAutograd's graphs make."""

_RANK = 4


def _is_attention(op: Operation) -> bool:
    if isinstance(op, OpaqueOp):
        return op.target.data in ATTENTION_TARGETS
    return op.name in ATTENTION_TARGETS


def _swapped(t: TensorType) -> TensorType:
    """`t`, padded to rank 4 as broadcasting reads it, with dims 1 and 2 swapped."""
    shape = [1] * (_RANK - t.get_num_dims()) + list(t.get_shape())
    shape[1], shape[2] = shape[2], shape[1]
    return TensorType(t.get_element_type(), shape)


def _transposable(group: GroupOp) -> bool:
    """Pointwise ops and views of inputs only, yielding 4-d results of static
    shapes that its pointwise ops compute."""
    for t in group.result_types:
        if not isinstance(t, TensorType) or t.get_num_dims() != _RANK:
            return False
        if DYNAMIC in t.get_shape():
            return False
    for op in group.body.block.ops:
        if isinstance(op, YieldOp):
            if any(not isinstance(v, OpResult) or is_view_op(v.op) for v in op.operands):
                return False
            continue
        if isinstance(op, arith.ConstantOp):
            continue
        if is_view_op(op):
            if any(isinstance(v, OpResult) and not is_view_op(v.op) for v in op.operands):
                return False  # a view of a computed value
            continue
        if not isinstance(op, AtenOp) or not is_pointwise(op) or len(op.results) != 1:
            return False
        t = op.results[0].type
        if not isinstance(t, TensorType) or t.get_num_dims() > _RANK:
            return False
    return True


def _read_swapped(v: SSAValue, new_ops: list[Operation]) -> SSAValue:
    """`v` (an input or a view of one) padded to rank 4 and transposed."""
    t = v.type
    assert isinstance(t, TensorType)
    for _ in range(_RANK - t.get_num_dims()):
        pad = UnsqueezeOp([v], {"dim": IntegerAttr(0, i64)})
        new_ops.append(pad)
        v = pad.result
    swap = TransposeOp([v], {"dim0": IntegerAttr(1, i64), "dim1": IntegerAttr(2, i64)})
    new_ops.append(swap)
    return swap.result


def _swapped_group(group: GroupOp) -> GroupOp:
    """`group` computing its results with dims 1 and 2 swapped."""
    old = group.body.block
    block = Block(arg_types=[a.type for a in old.args])
    new: dict[SSAValue, SSAValue] = dict(zip(old.args, block.args, strict=True))
    leaves: set[SSAValue] = set(old.args)
    swapped: dict[SSAValue, SSAValue] = {}
    ops: list[Operation] = []

    def computed(v: SSAValue) -> SSAValue:
        """What a pointwise op of the new body reads for `v`."""
        if v not in leaves or not isinstance(v.type, TensorType):
            return new[v]
        if v not in swapped:
            swapped[v] = _read_swapped(new[v], ops)
        return swapped[v]

    for op in old.ops:
        if isinstance(op, YieldOp):
            ops.append(YieldOp(*[computed(v) for v in op.operands]))
            break
        if is_view_op(op) or isinstance(op, arith.ConstantOp):
            clone = op.clone()
            for i, v in enumerate(op.operands):
                clone.operands[i] = new[v]
            ops.append(clone)
            new.update(zip(op.results, clone.results, strict=True))
            leaves.update(op.results)
            continue
        t = op.results[0].type
        assert isinstance(t, TensorType)
        clone = type(op).create(
            operands=[computed(v) for v in op.operands],
            properties=dict(op.properties),
            attributes=dict(op.attributes),
            result_types=[_swapped(t)],
        )
        ops.append(clone)
        new[op.results[0]] = clone.results[0]
    block.add_ops(ops)
    result_types = [_swapped(t) for t in group.result_types]  # type: ignore[arg-type]
    return GroupOp(list(group.inputs), result_types, Region(block))


@dataclass
class TransposeQueryGroup(RewritePattern):
    """`attention(group(...), k, v)` -> `attention(transpose(group'(...)), k, v)`,
    `group'` computing the query with dims 1 and 2 swapped."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GroupOp, rewriter: PatternRewriter) -> None:
        queries = [
            r for r in op.results for u in r.uses if _is_attention(u.operation) and u.index == 0
        ]
        if not queries or not _transposable(op):
            return
        swapped = _swapped_group(op)
        swapped.verify()
        rewriter.insert(swapped, InsertPoint.before(op))
        backs: list[SSAValue] = []
        for r in swapped.results:
            back = TransposeOp([r], {"dim0": IntegerAttr(1, i64), "dim1": IntegerAttr(2, i64)})
            rewriter.insert(back, InsertPoint.before(op))
            backs.append(back.result)
        rewriter.replace(op, [], backs)


@dataclass(frozen=True)
class AttentionQueryLayoutPass(ModulePass):
    """A group computing attention's query writes it in `[b, t, h, d]` order and
    the query is its transpose (see the module docstring).

    fusec-opt -p attention-query-layout
    """

    name = "attention-query-layout"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(TransposeQueryGroup(), apply_recursively=False).rewrite_module(op)
