"""`decompose`: split the bias add out of `aten.linear` and `aten.addmm`, so it is a
pointwise `aten.add` that fuses with what follows (the seeds' `decomposeLinearOps`).
The matrix product stays a barrier that runs through PyTorch; a `linear` without
bias is left alone.

    %r = aten.linear %x, %w, %b : tensor<8x32xf32>, tensor<64x32xf32>, tensor<64xf32> -> tensor<8x64xf32>
    ->
    %m = aten.linear %x, %w : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
    %r = aten.add %m, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import AddmmOp, AddOp, LinearOp, MmOp, MulOp, number_value
from fusec.passes.fusion_remarks import derived_from
from xdsl.context import Context
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


@dataclass
class SplitLinearBias(RewritePattern):
    """`linear(x, w, b)` -> `linear(x, w) + b`.

    %r = aten.linear %x, %w, %b : ... -> tensor<8x64xf32>
    -> %m = aten.linear %x, %w : ... ; %r = aten.add %m, %b : ...
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: LinearOp, rewriter: PatternRewriter) -> None:
        if op.bias is None:
            return
        product = LinearOp.create(operands=[op.input, op.weight], result_types=[op.result.type])
        add = AddOp(product, op.bias)
        if add.result.type != op.result.type:
            add.erase()
            product.erase()
            return
        derived_from([product, add], op)
        rewriter.replace(op, [product, add])


@dataclass
class SplitAddmm(RewritePattern):
    """`addmm(bias, a, b, beta, alpha)` -> `beta * bias + alpha * mm(a, b)`, with the
    scaling left out where it is 1 and the bias where beta is 0 (PyTorch then ignores
    it, NaNs included).

        %r = aten.addmm %c, %a, %b beta = 2.0 : f64 alpha = 3.0 : f64 : ...
        ->
        %m = aten.mm %a, %b : ...
        %s = arith.constant 2.0 : f64
        %t = aten.mul %c, %s : ...
        %r = aten.add %t, %m alpha = 3.0 : f64 : ...
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddmmOp, rewriter: PatternRewriter) -> None:
        new_ops: list[Operation] = []

        def scaled(value: SSAValue, factor: FloatAttr | IntegerAttr) -> SSAValue:
            const = ConstantOp(factor)
            mul = MulOp(value, const)
            new_ops.extend([const, mul])
            return mul.result

        product = MmOp(op.lhs, op.rhs)
        new_ops.append(product)
        beta = number_value(op.beta, 1)
        alpha = number_value(op.alpha, 1)
        if beta == 0:
            result: SSAValue = product.result
            if op.alpha is not None and alpha != 1:
                result = scaled(product.result, op.alpha)
        else:
            bias = op.bias if op.beta is None or beta == 1 else scaled(op.bias, op.beta)
            add = AddOp(bias, product, alpha=None if alpha == 1 else op.alpha)
            new_ops.append(add)
            result = add.result
        if result.type != op.result.type:
            for new in reversed(new_ops):
                new.erase()
            return
        derived_from(new_ops, op)
        rewriter.replace(op, new_ops, [result])


@dataclass(frozen=True)
class DecomposePass(ModulePass):
    """Split bias adds out of matrix products (see the module docstring).

    fusec-opt -p decompose
    """

    name = "decompose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([SplitLinearBias(), SplitAddmm()])
        ).rewrite_module(op)
