"""`fold-transpose-pairs`: a transpose of a transpose of the same two dims is its
source.

AOTAutograd's backward of `linear` spells the weight `t(t(w))` and each weight
gradient `t(t(mm(...)))` (the forward's `t` and `mm`'s backward `t`, each
transposed once more): ten transposes in an MLP's backward graph that compute
nothing, and each is a step of the host program on every call. Both describe
the source's elements at the source's strides, so the pair goes:

    %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<10x32xf32> -> tensor<32x10xf32>
    %u = aten.transpose %t dim0 = 0 dim1 = 1 : tensor<32x10xf32> -> tensor<10x32xf32>
    %m = aten.mm %g, %u : tensor<4x10xf32>, tensor<10x32xf32> -> tensor<4x32xf32>
->
    %m = aten.mm %g, %w : tensor<4x10xf32>, tensor<10x32xf32> -> tensor<4x32xf32>

(The first transpose stays while it has other uses.) A pair whose source is an
argument of the function and whose result the function returns is kept: the
caller (AOTAutograd) was told that output is a view of the input, not the input.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import TransposeOp
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import BlockArgument
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


def _dims(op: TransposeOp) -> frozenset[int] | None:
    """The two dims `op` swaps, normalized against its input's rank."""
    t = op.input.type
    if not isinstance(t, TensorType):
        return None
    rank = t.get_num_dims()
    dims = [op.dim0.value.data, op.dim1.value.data]
    if any(not -rank <= d < rank for d in dims):
        return None
    return frozenset(d % rank for d in dims)


class FoldTransposePair(RewritePattern):
    """`transpose(transpose(x, a, b), a, b)` -> `x` (in either dim order)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter) -> None:
        inner = op.input.owner
        if not isinstance(inner, TransposeOp):
            return
        dims = _dims(op)
        if dims is None or dims != _dims(inner) or op.result.type != inner.input.type:
            return
        source = inner.input
        if isinstance(source, BlockArgument) and any(
            isinstance(u.operation, func.ReturnOp) for u in op.result.uses
        ):
            return
        rewriter.replace(op, [], [source])
        if not inner.result.uses:
            rewriter.erase(inner)


@dataclass(frozen=True)
class FoldTransposePairsPass(ModulePass):
    """Fold every transpose of a transpose of the same dims into its source
    (see the module docstring).

    fusec-opt -p fold-transpose-pairs
    """

    name = "fold-transpose-pairs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldTransposePair(), apply_recursively=False).rewrite_module(op)
