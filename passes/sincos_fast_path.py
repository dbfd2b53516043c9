"""sincos-fast-path: a CPU loop over sin/cos takes the short Cody-Waite range
reduction and redoes itself with the exact one only when some |x| was large.

Exact sin/cos for every finite x needs a Payne-Hanek style reduction (2/pi to
far more bits than three parts of pi/2 carry), which costs several times the
polynomial, on every lane, since a vectorized loop computes all of them. Large
arguments are rare: so the innermost loop computes the cheap reduction
(`{fusec.sincos_range = "fast"}`, valid for |x| <= 39000 in f32 and 1.6e6 in
f64: `sincos_fast_max`) and or-reduces "|x| is large, inf or NaN" over its
range; only if that is true does
the original loop (exact reduction) run again over the same range. The loop is
pointwise and writes no memory it reads (kernel outputs never alias inputs), so
running it a second time rewrites every value it stored, now exactly.

    scf.for %i = %lb to %ub step %c1 {
      %s = math.sin %x : f32
      memref.store %s, %out[%i] : memref<?xf32>
    }
->
    %any = scf.for %i = %lb to %ub step %c1 iter_args(%acc = %false) -> (i1) {
      %s = math.sin %x {fusec.sincos_range = "fast"} : f32
      memref.store %s, %out[%i] : memref<?xf32>
      %a = math.absf %x : f32
      %big = arith.cmpf ugt, %a, %max : f32
      %acc1 = arith.ori %acc, %big : i1
      scf.yield %acc1 : i1
    }
    scf.if %any {
      scf.for %i = %lb to %ub step %c1 {
        %s = math.sin %x {fusec.sincos_range = "full"} : f32
        memref.store %s, %out[%i] : memref<?xf32>
      }
    }

Only innermost loops without loop-carried values are rewritten (a reduction's
loop keeps the exact reduction everywhere).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.passes.lowering.math_sincos import SINCOS_RANGE, sincos_fast_max
from xdsl.context import Context
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    i1,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

_TRIG = (math.SinOp, math.CosOp)


def _unmarked_trig(block: Block) -> list[Operation]:
    return [
        op
        for op in block.ops
        if isinstance(op, _TRIG)
        and isinstance(op.results[0].type, Float32Type | Float64Type)
        and SINCOS_RANGE not in op.attributes
    ]


class SplitSinCosLoop(RewritePattern):
    """An innermost `scf.for` with unmarked f32/f64 sin/cos becomes the fast loop
    (any-large flag as its result) followed by the exact loop under `scf.if`
    (see the module docstring)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, loop: scf.ForOp, rewriter: PatternRewriter, /):
        block = loop.body.block
        if loop.res or any(isinstance(op, scf.ForOp) for op in block.walk()):
            return
        trig = _unmarked_trig(block)
        if not trig:
            return
        # The exact loop: the loop as it is, its trig ops marked so that this
        # pattern leaves them alone.
        exact = loop.clone()
        for op in _unmarked_trig(exact.body.block):
            op.attributes[SINCOS_RANGE] = StringAttr("full")

        false = arith.ConstantOp(IntegerAttr(0, i1))
        limits: dict[type, arith.ConstantOp] = {}
        fast_block = Block(arg_types=[block.args[0].type, i1])
        block.args[0].replace_all_uses_with(fast_block.args[0])
        terminator = block.last_op
        assert isinstance(terminator, scf.YieldOp)
        for op in list(block.ops):
            if op is terminator:
                continue
            op.detach()
            fast_block.add_op(op)
        acc: SSAValue = fast_block.args[1]
        for op in trig:
            op.attributes[SINCOS_RANGE] = StringAttr("fast")
            x = op.operands[0]
            ftype = x.type
            assert isinstance(ftype, AnyFloat)  # `trig` holds float sin/cos
            if type(ftype) not in limits:
                limits[type(ftype)] = arith.ConstantOp(FloatAttr(sincos_fast_max(ftype), ftype))
            mag = math.AbsFOp(x)
            # unordered: NaN lanes take the exact loop too
            big = arith.CmpfOp(mag, limits[type(ftype)], "ugt")
            acc_op = arith.OrIOp(acc, big)
            fast_block.add_ops([mag, big, acc_op])
            acc = acc_op.result
        fast_block.add_op(scf.YieldOp(acc))
        fast = scf.ForOp(loop.lb, loop.ub, loop.step, [false], Region(fast_block))
        redo = scf.IfOp(fast.res[0], [], Region(Block([exact, scf.YieldOp()])))
        rewriter.replace(loop, [false, *limits.values(), fast, redo], [])


@dataclass(frozen=True)
class SinCosFastPathPass(ModulePass):
    """Innermost CPU loops over sin/cos take the Cody-Waite reduction and rerun
    with the exact one only when some argument was large (module docstring).

        scf.for ... { %s = math.sin %x : f32 ... }
    ->  %any = scf.for ... iter_args(%acc = %false) { %s = math.sin %x {fusec.sincos_range = "fast"} ... }
        scf.if %any { scf.for ... { %s = math.sin %x {fusec.sincos_range = "full"} ... } }
    """

    name = "sincos-fast-path"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SplitSinCosLoop(), apply_recursively=False).rewrite_module(op)
