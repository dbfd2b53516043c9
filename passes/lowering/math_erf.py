"""erf as straight-line llvm-dialect float ops (`convert-math-to-llvm` on the
CPU; see `math_polynomials`): f32 in f32, as eager's (MKL's) values, and f64
from a table of erf and its slope at multiples of 1/128 (no exp, no division).

    %y = math.erf %x : f64   ->   ... llvm.load from @__fusec_erf_table ...
"""

from __future__ import annotations

import functools
import math

from fusec.passes.lowering.math_polynomials import Emitter, float_bits, table_load
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntAttr,
    TensorType,
    f32,
    f64,
)
from xdsl.ir import SSAValue

# --------------------------------------------------------------------------- erf

ERF_TABLE = "__fusec_erf_table"
"""Name of the private constant global holding (erf r, 2/sqrt(pi) e^(-r^2))
for r = k/128, k = 0..768, interleaved."""
_ERF_STEPS = 128
_ERF_LAST = 6 * _ERF_STEPS
_ERF_MAX = 6.0 - 1.0 / _ERF_STEPS  # beyond, erfc < 2^-54: erf rounds to +-1
_ERF_SHIFT = 2.0**45  # a + 2^45 rounds a to a multiple of 2^(45-52) = 1/128


@functools.cache
def _erf_table_values() -> list[float]:
    values: list[float] = []
    for k in range(_ERF_LAST + 1):
        r = k / _ERF_STEPS
        values += [math.erf(r), 2 / math.sqrt(math.pi) * math.exp(-r * r)]
    return values


def erf_table_global() -> llvm.GlobalOp:
    """The f64 erf table as a private constant `llvm.mlir.global` (libm's erf
    and exp, accurate to an ulp or so, give its entries)."""
    values = _erf_table_values()
    ty = llvm.LLVMArrayType(IntAttr(len(values)), f64)
    value = DenseIntOrFPElementsAttr.from_list(TensorType(f64, [len(values)]), values)
    return llvm.GlobalOp(ty, ERF_TABLE, "private", constant=True, value=value)


def _erf_f64(ed: Emitter, x: SSAValue) -> SSAValue:
    """erf|x| = erf(r) + s(r) * (d - d^2 * P(r, d)) with r = |x| rounded to a
    multiple of 1/128, d = |x| - r (exact, |d| <= 1/256), s = erf' (r) and P
    the Taylor terms of erf around r to d^5, whose coefficients are
    polynomials in r (ARM optimized-routines' vector erf): two table loads
    and 20 FMAs per lane, no exp, no division; 2 ulp. NaN and |x| past the
    table read its last entry (the result is selected or NaN anyway)."""
    a = ed.fabs(x)
    shift = ed.c(_ERF_SHIFT)
    z = ed.add_exact(a, shift)
    k = ed.isub(ed.bits(z), ed.ci(float_bits(_ERF_SHIFT, f64)))
    k = ed.select(ed.cmp("ole", a, ed.c(_ERF_MAX)), k, ed.ci(_ERF_LAST))
    at = ed.shl(k, ed.ci(1))
    erf_r = table_load(ed, ERF_TABLE, at)
    scale = table_load(ed, ERF_TABLE, ed.iadd(at, ed.ci(1)))
    r = ed.sub_exact(z, shift)
    d = ed.sub_exact(a, r)
    d2 = ed.mul(d, d)
    r2 = ed.mul(r, r)
    third = ed.c(1 / 3)
    p1 = r
    p2 = ed.sub(third, ed.mul(r2, ed.c(2 / 3)))
    p3 = ed.mul(r, ed.add(ed.c(-0.5), ed.mul(r2, third)))
    p4 = ed.sub(ed.c(-0.1), ed.mul(r2, ed.add(ed.c(-0.4), ed.mul(r2, ed.c(2 / 15)))))
    p5 = ed.add(ed.c(-2 / 9), ed.mul(r2, ed.c(2 / 45)))
    p5 = ed.mul(r, ed.add(ed.c(1 / 6), ed.mul(r2, p5)))
    p34 = ed.add(p3, ed.mul(d, p4))
    p12 = ed.add(p1, ed.mul(d, p2))
    y = ed.add(p12, ed.mul(d2, ed.add(p34, ed.mul(d2, p5))))
    y = ed.add(erf_r, ed.mul(scale, ed.sub(d, ed.mul(d2, y))))
    y = ed.select(ed.cmp("ogt", a, ed.c(_ERF_MAX)), ed.c(1.0), y)
    return ed.copysign(y, x)


# f32: erf(x) = x * P(x^2) / Q(x^2) on |x| <= 3.92 (used below 0.5 only: its
# ulps near erf = 1 flipped int casts of eager's +-1.0), a dozen FMAs and a division.
# Fitted here (relative minimax by reweighted least squares, coefficients
# rounded to f32 one at a time and the rest refitted): 5e-8 relative, and
# evaluated in f32 at most 6 ulp from erf with FMA, 8 without (the sum of the
# roundings near erf = 1). Beyond 3.92 erfc < 2^-25, so erf rounds to +-1.
_ERF_F32_P = (
    1.1283791065216064,
    0.1906149685382843,
    0.051595449447631836,
    0.0036120139993727207,
    0.00023012315796222538,
)
_ERF_F32_Q = (
    1.0,
    0.5022603869438171,
    0.11315034329891205,
    0.014491337351500988,
    0.0010591500904411077,
    2.3017699277261272e-05,
    -1.1063915650311174e-07,
)


_ERF_F32_ONE_FROM = 3.927734375
_ERF_F32_BELOW_ONE = 1.0 - 2.0**-24  # the f32 just below 1


def _erf_f32(em: Emitter, x: SSAValue) -> SSAValue:
    """The f32 rational for |x| < 0.5; the f64 table form rounded to f32 beyond,
    which is eager's value where the rational's ulps matter: near +-1,
    `.to(int)` of its 0.99999994 is 0 where eager's 1.0 gives 1. (Both are
    computed on every lane, as a vectorized loop does anyway; f32 and f64 fabs
    may not share a function, so the test is in f64.)"""
    ed = em.other(f64)
    xd = ed.ext(x, f64)
    y = _erf_f64(ed, xd)
    # Eager's f32 erf (MKL's) is +-1.0 exactly from |x| = 3.927734375 on and
    # 0.99999994 below, where the correctly rounded value is already 1.0 from
    # 3.9192: kept so, `.to(int)` of the result flips nowhere.
    below_one = ed.and_(
        ed.cmp("olt", ed.fabs(xd), ed.c(_ERF_F32_ONE_FROM)),
        ed.cmp("ogt", ed.fabs(y), ed.c(_ERF_F32_BELOW_ONE)),
    )
    y = ed.select(below_one, ed.copysign(ed.c(_ERF_F32_BELOW_ONE), xd), y)
    wide = ed.trunc(y, f32)
    z = em.mul(x, x)
    r = em.div(em.mul(x, em.horner(z, _ERF_F32_P)), em.horner(z, _ERF_F32_Q))
    small = ed.cmp("olt", ed.fabs(xd), ed.c(0.5))
    return em.select(small, r, wide)


def erf(em: Emitter, x: SSAValue) -> SSAValue:
    return _erf_f32(em, x) if em.is_f32 else _erf_f64(em, x)
