"""erf as straight-line llvm-dialect float ops (`convert-math-to-llvm` on the
CPU; see `math_polynomials`): a table of erf and its slope at multiples of
1/128 and Taylor terms around them (no exp, no division), f32 in f32 (its own
table, 2 ulp, eager's (MKL's) values near +-1) and f64 in f64.

    %y = math.erf %x : f64   ->   ... llvm.load from @__fusec_erf_table ...
    %y = math.erf %x : f32   ->   ... llvm.load from @__fusec_erf_table_f32 (i64) ...
"""

from __future__ import annotations

import functools
import math

from fusec.passes.lowering.math_polynomials import (
    Emitter,
    float_bits,
    table_load,
    table_load_f32_pair,
)
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntAttr,
    TensorType,
    f32,
    f64,
    i64,
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


ERF_F32_TABLE = "__fusec_erf_table_f32"
"""Name of the private constant global holding (erf r, 2/sqrt(pi) e^(-r^2))
for r = k/128, k = 0..512, rounded to f32 and packed in one i64 per k (erf r
in the low half)."""
_ERF_F32_LAST = 4 * _ERF_STEPS
_ERF_F32_MAX = 4.0
_ERF_F32_SHIFT = 2.0**16  # a + 2^16 rounds a <= 4 to a multiple of 2^(16-23) = 1/128
_ERF_F32_ONE_FROM = 3.927734375
_ERF_F32_BELOW_ONE = 1.0 - 2.0**-24  # the f32 just below 1


@functools.cache
def _erf_f32_table_words() -> list[int]:
    """The f64 table's first entries, rounded to f32 and packed."""
    values = _erf_table_values()
    words: list[int] = []
    for k in range(_ERF_F32_LAST + 1):
        # both positive: the word is a positive i64
        erf_r = float_bits(values[2 * k], f32)
        slope = float_bits(values[2 * k + 1], f32)
        words.append(erf_r | slope << 32)
    return words


def erf_f32_table_global() -> llvm.GlobalOp:
    """The f32 erf table as a private constant `llvm.mlir.global` of i64."""
    words = _erf_f32_table_words()
    ty = llvm.LLVMArrayType(IntAttr(len(words)), i64)
    value = DenseIntOrFPElementsAttr.from_list(TensorType(i64, [len(words)]), words)
    return llvm.GlobalOp(ty, ERF_F32_TABLE, "private", constant=True, value=value)


def _erf_f32(em: Emitter, x: SSAValue) -> SSAValue:
    """The table form in f32, to d^3 (ARM optimized-routines' vector erff):
    erf(r + d) = erf(r) + s * (d - r d^2 + (2 r^2 - 1) / 3 d^3), the d^4 term
    at most 2^-32 of erf. Both table entries rounded to f32 and the sum's
    roundings: 1.93 ulp at most, within an ulp of the correctly rounded value
    from |x| = 1/128 on. The f64 form rounded once (correctly rounded) took
    1.75x this time, from its two 64-bit loads per lane (this one reads one,
    both entries packed) and its f64 sum at half the vector width."""
    a = em.fabs(x)
    shift = em.c(_ERF_F32_SHIFT)
    # NaN and |x| > 4 read r = 4: their result is NaN or +-1 (selected below)
    z = em.add_exact(em.select(em.cmp("ole", a, em.c(_ERF_F32_MAX)), a, em.c(_ERF_F32_MAX)), shift)
    k = em.isub(em.bits(z), em.ci(float_bits(_ERF_F32_SHIFT, f32)))
    erf_r, slope = table_load_f32_pair(em, ERF_F32_TABLE, k)
    r = em.sub_exact(z, shift)
    d = em.sub_exact(a, r)
    d2 = em.mul(d, d)
    c3 = em.sub(em.c(1 / 3), em.mul(em.mul(r, r), em.c(2 / 3)))
    y = em.sub(d, em.mul(d2, em.add(r, em.mul(d, c3))))
    y = em.add(erf_r, em.mul(slope, y))
    # Eager's f32 erf (MKL's) is +-1.0 exactly from |x| = 3.927734375 on and
    # 0.99999994 below, where the correctly rounded value is already 1.0 from
    # 3.9192: kept so, `.to(int)` of the result flips nowhere.
    y = em.select(em.cmp("ogt", y, em.c(_ERF_F32_BELOW_ONE)), em.c(_ERF_F32_BELOW_ONE), y)
    y = em.select(em.cmp("oge", a, em.c(_ERF_F32_ONE_FROM)), em.c(1.0), y)
    return em.copysign(y, x)


def erf(em: Emitter, x: SSAValue) -> SSAValue:
    return _erf_f32(em, x) if em.is_f32 else _erf_f64(em, x)
