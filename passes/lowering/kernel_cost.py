"""The estimated work of a loop-level kernel per element of its index space, in
nanoseconds on one core: what the CPU executor weighs against the cost of a
parallel launch to decide how many threads a call is worth
(`KernelSignature.cost`).

The weights are per op of the loop body, fitted to single-thread runs of
vectorized kernels whose data sit in the caches (`benchmarks/kernel_cost.py`
prints estimate and measurement side by side): loads and stores dominate plain
arithmetic, and a transcendental (a polynomial of a dozen or more vector ops
once `convert-math-to-llvm` expands it) costs the most.

    %x = memref.load ...        0.06
    %e = math.exp %x            0.6
    %y = arith.mulf %e, %x      0.008
    memref.store %y, ...        0.06     -> cost 0.728 ns per element

An op on f64 costs more: half the lanes per vector, and for some
transcendentals a longer expansion (`_F64_MATH`).
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects import arith, memref
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import Float64Type
from xdsl.ir import Operation

_MEMORY = 0.06
"""A load or a store of a vectorized loop, its data in the caches: the split is
decided around the sizes where it is (2^14-2^18 elements); past them, work is
plenty for every thread anyway."""
_SIMPLE = 0.008
"""Add, multiply, compare, select, cast, index arithmetic: a fraction of a
vector op per element."""
_DIVIDE = 0.02
_TRANSCENDENTAL = {
    "math.exp": 0.6,
    "math.expm1": 0.5,
    "math.log": 0.6,
    "math.log1p": 0.6,
    "math.tanh": 0.75,
    "math.erf": 0.24,
    "math.sin": 0.4,
    "math.cos": 0.4,
    "math.powf": 1.2,
    "math.sqrt": 0.02,
    "math.rsqrt": 0.02,
}
_OTHER_MATH = 0.6
"""A math op not listed: priced like an average transcendental."""
_F64 = 2.0
"""An f64 op's cost over its f32 one: half the lanes per vector."""
_F64_MATH = {
    "math.erf": 4.5,
    "math.exp": 2.6,
    "math.expm1": 2.6,
    "math.tanh": 2.5,
    "math.sin": 3.8,
    "math.cos": 3.8,
}
"""The same for transcendentals whose f64 expansion is longer (f32 sin/cos
compute in f32, f64 ones reduce in f64 with longer polynomials; f64 erf reads a
table and sums more terms), fitted so that the f64 kernels' estimates are off
by what the f32 ones are on the same machine (`benchmarks/kernel_cost.py`; an
f64 erf priced as f32 once ran a 2^16 call on one thread at 2.4x eager's
time)."""

_MATH_CHEAP = (
    mathd.AbsFOp,
    mathd.AbsIOp,
    mathd.CeilOp,
    mathd.CopySignOp,
    mathd.FloorOp,
    mathd.FmaOp,
    mathd.RoundOp,
    mathd.RoundEvenOp,
    mathd.TruncOp,
)
_DIVISIONS = (
    arith.DivfOp,
    arith.DivSIOp,
    arith.DivUIOp,
    arith.RemSIOp,
    arith.RemUIOp,
    arith.FloorDivSIOp,
    arith.CeilDivSIOp,
    arith.CeilDivUIOp,
)


def op_cost(op: Operation) -> float:
    """The estimated nanoseconds per element of one loop-body op (0 for ops
    that do no per-element work: loops, yields, constants); an op on f64 costs
    `_F64` (`_F64_MATH`) times its f32 price.

        math.exp on f32: 0.6    math.exp on f64: 0.6 x 2.6 = 1.56"""
    cost = _f32_cost(op)
    if cost and any(isinstance(v.type, Float64Type) for v in (*op.operands, *op.results)):
        return cost * _F64_MATH.get(op.name, _F64)
    return cost


def _f32_cost(op: Operation) -> float:
    if isinstance(op, memref.LoadOp | memref.StoreOp):
        return _MEMORY
    if isinstance(op, arith.ConstantOp):
        return 0.0
    if isinstance(op, _DIVISIONS):
        return _DIVIDE
    if isinstance(op, _MATH_CHEAP):
        return _SIMPLE
    if op.dialect_name() == "math":
        return _TRANSCENDENTAL.get(op.name, _OTHER_MATH)
    if op.dialect_name() == "arith":
        return _SIMPLE
    return 0.0


def element_cost(ops: Iterable[Operation]) -> float:
    """The estimated nanoseconds per index-space element of a kernel whose
    top-level ops are `ops` (the loop nest): every op nested in them counts
    once, as the innermost loop runs each about once per element."""
    total = 0.0
    for top in ops:
        for op in top.walk():
            total += op_cost(op)
    return max(total, _SIMPLE)
