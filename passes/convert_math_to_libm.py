"""convert-math-to-libm: a stopgap lowering of `math` ops to LLVM intrinsics and
scalar libm calls (`tanhf`, `erff`, ...), for when `convert-math-to-llvm` (the
vectorizable lowering) is not available. Not part of the default pipelines.

    %y = math.tanh %x : f32   ->   %y = llvm.call @tanhf(%x) : (f32) -> f32
    %y = math.exp %x : f32    ->   %y = llvm.intr.exp(%x) : (f32) -> f32
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.passes.convert_arith_to_llvm import icmp, replace_with_llvm, to_llvm
from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.rewriter import InsertPoint

_INTRINSIC = {
    mathd.ExpOp: llvm.FExpOp, mathd.LogOp: llvm.FLogOp, mathd.SinOp: llvm.FSinOp,
    mathd.CosOp: llvm.FCosOp, mathd.SqrtOp: llvm.FSqrtOp, mathd.FloorOp: llvm.FFloorOp,
    mathd.AbsFOp: llvm.FAbsOp,
}  # fmt: skip
_LIBM = {mathd.TanhOp: "tanh", mathd.ErfOp: "erf", mathd.ExpM1Op: "expm1",
         mathd.Log1pOp: "log1p", mathd.PowFOp: "pow"}  # fmt: skip


class MathToLibm(RewritePattern):
    """`math.<f> %x : f32` -> an LLVM intrinsic or a call of libm's `<f>f`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not op.name.startswith("math."):
            return
        args = [to_llvm(v, rewriter) for v in op.operands]
        t = op.results[0].type
        ops: list[Operation]
        if type(op) in _INTRINSIC:
            cls = _INTRINSIC[type(op)]
            ops = [cls(args[0], t) if cls is llvm.FAbsOp else cls(args[0])]  # type: ignore[call-arg]
        elif type(op) in _LIBM:
            name = _LIBM[type(op)] + ("f" if str(t) == "f32" else "")
            self._declare(op, name, len(args), t, rewriter)
            ops = [llvm.CallOp(name, *args, return_type=t)]
        elif isinstance(op, mathd.RsqrtOp):
            s = llvm.FSqrtOp(args[0])
            one = llvm.ConstantOp(FloatAttr(1.0, t), t)  # type: ignore[arg-type]
            ops = [s, one, llvm.FDivOp(one.result, s.res)]
        elif isinstance(op, mathd.TruncOp):
            ops = [llvm.CallIntrinsicOp(f"llvm.trunc.{t}", args, [t])]
        elif isinstance(op, mathd.CopySignOp):
            ops = [llvm.FCopySignOp(args[0], args[1])]  # type: ignore[call-arg]
        elif isinstance(op, mathd.AbsIOp):
            zero = llvm.ConstantOp(IntegerAttr(0, t), t)  # type: ignore[arg-type]
            neg = llvm.SubOp(zero.result, args[0])
            lt = icmp(args[0], zero.result, "slt")
            ops = [zero, neg, lt, llvm.SelectOp(lt, neg.res, args[0])]
        else:
            return
        replace_with_llvm(op, ops, ops[-1].results[0], rewriter)

    @staticmethod
    def _declare(op: Operation, name: str, n: int, t, rewriter: PatternRewriter) -> None:
        module = op.get_toplevel_object()
        assert isinstance(module, ModuleOp)
        if any(isinstance(o, llvm.FuncOp) and o.sym_name.data == name for o in module.ops):
            return
        decl = llvm.FuncOp(name, llvm.LLVMFunctionType([t] * n, t), linkage=llvm.LinkageAttr("external"))
        rewriter.insert_op(decl, InsertPoint.at_start(module.body.block))


@dataclass(frozen=True)
class ConvertMathToLibmPass(ModulePass):
    """Lowers `math` ops to LLVM intrinsics and scalar libm calls (stopgap)."""

    name = "convert-math-to-libm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MathToLibm()).rewrite_module(op)
