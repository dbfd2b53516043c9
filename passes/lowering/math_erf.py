"""erf as straight-line llvm-dialect float ops (`convert-math-to-llvm` on the
CPU; see `math_polynomials`): a table of erf and its slope at multiples of
1/128 and Taylor terms around them (no exp, no division), summed in f64 for
both types. f32 finds its table entry in f32 and rounds the f64 sum once:
correctly rounded, and eager's (MKL's) values near +-1.

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


def _erf_near(
    ed: Emitter, erf_r: SSAValue, scale: SSAValue, r: SSAValue, d: SSAValue, to_d6: bool
) -> SSAValue:
    """erf(r + d) = erf(r) + s * (d - d^2 * P(r, d)), s = erf'(r) and P the
    Taylor terms of erf around r to d^6 (`to_d6`) or d^5, whose coefficients
    are polynomials in r (ARM optimized-routines' vector erf)."""
    d2 = ed.mul(d, d)
    r2 = ed.mul(r, r)
    third = ed.c(1 / 3)
    p1 = r
    p2 = ed.sub(third, ed.mul(r2, ed.c(2 / 3)))
    p3 = ed.mul(r, ed.add(ed.c(-0.5), ed.mul(r2, third)))
    p4 = ed.sub(ed.c(-0.1), ed.mul(r2, ed.add(ed.c(-0.4), ed.mul(r2, ed.c(2 / 15)))))
    p34 = ed.add(p3, ed.mul(d, p4))
    if to_d6:
        p5 = ed.add(ed.c(-2 / 9), ed.mul(r2, ed.c(2 / 45)))
        p5 = ed.mul(r, ed.add(ed.c(1 / 6), ed.mul(r2, p5)))
        p34 = ed.add(p34, ed.mul(d2, p5))
    p12 = ed.add(p1, ed.mul(d, p2))
    y = ed.add(p12, ed.mul(d2, p34))
    return ed.add(erf_r, ed.mul(scale, ed.sub(d, ed.mul(d2, y))))


def _erf_f64(ed: Emitter, x: SSAValue) -> SSAValue:
    """erf|x| from r = |x| rounded to a multiple of 1/128 and d = |x| - r
    (exact, |d| <= 1/256), erf(r) and s(r) read from the table, to d^6: two
    table loads and 20 FMAs per lane, no exp, no division; 2 ulp. NaN and |x|
    past the table read its last entry (the result is selected or NaN anyway)."""
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
    y = _erf_near(ed, erf_r, scale, r, d, to_d6=True)
    y = ed.select(ed.cmp("ogt", a, ed.c(_ERF_MAX)), ed.c(1.0), y)
    return ed.copysign(y, x)


_ERF_F32_MAX = 4.0  # the f32 form reads the table up to r = 4 (k = 512)
_ERF_F32_SHIFT = 2.0**16  # a + 2^16 rounds a <= 4 to a multiple of 2^(16-23) = 1/128
_ERF_F32_ONE_FROM = 3.927734375
_ERF_F32_BELOW_ONE = 1.0 - 2.0**-24  # the f32 just below 1


def _erf_f32(em: Emitter, x: SSAValue) -> SSAValue:
    """The f64 table form with r and d found in f32 (d = |x| - r is exact in
    f32 too) and the sum rounded once to f32: correctly rounded (every f32
    below 4.5 checked; the one exception, erf(1.8398030e-4), lies 2e-10 ulp
    from a midpoint), but eager's values near +-1 (below). Only the sum is
    f64, to d^5 (the d^6 term is below 2^-49 of erf for r <= 4): x widened
    and reduced in f64, beside an f32 rational for |x| < 0.5 (every lane
    computing both), took 1.6x this time, 1.35x eager's. The same sum in f32
    (ARM's erff, 2 ulp) is faster again but not correctly rounded."""
    ed = em.other(f64)
    a = em.fabs(x)
    shift = em.c(_ERF_F32_SHIFT)
    # NaN and |x| > 4 read r = 4: their result is NaN or +-1 (selected below)
    z = em.add_exact(em.select(em.cmp("ole", a, em.c(_ERF_F32_MAX)), a, em.c(_ERF_F32_MAX)), shift)
    k = em.isub(em.bits(z), em.ci(float_bits(_ERF_F32_SHIFT, f32)))
    at = em.shl(k, em.ci(1))
    erf_r = table_load(ed, ERF_TABLE, at)
    scale = table_load(ed, ERF_TABLE, em.iadd(at, em.ci(1)))
    r = em.sub_exact(z, shift)
    d = em.sub_exact(a, r)
    y = _erf_near(ed, erf_r, scale, ed.ext(r, f64), ed.ext(d, f64), to_d6=False)
    y = ed.trunc(y, f32)
    # Eager's f32 erf (MKL's) is +-1.0 exactly from |x| = 3.927734375 on and
    # 0.99999994 below, where the correctly rounded value is already 1.0 from
    # 3.9192: kept so, `.to(int)` of the result flips nowhere.
    y = em.select(em.cmp("ogt", y, em.c(_ERF_F32_BELOW_ONE)), em.c(_ERF_F32_BELOW_ONE), y)
    y = em.select(em.cmp("oge", a, em.c(_ERF_F32_ONE_FROM)), em.c(1.0), y)
    return em.copysign(y, x)


def erf(em: Emitter, x: SSAValue) -> SSAValue:
    return _erf_f32(em, x) if em.is_f32 else _erf_f64(em, x)
