"""`raise-linear`: ATen's spelling of a linear layer on an N-d input back to one
`aten.linear`.

ATen graphs (`torch.export` after decompositions, AOTAutograd) flatten the leading
dims around the matrix product: `view(addmm(b, view(x, [M, K]), t(w)), [..., N])`.
The reshapes stand between the product and the pointwise work that follows it,
and `fuse` does not fuse across a reshape, so the bias add could never join the
activation after it. As one `aten.linear`, `decompose` splits the bias out as it
does for the torch-level import, and the layer's tail fuses the same way:

    %f = aten.reshape %x : tensor<2x4x32xf32> -> tensor<8x32xf32>
    %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<96x32xf32> -> tensor<32x96xf32>
    %m = aten.addmm %b, %f, %t : tensor<96xf32>, tensor<8x32xf32>, tensor<32x96xf32> -> tensor<8x96xf32>
    %r = aten.reshape %m : tensor<8x96xf32> -> tensor<2x4x96xf32>
->
    %r = aten.linear %x, %w, %b : tensor<2x4x32xf32>, tensor<96x32xf32>, tensor<96xf32> -> tensor<2x4x96xf32>

`aten.mm` without a bias raises the same way. The product must have no other use
(it would be computed twice); the flattening reshape may (it is a view).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import (
    AddmmOp,
    LinearOp,
    MmOp,
    ReshapeOp,
    ViewOp,
)
from fusec.passes.concat_matmul_sum import transposed
from fusec.passes.fusion_utils import unswapped
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import VerifyException


def _flattened(v: SSAValue) -> SSAValue | None:
    """`x` when `v` is `x` (rank >= 3) with its leading dims flattened into one."""
    op = v.owner
    if not isinstance(op, ReshapeOp | ViewOp):
        return None
    x = op.input
    src, dst = x.type, v.type
    assert isinstance(src, TensorType) and isinstance(dst, TensorType)
    s, d = list(src.get_shape()), list(dst.get_shape())
    if len(s) < 3 or len(d) != 2 or s[-1] != d[1]:
        return None
    return x


@dataclass
class RaiseFlattenedLinear(RewritePattern):
    """`reshape(addmm(b, reshape(x), t(w)))` -> `linear(x, w, b)` (and `mm` -> no bias)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter) -> None:
        self.raise_linear(op, rewriter)

    def raise_linear(self, op: Operation, rewriter: PatternRewriter) -> None:
        product = op.operands[0].owner
        if isinstance(product, AddmmOp):
            if product.beta is not None or product.alpha is not None:
                return
            bias: SSAValue | None = product.operands[0]
            lhs, rhs = product.operands[1], product.operands[2]
        elif isinstance(product, MmOp):
            bias, lhs, rhs = None, product.operands[0], product.operands[1]
        else:
            return
        if not product.results[0].has_one_use():
            return
        x = _flattened(lhs)
        if x is None or not isinstance(rhs.type, TensorType) or rhs.type.get_num_dims() != 2:
            return
        out = op.results[0].type
        assert isinstance(out, TensorType) and isinstance(x.type, TensorType)
        if list(out.get_shape())[:-1] != list(x.type.get_shape())[:-1]:
            return
        if bias is not None and isinstance(bias.type, TensorType) and bias.type.get_num_dims() != 1:
            return  # `addmm` broadcasts a 2-d bias over rows; `linear` takes a vector
        w = unswapped(rhs)
        new_ops: list[Operation] = []
        if w is None:
            # `x @ w` with `w` stored [K, N] (GPT-2's `Conv1D`): the linear of
            # its transpose, a view that PyTorch's `linear` transposes back.
            w = transposed(rhs, new_ops)
        operands = [x, w] if bias is None else [x, w, bias]
        linear = LinearOp.create(operands=operands, result_types=[out])
        try:
            for new in (*new_ops, linear):
                new.verify()
        except VerifyException:
            for new in (linear, *reversed(new_ops)):
                new.erase()
            return
        rewriter.replace(op, [*new_ops, linear], [linear.results[0]])
        # The product, and the views only it read, are dead now.
        views = [v.owner for v in (lhs, rhs)]
        rewriter.erase(product)
        for view in views:
            if isinstance(view, Operation) and not any(r.uses for r in view.results):
                rewriter.erase(view)


@dataclass
class RaiseFlattenedLinearView(RaiseFlattenedLinear):
    """The same through `aten.view` (what the torch-level import gives)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ViewOp, rewriter: PatternRewriter) -> None:
        self.raise_linear(op, rewriter)


@dataclass(frozen=True)
class RaiseLinearPass(ModulePass):
    """Turn flattened matrix products back into `aten.linear` (see the module
    docstring); `decompose` then splits their biases out so they fuse."""

    name = "raise-linear"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.pattern_rewriter import GreedyRewritePatternApplier

        PatternRewriteWalker(
            GreedyRewritePatternApplier([RaiseFlattenedLinear(), RaiseFlattenedLinearView()]),
            apply_recursively=False,
        ).rewrite_module(op)
