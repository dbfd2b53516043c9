"""convert-cf-to-llvm: `cf.br`/`cf.cond_br` to `llvm.br`/`llvm.cond_br`.

    cf.cond_br %c, ^bb1(%i : index), ^bb2   ->   llvm.cond_br %c, ^bb1(%i64 : i64), ^bb2

Branch operands are passed as their LLVM-typed values (the block arguments are
converted by `convert-func-to-llvm`).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.passes.convert_arith_to_llvm import to_llvm
from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


class BranchToLLVM(RewritePattern):
    """`cf.br ^bb(%x)` -> `llvm.br ^bb(%x)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, llvm.BrOp(op.successor, *(to_llvm(a, rewriter) for a in op.arguments)))


class CondBranchToLLVM(RewritePattern):
    """`cf.cond_br %c, ^a(%x), ^b` -> `llvm.cond_br %c, ^a(%x), ^b`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /):
        rewriter.replace(
            op,
            llvm.CondBrOp(
                op.cond,
                op.then_block,
                [to_llvm(a, rewriter) for a in op.then_arguments],
                op.else_block,
                [to_llvm(a, rewriter) for a in op.else_arguments],
            ),
        )


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ModulePass):
    """Lowers unstructured control flow to LLVM branches (block arguments keep
    their types until `convert-func-to-llvm` converts the function)."""

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([BranchToLLVM(), CondBranchToLLVM()])
        ).rewrite_module(op)
