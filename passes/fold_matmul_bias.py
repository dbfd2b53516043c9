"""`fold-matmul-bias`: put a bias add that `fuse` left alone back into its matrix
product (`linear` with a bias, `addmm`).

`decompose` splits every bias out of `linear`/`addmm` so it can fuse with the
pointwise work after it. Where nothing fused with it (a projection whose result
is split or reshaped, the last layer before a loss), the split only costs: the
product writes its result, then the add reads and writes it again, where
PyTorch's `addmm` starts the product from the bias in one pass. So after
fusion, a bias add outside any group folds back:

    %m = aten.linear %x, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %r = aten.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
->
    %r = aten.linear %x, %w, %b : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>

    %m = aten.mm %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
    %r = aten.add %c, %m alpha = 2.0 : f64 : tensor<4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
->
    %r = aten.addmm %c, %a, %b alpha = 2.0 : f64 : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>

The product must have no other use (it would be computed twice), the bias a
vector of the result's dtype (PyTorch's `addmm` does not promote; the verifier
checks it broadcasts), and the add's result the product's type.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import AddmmOp, AddOp, LinearOp, MmOp, number_value
from fusec.dialects.fusion import GroupOp
from fusec.passes.fusion_remarks import derived_from, replaced_outside_groups
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


def _in_group(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, GroupOp):
            return True
        parent = parent.parent_op()
    return False


def _bias_fits(bias: SSAValue, result: TensorType) -> bool:
    """`bias` is a vector (or 0-d) tensor of `result`'s dtype: what `decompose`
    splits out. (A full-size addend, a residual say, would fold too, but the
    product would then round differently from eager's separate add.)"""
    t = bias.type
    return (
        isinstance(t, TensorType)
        and t.get_element_type() == result.get_element_type()
        and t.get_num_dims() <= 1
    )


def _sole_product(v: SSAValue, kind: type[Operation]) -> Operation | None:
    """The `kind` op defining `v` when the add is its only use."""
    op = v.owner
    if isinstance(op, kind) and v.has_one_use():
        return op
    return None


@dataclass
class FoldBiasAdd(RewritePattern):
    """`linear(x, w) + b` -> `linear(x, w, b)`; `c + alpha * mm(a, b)` ->
    `addmm(c, a, b, alpha)` (and `mm(a, b) + c`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter) -> None:
        out = op.result.type
        if not isinstance(out, TensorType) or _in_group(op):
            return
        unit = number_value(op.alpha, 1) == 1
        # alpha scales the right operand, so only a product on the right takes one.
        candidates = [(op.rhs, op.lhs)] + ([(op.lhs, op.rhs)] if unit else [])
        for product_value, bias in candidates:
            if product_value.type != out or not _bias_fits(bias, out):
                continue
            new: Operation | None = None
            linear = _sole_product(product_value, LinearOp) if unit else None
            if isinstance(linear, LinearOp) and linear.bias is None:
                new = LinearOp.create(
                    operands=[linear.input, linear.weight, bias], result_types=[out]
                )
            mm = _sole_product(product_value, MmOp)
            if isinstance(mm, MmOp):
                new = AddmmOp.create(
                    operands=[bias, mm.lhs, mm.rhs],
                    result_types=[out],
                    properties={} if unit or op.alpha is None else {"alpha": op.alpha},
                )
            if new is None:
                continue
            try:
                new.verify()
            except VerifyException:
                new.erase()
                continue
            product = product_value.owner
            assert isinstance(product, Operation)
            derived_from([new], product)
            replaced_outside_groups(new, [op, product])
            rewriter.replace(op, new)
            rewriter.erase(product)
            return


@dataclass(frozen=True)
class FoldMatmulBiasPass(ModulePass):
    """Fold bias adds left outside groups back into their products (see the
    module docstring).

    fusec-opt -p decompose,fuse,fold-matmul-bias
    """

    name = "fold-matmul-bias"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldBiasAdd(), apply_recursively=False).rewrite_module(op)
