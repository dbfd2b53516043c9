"""`convert-math-to-llvm`: lower scalar f32/f64 `math` ops to the llvm dialect.

    fusec-opt -p 'convert-math-to-llvm{target=cpu}' kernel.mlir
    fusec-opt -p 'convert-math-to-llvm{target=nvptx}' kernel.mlir

Functions with an LLVM instruction or a natively vectorized intrinsic (sqrt,
fabs, floor, ceil, trunc, round, copysign, fma) become that intrinsic on both
targets. The transcendental ones differ:

- `cpu`: expanded inline into llvm-dialect float arithmetic (range reduction +
  polynomial, see `fusec.passes.lowering.math_expansions`), so a loop over them
  vectorizes: no libm call is left. A sin/cos marked
  `{fusec.sincos_range = "fast"}` (by `sincos-fast-path`) gets the short
  Cody-Waite reduction only; an exp marked `{fusec.exp_range = "normal"}`
  (sigmoid's, by `lower-group-to-loops`) gets `exp_normal`, for normal
  results only.
- `nvptx`: calls to libdevice (`__nv_expf`, `__nv_tanh`, ...), declared here as
  external `llvm.func`s; `fusec.backends.ptx.emit_ptx` links libdevice in.

Vector-typed math ops are left alone (the expansions work on scalars; LLVM's
vectorizer widens the scalar loop).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.passes.lowering import math_expansions as poly
from xdsl.context import Context
from xdsl.dialects import llvm, math
from xdsl.dialects.builtin import AnyFloat, Float32Type, FloatAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import PassFailedException


def _scalar_float(op: Operation) -> AnyFloat | None:
    if op.dialect_name() != "math" or len(op.results) != 1:
        return None
    ty = op.results[0].type
    return ty if isinstance(ty, poly.SUPPORTED_TYPES) else None


_INTRINSIC_SUFFIX = {True: "f32", False: "f64"}
_ROUNDING_INTRINSICS: dict[type[Operation], str] = {
    math.TruncOp: "llvm.trunc",
    math.RoundOp: "llvm.round",
    math.RoundEvenOp: "llvm.roundeven",
}


def enclosing_module(op: Operation) -> ModuleOp | None:
    """The innermost module around `op`: the symbol table its calls resolve in.
    A declaration (`llvm.func @__nv_expf`) or a table global must go there, not
    into the outermost module, or a kernel in a nested module calls a symbol its
    own module does not define:

        builtin.module {
          builtin.module {
            llvm.func @k(...) { llvm.call @__nv_expf(...) }
            llvm.func @__nv_expf(f32) -> f32   // here, not one level up
          }
        }
    """
    cur = op.parent_op()
    while cur is not None and not isinstance(cur, ModuleOp):
        cur = cur.parent_op()
    return cur


class LowerMathToIntrinsics(RewritePattern):
    """Math ops with an LLVM intrinsic that every backend vectorizes natively:

    %r = math.sqrt %x : f32          ->  %r = llvm.intr.sqrt(%x) : (f32) -> f32
    %r = math.rsqrt %x : f64         ->  %s = llvm.intr.sqrt(%x) ; %r = llvm.fdiv %one, %s
    %r = math.trunc %x : f32         ->  %r = llvm.call_intrinsic "llvm.trunc.f32"(%x)
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        ftype = _scalar_float(op)
        if ftype is None:
            return
        operands = op.operands
        new: list[Operation]
        match op:
            case math.SqrtOp():
                new = [llvm.FSqrtOp(operands[0])]
            case math.RsqrtOp():
                one = llvm.ConstantOp(FloatAttr(1.0, ftype), ftype)
                root = llvm.FSqrtOp(operands[0])
                new = [one, root, llvm.FDivOp(one, root)]
            case math.AbsFOp():
                new = [llvm.FAbsOp(operands[0], ftype)]
            case math.FloorOp():
                new = [llvm.FFloorOp(operands[0])]
            case math.CeilOp():
                new = [llvm.FCeilOp(operands[0])]
            case math.CopySignOp():
                new = [llvm.FCopySignOp(operands[0], operands[1])]
            case math.FmaOp():
                new = [llvm.FMAOp(operands[0], operands[1], operands[2])]
            case _ if type(op) in _ROUNDING_INTRINSICS:
                name = f"{_ROUNDING_INTRINSICS[type(op)]}.{_INTRINSIC_SUFFIX[isinstance(ftype, Float32Type)]}"
                new = [llvm.CallIntrinsicOp(name, [operands[0]], [ftype])]
            case _:
                return
        rewriter.replace(op, new, [new[-1].results[0]])


class ExpandMathToPolynomial(RewritePattern):
    """Transcendental math ops as inline float arithmetic (CPU target):

        %r = math.exp %x : f32
    ->
        %k = llvm.fmul %x, %log2e : f32       // n = round(x / ln2)
        %r0 = llvm.fsub %x, %nln2hi : f32     // Cody-Waite: r = x - n*ln2
        %p = llvm.fmul ... llvm.fadd ...      // Horner polynomial for e^r - 1
        %s = llvm.bitcast %bits : i32 to f32  // 2^n from exponent bits
        %r = llvm.select %overflow, %inf, ... : i1, f32
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        ftype = _scalar_float(op)
        if ftype is None:
            return
        em = poly.Emitter(ftype)
        fast = op.attributes.get(poly.SINCOS_RANGE) == StringAttr("fast")
        # tables (sin/cos's 2/pi chunks, erf's) are module globals
        if makers := poly.tables_used(op.name, ftype, fast):
            module = enclosing_module(op)
            if module is None:
                return
            for name, make in makers:
                if SymbolTable.lookup_symbol(module, name) is None:
                    rewriter.insert(make(), InsertPoint.at_end(module.body.block))
        if op.name in ("math.sin", "math.cos"):
            trig = poly.sin if op.name == "math.sin" else poly.cos
            result = trig(em, op.operands[0], fast)
        elif op.name == "math.exp" and op.attributes.get(poly.EXP_RANGE) == StringAttr("normal"):
            result = poly.exp_normal(em, op.operands[0])
        elif (unary := poly.UNARY.get(op.name)) is not None:
            result = unary(em, op.operands[0])
        elif (binary := poly.BINARY.get(op.name)) is not None:
            result = binary(em, op.operands[0], op.operands[1])
        else:
            return
        rewriter.replace(op, em.ops, [result])


# math op name -> libdevice base name (f32 adds an "f" suffix)
_LIBDEVICE = {
    "math.exp": "exp",
    "math.exp2": "exp2",
    "math.expm1": "expm1",
    "math.log": "log",
    "math.log10": "log10",
    "math.log1p": "log1p",
    "math.log2": "log2",
    "math.tanh": "tanh",
    "math.sinh": "sinh",
    "math.cosh": "cosh",
    "math.erf": "erf",
    "math.sin": "sin",
    "math.cos": "cos",
    "math.tan": "tan",
    "math.asin": "asin",
    "math.acos": "acos",
    "math.atan": "atan",
    "math.asinh": "asinh",
    "math.acosh": "acosh",
    "math.atanh": "atanh",
    "math.cbrt": "cbrt",
    "math.powf": "pow",
    "math.atan2": "atan2",
}


def libdevice_name(op_name: str, ftype: AnyFloat) -> str | None:
    """`__nv_expf` for (`math.exp`, f32), `__nv_exp` for f64; None if unknown."""
    base = _LIBDEVICE.get(op_name)
    if base is None:
        return None
    return f"__nv_{base}{'f' if isinstance(ftype, Float32Type) else ''}"


class LowerMathToLibdevice(RewritePattern):
    """Transcendental math ops as libdevice calls (NVPTX target):

        %r = math.exp %x : f32
    ->
        %r = llvm.call @__nv_expf(%x) : (f32) -> f32
        ...
        llvm.func @__nv_expf(f32) -> f32      // declared once per module
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        ftype = _scalar_float(op)
        if ftype is None:
            return
        name = libdevice_name(op.name, ftype)
        if name is None:
            return
        module = enclosing_module(op)
        if module is None:
            return
        if SymbolTable.lookup_symbol(module, name) is None:
            fn_type = llvm.LLVMFunctionType([ftype] * len(op.operands), ftype)
            decl = llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("external"))
            rewriter.insert(decl, InsertPoint.at_end(module.body.block))
        args: list[SSAValue] = list(op.operands)
        rewriter.replace(op, llvm.CallOp(name, *args, return_type=ftype))


@dataclass(frozen=True)
class ConvertMathToLLVMPass(ModulePass):
    """Lower scalar f32/f64 `math` ops to the llvm dialect for `target`
    ("cpu": inline polynomial expansions; "nvptx": libdevice calls).

        func.func @f(%x: f32) -> f32 {
          %y = math.exp %x : f32
          func.return %y : f32
        }
    -> (cpu)   only llvm.fmul/llvm.fadd/llvm.select/... in place of math.exp
    -> (nvptx) %y = llvm.call @__nv_expf(%x) : (f32) -> f32
    """

    name = "convert-math-to-llvm"

    target: str = "cpu"
    """"cpu" or "nvptx"."""

    def __post_init__(self) -> None:
        if self.target not in ("cpu", "nvptx"):
            raise ValueError(
                f"convert-math-to-llvm: unknown target '{self.target}' (expected cpu or nvptx)"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target == "cpu":
            transcendental: RewritePattern = ExpandMathToPolynomial()
        elif self.target == "nvptx":
            transcendental = LowerMathToLibdevice()
        else:
            raise PassFailedException(
                f"convert-math-to-llvm: unknown target '{self.target}' (expected cpu or nvptx)"
            )
        PatternRewriteWalker(
            GreedyRewritePatternApplier([LowerMathToIntrinsics(), transcendental]),
            apply_recursively=False,
        ).rewrite_module(op)
