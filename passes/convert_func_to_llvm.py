"""convert-func-to-llvm: `func.func`/`func.return` to `llvm.func`/`llvm.return`,
converting the types of every block argument (index -> i64, memref -> ptr).

Pointer arguments are `noalias`: a kernel's outputs are freshly allocated and its
inputs are only read, so LLVM may vectorize without runtime alias checks.

    func.func @k(%n: index, %p: memref<?xf32>) attributes {fusion.kernel} { ... }
    ->
    llvm.func @k(%n: i64, %p: !llvm.ptr {llvm.noalias}) { ... }
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.passes.convert_arith_to_llvm import llvm_type
from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    TensorType,
    UnitAttr,
    UnrealizedConversionCastOp,
)
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


class FuncToLLVM(RewritePattern):
    """`func.func @k(...)` -> `llvm.func @k(...)` with converted argument types."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /):
        if any(
            isinstance(t, TensorType)
            for t in (*op.function_type.inputs.data, *op.function_type.outputs.data)
        ):
            return  # host code over tensors stays as it is
        ins = [llvm_type(t) for t in op.function_type.inputs.data]
        outs = [llvm_type(t) for t in op.function_type.outputs.data]
        fn_type = llvm.LLVMFunctionType(ins, outs[0] if outs else None)
        arg_attrs = ArrayAttr(
            [
                DictionaryAttr({"llvm.noalias": UnitAttr()})
                if isinstance(t, llvm.LLVMPointerType)
                else DictionaryAttr({})
                for t in ins
            ]
        )
        body = rewriter.move_region_contents_to_new_regions(op.body)
        for block in body.blocks:
            for arg in block.args:
                new_t = llvm_type(arg.type)
                if new_t != arg.type:
                    rewriter.replace_value_with_new_type(arg, new_t)
        new = llvm.FuncOp(
            op.sym_name.data,
            fn_type,
            linkage=llvm.LinkageAttr("external"),
            body=body,
            other_props={"arg_attrs": arg_attrs},
        )
        rewriter.replace(op, new)


class ReturnToLLVM(RewritePattern):
    """`func.return %x` -> `llvm.return %x`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /):
        if isinstance(op.parent_op(), llvm.FuncOp):
            rewriter.replace(op, llvm.ReturnOp(op.arguments[0] if op.arguments else None))


class FoldIdentityCast(RewritePattern):
    """`unrealized_conversion_cast %x : i64 to i64` -> `%x` (left behind when a
    block argument's type was converted under its cast)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: UnrealizedConversionCastOp, rewriter: PatternRewriter, /):
        if len(op.inputs) == 1 and op.inputs[0].type == op.results[0].type:
            rewriter.replace(op, [], [op.inputs[0]])


@dataclass(frozen=True)
class ConvertFuncToLLVMPass(ModulePass):
    """Lowers functions to `llvm.func`; see the module docstring."""

    name = "convert-func-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([FuncToLLVM(), ReturnToLLVM(), FoldIdentityCast()])
        ).rewrite_module(op)
