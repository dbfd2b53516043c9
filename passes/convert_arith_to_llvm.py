"""convert-arith-to-llvm: `arith` ops to `llvm` dialect ops.

Types follow MLIR's LLVM type converter: `index` is i64, `bf16` is carried as
its bits in i16 (llvmlite has no bfloat), memrefs are `!llvm.ptr`. Values whose
type changes cross the boundary through `builtin.unrealized_conversion_cast`,
removed by `reconcile-unrealized-casts` once everything is lowered.

    %c = arith.addf %a, %b : f32           ->  %c = llvm.fadd %a, %b : f32
    %m = arith.maximumf %a, %b : f32       ->  fcmp ogt + select, NaN kept by fcmp uno
    %f = arith.extf %h : bf16 to f32       ->  zext i16 -> i32, shl 16, bitcast
    %i = arith.fptosi %f : f32 to i32      ->  llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    UnrealizedConversionCastOp,
    VectorType,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

# xDSL's instances, typed `IntegerType[Literal[64], ...]`, which `IntegerAttr` takes.
I64 = i64
I32 = i32
I16 = i16
I8 = i8
I1 = i1
_F32 = Float32Type()


def llvm_type(t: Attribute) -> Attribute:
    """The LLVM-dialect type a loop-level type lowers to."""
    if isinstance(t, IndexType):
        return I64
    if isinstance(t, BFloat16Type):
        return I16
    if isinstance(t, MemRefType):
        return llvm.LLVMPointerType()
    if isinstance(t, VectorType) and isinstance(t.element_type, BFloat16Type):
        return VectorType(I16, t.get_shape())
    return t


def memory_type(t: Attribute) -> Attribute:
    """How an element type sits in memory (bool is a byte, as in PyTorch)."""
    return I8 if t == I1 else llvm_type(t)


def to_llvm(value: SSAValue, rewriter: PatternRewriter) -> SSAValue:
    """`value` as its LLVM type, casting at the current insertion point if needed."""
    target = llvm_type(value.type)
    if target == value.type:
        return value
    if isinstance(value.owner, UnrealizedConversionCastOp) and value.owner.inputs[0].type == target:
        return value.owner.inputs[0]
    cast = UnrealizedConversionCastOp.get([value], [target])
    rewriter.insert(cast)
    return cast.results[0]


def replace_with_llvm(
    op: Operation, new_ops: Sequence[Operation], result: SSAValue, rewriter: PatternRewriter
) -> None:
    """Replaces `op` by `new_ops` computing `result` (an LLVM-typed value)."""
    old_t = op.results[0].type
    ops = list(new_ops)
    if result.type != old_t:
        back = UnrealizedConversionCastOp.get([result], [old_t])
        ops.append(back)
        result = back.results[0]
    rewriter.replace(op, ops, [result])


def fcmp(lhs: SSAValue, rhs: SSAValue, pred: str) -> llvm.FCmpOp:
    return llvm.FCmpOp(lhs, rhs, pred)


def icmp(lhs: SSAValue, rhs: SSAValue, pred: str) -> llvm.ICmpOp:
    flag = list(llvm.ICmpPredicateFlag).index(llvm.ICmpPredicateFlag(pred))
    return llvm.ICmpOp(lhs, rhs, IntegerAttr(flag, I64))


_BINARY: dict[type[Operation], Callable[[SSAValue, SSAValue], Operation]] = {
    arith.AddfOp: llvm.FAddOp, arith.SubfOp: llvm.FSubOp, arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp, arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp, arith.MuliOp: llvm.MulOp, arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp, arith.RemSIOp: llvm.SRemOp, arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp, arith.OrIOp: llvm.OrOp, arith.XOrIOp: llvm.XOrOp,
    arith.ShLIOp: llvm.ShlOp, arith.ShRSIOp: llvm.AShrOp, arith.ShRUIOp: llvm.LShrOp,
}  # fmt: skip


class BinaryToLLVM(RewritePattern):
    """`arith.addf %a, %b : f32` -> `llvm.fadd %a, %b : f32` (and the other
    one-to-one binary ops)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        cls = _BINARY.get(type(op))
        if cls is None:
            return
        a, b = (to_llvm(v, rewriter) for v in op.operands)
        new = cls(a, b)
        flags = getattr(op, "fastmath", None)
        if flags is not None and flags.data:
            # Only reduction accumulators carry flags (`reassoc`, so LLVM may
            # vectorize the sum); they pass through to the llvm op.
            new.properties["fastmathFlags"] = llvm.FastMathAttr(
                [llvm.FastMathFlag(getattr(f, "value", f)) for f in flags.data]
            )
        replace_with_llvm(op, [new], new.results[0], rewriter)


class ConstantToLLVM(RewritePattern):
    """`arith.constant 1 : index` -> `llvm.mlir.constant(1 : i64) : i64`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter, /):
        t = llvm_type(op.result.type)
        value = op.value
        if isinstance(value, IntegerAttr):  # an index constant is an i64 one
            value = IntegerAttr(value.value.data, I64 if isinstance(value.type, IndexType) else value.type)
        elif isinstance(value, FloatAttr) and isinstance(op.result.type, BFloat16Type):
            import struct

            bits = struct.unpack("<I", struct.pack("<f", value.value.data))[0] >> 16
            value = IntegerAttr(bits, I16)
        new = llvm.ConstantOp(value, t)
        replace_with_llvm(op, [new], new.result, rewriter)


class CmpToLLVM(RewritePattern):
    """`arith.cmpf olt, %a, %b` -> `llvm.fcmp "olt" %a, %b` (cmpi -> icmp);
    the predicate numbering is LLVM's in both dialects."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        new: Operation
        if isinstance(op, arith.CmpfOp):
            a, b = (to_llvm(v, rewriter) for v in op.operands)
            new = llvm.FCmpOp(a, b, IntegerAttr(op.predicate.value.data, I64))
        elif isinstance(op, arith.CmpiOp):
            a, b = (to_llvm(v, rewriter) for v in op.operands)
            new = llvm.ICmpOp(a, b, IntegerAttr(op.predicate.value.data, I64))
        else:
            return
        replace_with_llvm(op, [new], new.results[0], rewriter)


class SelectToLLVM(RewritePattern):
    """`arith.select %c, %a, %b` -> `llvm.select %c, %a, %b`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        c, a, b = (to_llvm(v, rewriter) for v in op.operands)
        new = llvm.SelectOp(c, a, b)
        replace_with_llvm(op, [new], new.results[0], rewriter)


class MinMaxToLLVM(RewritePattern):
    """`arith.maximumf %a, %b` -> select(a > b, a, b), then NaN if either is NaN
    (PyTorch's maximum/minimum propagate NaN); `arith.maxsi` -> icmp + select."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        preds = {arith.MaximumfOp: "ogt", arith.MinimumfOp: "olt", arith.MaxSIOp: "sgt",
                 arith.MinSIOp: "slt", arith.MaxUIOp: "ugt", arith.MinUIOp: "ult"}  # fmt: skip
        pred = preds.get(type(op))
        if pred is None:
            return
        a, b = (to_llvm(v, rewriter) for v in op.operands)
        if isinstance(op, arith.MaximumfOp | arith.MinimumfOp):
            gt = fcmp(a, b, pred)
            pick = llvm.SelectOp(gt, a, b)
            nan = fcmp(a, b, "uno")
            both = llvm.FAddOp(a, b)
            res = llvm.SelectOp(nan, both, pick)
            replace_with_llvm(op, [gt, pick, nan, both, res], res.res, rewriter)
            return
        igt = icmp(a, b, pred)
        res = llvm.SelectOp(igt, a, b)
        replace_with_llvm(op, [igt, res], res.res, rewriter)


def _bf16_to_f32(bits: SSAValue) -> list[Operation]:
    wide = llvm.ZExtOp(bits, I32)
    sixteen = llvm.ConstantOp(IntegerAttr(16, I32), I32)
    shifted = llvm.ShlOp(wide.res, sixteen.result)
    f = llvm.BitcastOp(shifted.res, _F32)
    return [wide, sixteen, shifted, f]


def _f32_to_bf16(x: SSAValue) -> list[Operation]:
    # Round to nearest even on the bits, quiet NaN kept as NaN (as c10::BFloat16).
    bits = llvm.BitcastOp(x, I32)
    c16 = llvm.ConstantOp(IntegerAttr(16, I32), I32)
    c1 = llvm.ConstantOp(IntegerAttr(1, I32), I32)
    bias0 = llvm.ConstantOp(IntegerAttr(0x7FFF, I32), I32)
    hi = llvm.LShrOp(bits.results[0], c16.result)
    lsb = llvm.AndOp(hi.res, c1.result)
    bias = llvm.AddOp(lsb.res, bias0.result)
    rounded = llvm.AddOp(bits.results[0], bias.res)
    top = llvm.LShrOp(rounded.res, c16.result)
    narrow = llvm.TruncOp(top.res, I16)
    nan = fcmp(x, x, "uno")
    qnan = llvm.ConstantOp(IntegerAttr(0x7FC0, I16), I16)
    res = llvm.SelectOp(nan, qnan.result, narrow.res)
    return [bits, c16, c1, bias0, hi, lsb, bias, rounded, top, narrow, nan, qnan, res]


class FloatCastToLLVM(RewritePattern):
    """`arith.extf`/`arith.truncf` -> `llvm.fpext`/`llvm.fptrunc`; bf16 is done on
    the bits (shift for extension, round-to-nearest-even for truncation)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, arith.ExtFOp | arith.TruncFOp):
            return
        src = op.operands[0]
        x = to_llvm(src, rewriter)
        to = op.results[0].type
        ops: list[Operation]
        if isinstance(src.type, BFloat16Type):
            ops = _bf16_to_f32(x)
            res = ops[-1].results[0]
            if to != _F32:
                ext = llvm.FPExtOp(res, to)
                ops.append(ext)
                res = ext.results[0]
        elif isinstance(to, BFloat16Type):
            ops = []
            if src.type != _F32:
                t = llvm.FPTruncOp(x, _F32)
                ops.append(t)
                x = t.results[0]
            ops += _f32_to_bf16(x)
            res = ops[-1].results[0]
        else:
            new = (llvm.FPExtOp if isinstance(op, arith.ExtFOp) else llvm.FPTruncOp)(x, to)
            ops, res = [new], new.results[0]
        replace_with_llvm(op, ops, res, rewriter)


class IntCastToLLVM(RewritePattern):
    """`arith.extsi/extui/trunci/index_cast/sitofp/uitofp/fptosi/bitcast` -> the
    LLVM casts; fptosi saturates (`llvm.fptosi.sat`), so out-of-range is defined."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(
            op,
            arith.ExtSIOp
            | arith.ExtUIOp
            | arith.TruncIOp
            | arith.IndexCastOp
            | arith.SIToFPOp
            | arith.UIToFPOp
            | arith.FPToSIOp
            | arith.BitcastOp,
        ):
            return
        x = to_llvm(op.operands[0], rewriter)
        to = llvm_type(op.results[0].type)
        ops: list[Operation]
        match op:
            case arith.ExtSIOp():
                ops = [llvm.SExtOp(x, to)]
            case arith.ExtUIOp():
                ops = [llvm.ZExtOp(x, to)]
            case arith.TruncIOp():
                ops = [llvm.TruncOp(x, to)]
            case arith.IndexCastOp():
                fw = x.type.width.data  # type: ignore[attr-defined]
                tw = to.width.data  # type: ignore[attr-defined]
                if fw == tw:
                    replace_with_llvm(op, [], x, rewriter)
                    return
                ops = [llvm.SExtOp(x, to) if fw < tw else llvm.TruncOp(x, to)]
            case arith.SIToFPOp():
                ops = [llvm.SIToFPOp(x, to)]
            case arith.UIToFPOp():
                ext = llvm.ZExtOp(x, I64)
                ops = [ext, llvm.SIToFPOp(ext.res, to)]
            case arith.FPToSIOp():
                name = f"llvm.fptosi.sat.i{to.width.data}.{_fname(x.type)}"  # type: ignore[attr-defined]
                ops = [llvm.CallIntrinsicOp(name, [x], [to])]
            case _:
                ops = [llvm.BitcastOp(x, to)]
        replace_with_llvm(op, ops, ops[-1].results[0], rewriter)


def _fname(t: Attribute) -> str:
    return {"f16": "f16", "f32": "f32", "f64": "f64"}[str(t)]


class NegfToLLVM(RewritePattern):
    """`arith.negf %x` -> `llvm.fneg %x`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /):
        new = llvm.FNegOp(to_llvm(op.operand, rewriter))
        replace_with_llvm(op, [new], new.res, rewriter)


ARITH_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    BinaryToLLVM(), ConstantToLLVM(), CmpToLLVM(), SelectToLLVM(), MinMaxToLLVM(),
    FloatCastToLLVM(), IntCastToLLVM(), NegfToLLVM(),
)  # fmt: skip


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ModulePass):
    """Lowers the `arith` ops the loop level uses to the `llvm` dialect.

    %c = arith.addi %a, %b : index
    ->
    %a1 = builtin.unrealized_conversion_cast %a : index to i64
    %b1 = builtin.unrealized_conversion_cast %b : index to i64
    %c1 = llvm.add %a1, %b1 : i64
    %c = builtin.unrealized_conversion_cast %c1 : i64 to index
    """

    name = "convert-arith-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(list(ARITH_TO_LLVM_PATTERNS))
        ).rewrite_module(op)
