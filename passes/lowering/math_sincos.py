"""sin and cos as straight-line llvm-dialect float ops (`convert-math-to-llvm`
on the CPU; see `math_polynomials`): the fdlibm kernels on |d| <= pi/4 after a
reduction by multiples of pi/2, which is Cody-Waite's for |x| up to
`SINCOS_FAST_MAX` and an exact one by a table of 2/pi's bits (Payne-Hanek) above;
f32 lanes up to `SINCOS_FAST_MAX_F32` take an all-f32 path (SLEEF's).

    %y = math.sin %x : f32   ->   ... llvm.fmul / llvm.select / table loads ...
"""

from __future__ import annotations

import math

from fusec.passes.lowering.math_polynomials import Emitter, table_load
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float32Type,
    IntAttr,
    TensorType,
    f32,
    f64,
)
from xdsl.ir import Attribute, SSAValue

# ------------------------------------------------------------------ sin and cos

# pi/2 in three parts of 33 bits (fdlibm): j*part is exact for |j| < 2^20.
_PIO2 = (1.57079632673412561417e00, 6.07710050630396597660e-11, 2.02226624879595063154e-21)
_PIO4_MAX = math.pi / 4 * (1 + 2**-20)
_SIN = {
    True: [-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4],
    False: [
        -1.66666666666666324348e-01,
        8.33333333332248946124e-03,
        -1.98412698298579493134e-04,
        2.75573137070700676789e-06,
        -2.50507602534068634195e-08,
        1.58969099521155010221e-10,
    ],
}
_COS = {
    True: [4.166664568298827e-2, -1.388731625493765e-3, 2.443315711809948e-5],
    False: [
        4.16666666666666019037e-02,
        -1.38888888888741095749e-03,
        2.48015872894767294178e-05,
        -2.75573143513906633035e-07,
        2.08757232129817482790e-09,
        -1.13596475577881948265e-11,
    ],
}


# Lanes with |x| <= SINCOS_FAST_MAX take the Cody-Waite reduction above (j stays
# below 2^20, so j*part is exact); larger finite lanes take the table reduction.
SINCOS_FAST_MAX = 1.6e6
# f32 lanes with |x| <= SINCOS_FAST_MAX_F32 take the all-f32 path below.
SINCOS_FAST_MAX_F32 = 39000.0


def sincos_fast_max(ftype: Attribute) -> float:
    """The largest |x| whose "fast" sin/cos (see `SINCOS_RANGE`) is accurate."""
    return SINCOS_FAST_MAX_F32 if isinstance(ftype, Float32Type) else SINCOS_FAST_MAX


# pi in four f32 parts with trailing zeros (SLEEF's PI_A..Df): q*part is exact
# for |q| < 2^15, so x - q*pi loses nothing up to |x| = SINCOS_FAST_MAX_F32.
_PI_F32 = (3.140625, 0.0009670257568359375, 6.2771141529083251953e-07, 1.2154201256553420762e-10)
# sin d = d + d^3 P(d^2) on |d| <= pi/2 (SLEEF's sinf_u35 fit).
_SIN_HALF_PI_F32 = (
    -0.166666597127914428710938,
    0.00833307858556509017944336,
    -0.0001981069071916863322258,
    2.6083159809786593541503e-06,
)


def _sincos_f32_fast(em: Emitter, x: SSAValue, cosine: bool) -> SSAValue:
    """sin/cos of an f32 x with |x| <= SINCOS_FAST_MAX_F32, all in f32 (twice
    the lanes of the f64 reduction): sin x = (-1)^q sin(x - q*pi) with
    q = rint(x/pi), and cos x = sin(x - q'*pi/2) with the odd q' =
    2*rint(x/pi - 1/2) + 1, negated when q'/2 rounds down to an even number.
    One odd polynomial on |d| <= pi/2; 2.5 ulp at most against sin/cos in f64
    (checked near every multiple of pi/2 up to the bound)."""
    y = em.mul(x, em.c(1 / math.pi))
    if cosine:
        n_f, n_i = em.round_to_int(em.sub_exact(y, em.c(0.5)))
        q = em.add_exact(em.add_exact(n_f, n_f), em.c(1.0))
        parts = [p * 0.5 for p in _PI_F32]
        # flip when n is even: bit 0 of n, inverted, as the sign bit
        sign = em.xor(em.shl(n_i, em.ci(31)), em.ci(-(1 << 31)))
    else:
        q, n_i = em.round_to_int(y)
        parts = list(_PI_F32)
        sign = em.shl(n_i, em.ci(31))
    d = x
    for part in parts:
        # q*part is exact, so a contracted (FMA) or plain subtraction rounds once
        d = em.sub(d, em.mul(q, em.c(part)))
    d = em.from_bits(em.xor(em.bits(d), sign))
    s = em.mul(d, d)
    res = em.add(d, em.mul(s, em.mul(em.horner(s, _SIN_HALF_PI_F32), d)))
    if cosine:
        return res
    # sin(-0) = -0: the sum above rounds -0 + 0 to +0
    return em.select(em.cmp("oeq", x, em.c(0.0)), x, res)


TWO_OVER_PI_TABLE = "__fusec_two_over_pi"
"""Name of the private constant global holding 24-bit chunks of 2/pi."""
_TABLE_LEN = 48  # the largest f64 exponent needs chunks up to (1023-54)//24 + 5 = 45


def _two_over_pi_chunks(count: int) -> list[float]:
    """chunk k = bits 24k+1 .. 24k+24 of 2/pi after the binary point, as an
    integer-valued float: 2/pi = sum chunk[k] * 2^-(24(k+1))."""
    bits = 24 * count + 64
    one = 1 << (bits + 16)

    def arctan_inv(n: int) -> int:  # arctan(1/n) in fixed point, Taylor series
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k, sign = k + 2, -sign
        return total

    pi = 16 * arctan_inv(5) - 4 * arctan_inv(239)  # Machin, scaled by `one`
    two_over_pi = (2 * one * (1 << bits)) // pi  # 2/pi scaled by 2^bits
    return [float((two_over_pi >> (bits - 24 * (k + 1))) & 0xFFFFFF) for k in range(count)]


_TWO_OVER_PI = _two_over_pi_chunks(_TABLE_LEN)


def two_over_pi_global() -> llvm.GlobalOp:
    """The chunk table as a private constant `llvm.mlir.global`."""
    ty = llvm.LLVMArrayType(IntAttr(_TABLE_LEN), f64)
    value = DenseIntOrFPElementsAttr.from_list(TensorType(f64, [_TABLE_LEN]), _TWO_OVER_PI)
    return llvm.GlobalOp(ty, TWO_OVER_PI_TABLE, "private", constant=True, value=value)


def _mod4(ed: Emitter, p: SSAValue) -> SSAValue:
    """p mod 4 for p >= 0, exact: 4*floor(p/4) and p share p's ulp grid."""
    return ed.sub_exact(p, ed.mul_exact(ed.floor(ed.mul_exact(p, ed.c(0.25))), ed.c(4.0)))


def _reduce_large_f32(ed: Emitter, xd: SSAValue) -> SSAValue:
    """|x|*2/pi mod 4 for an f32 x held in f64: x has 24 significant bits and
    |x| < 2^128, so x times each of the first eight 24-bit chunks of 2/pi is
    exact in f64 and the chunks reach far enough (tail < 2^-60). The products
    that can exceed 2^26 are taken mod 4 exactly; no table index is needed."""
    ax = ed.fabs(xd)
    f = ed.c(0.0)
    for i in range(8):
        p = ed.mul_exact(ax, ed.c(_TWO_OVER_PI[i] * 2.0 ** (-24 * (i + 1))))
        # p < 2^(128-24i); below 2^26 the sum rounds at < 2^-26 quarter turns
        f = ed.add_exact(f, p if 128 - 24 * i <= 26 else _mod4(ed, p))
    return f


def _reduce_large_f64(ed: Emitter, xd: SSAValue) -> SSAValue:
    """|x|*2/pi mod 4 for an f64 x: scale |x| = y * 2^(24*k0) so that
    y < 2^78; the 2/pi chunks before k0 then contribute multiples of 4
    (dropped) and the next six give the fraction (tail < 2^-65). Each product
    of a 26/27-bit half of y with a 24-bit chunk is exact and the large ones
    are taken mod 4 exactly, so only the final short sum rounds."""
    ax = ed.fabs(xd)
    expo = ed.emit(llvm.LShrOp(ed.bits(ax), ed.ci(52)))
    t = ed.isub(expo, ed.ci(1023 + 54))
    t = ed.select(ed.icmp("slt", t, ed.ci(0)), ed.ci(0), t)
    # k0 = floor(t / 24) as (t * 2731) >> 16, exact for t < 2000 (t <= 969)
    k0 = ed.emit(llvm.LShrOp(ed.emit(llvm.MulOp(t, ed.ci(2731))), ed.ci(16)))
    y = ed.mul_exact(ax, ed.pow2(ed.isub(ed.ci(0), ed.emit(llvm.MulOp(k0, ed.ci(24))))))
    yh = ed.from_bits(ed.and_(ed.bits(y), ed.ci(-(1 << 27))))
    halves = [yh, ed.sub_exact(y, yh)]
    f = ed.c(0.0)
    for i in range(6):
        chunk = table_load(ed, TWO_OVER_PI_TABLE, ed.iadd(k0, ed.ci(i)))
        d = ed.mul_exact(chunk, ed.c(2.0 ** (-24 * (i + 1))))
        for half in halves:
            p = ed.mul_exact(half, d)
            # p < 2^(78-24i); below 64 the sum rounds at < 2^-46 quarter turns
            f = ed.add_exact(f, p if 78 - 24 * i <= 6 else _mod4(ed, p))
    return f


def _reduce_large(ed: Emitter, xd: SSAValue, is_f32: bool) -> tuple[SSAValue, SSAValue]:
    """(r, j mod 4 as i64) with x = j*pi/2 + r for any finite x (held in f64),
    Payne-Hanek style: eager's sin(1e12) needs 2/pi to far more bits than the
    three-part pi/2 above carries. Computed on every lane, branch-free so that
    the loop still vectorizes, and selected only where |x| > SINCOS_FAST_MAX."""
    f = _reduce_large_f32(ed, xd) if is_f32 else _reduce_large_f64(ed, xd)
    f = _mod4(ed, f)
    j_f, j_i = ed.round_to_int(f)
    r = ed.mul(ed.sub_exact(f, j_f), ed.c(math.pi / 2))
    # sin/cos(-|x|): j -> -j, r -> -r
    neg = ed.icmp("slt", ed.bits(xd), ed.ci(0))
    r = ed.select(neg, ed.neg(r), r)
    j_i = ed.select(neg, ed.isub(ed.ci(0), j_i), j_i)
    return r, ed.and_(j_i, ed.ci(3))


SINCOS_RANGE = "fusec.sincos_range"
"""Attribute on `math.sin`/`math.cos` set by `sincos-fast-path`: "fast" means
the result is only used where |x| <= `sincos_fast_max` (other lanes are
computed again), so a Cody-Waite reduction alone serves; "full" (or none) takes the
reduction that is exact for every x."""


def _cody_waite(ed: Emitter, xd: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(r, j mod 4 as i64) with x = j*pi/2 + r, in f64, exact for |x| <=
    SINCOS_FAST_MAX (j below 2^20, so each j*part is exact)."""
    j_f, j_i = ed.round_to_int(ed.mul(xd, ed.c(2 / math.pi)))
    r = xd
    for part in _PIO2:
        r = ed.sub_exact(r, ed.mul_exact(j_f, ed.c(part)))
    r = ed.clamp(r, -_PIO4_MAX, _PIO4_MAX)
    return r, ed.and_(j_i, ed.ci(3))


def _sincos_kernels(
    em: Emitter, x: SSAValue, fast: bool = False
) -> tuple[SSAValue, SSAValue, SSAValue]:
    """(sin r, cos r, quadrant j mod 4 as i64) with x = j*pi/2 + r; the
    reduction runs in f64 for both widths. `fast` (f64 only): Cody-Waite only
    (see `SINCOS_RANGE`)."""
    ed = em.other(f64)
    if fast:
        # f32 fast lanes take `_sincos_f32_fast` instead
        r, q = _cody_waite(ed, x)
    elif em.is_f32:
        # the f32 chunk reduction is exact for every magnitude and costs less
        # than Cody-Waite plus a select, so all lanes take it
        r, q = _reduce_large(ed, ed.ext(x, f64), True)
        r = ed.trunc(r, f32)
    else:
        r, q = _cody_waite(ed, x)
        ax = ed.fabs(x)
        big = ed.and_(ed.cmp("ogt", ax, ed.c(SINCOS_FAST_MAX)), ed.cmp("olt", ax, ed.c(math.inf)))
        r_big, q_big = _reduce_large(ed, x, False)
        r = ed.select(big, r_big, r)
        q = ed.select(big, q_big, q)
    z = em.mul(r, r)
    sin_r = em.add(r, em.mul(em.mul(r, z), em.horner(z, _SIN[em.is_f32])))
    hz = em.mul(em.c(0.5), z)
    w = em.sub_exact(em.c(1.0), hz)
    tail = em.mul(em.mul(z, z), em.horner(z, _COS[em.is_f32]))
    cos_r = em.add(w, em.add(em.sub_exact(em.sub_exact(em.c(1.0), w), hz), tail))
    return sin_r, cos_r, q


def _int_emitter(em: Emitter, q: SSAValue) -> Emitter:
    """An emitter whose integer type is that of the quadrant `q` (i32 or i64)."""
    return em if q.type == em.itype else em.other(f64)


def _quadrant(em: Emitter, s: SSAValue, c: SSAValue, q: SSAValue) -> SSAValue:
    """q=0: s, 1: c, 2: -s, 3: -c."""
    ed = _int_emitter(em, q)
    swap = ed.icmp("ne", ed.and_(q, ed.ci(1)), ed.ci(0))
    v = em.select(swap, c, s)
    neg = ed.icmp("ne", ed.and_(q, ed.ci(2)), ed.ci(0))
    return em.select(neg, em.neg(v), v)


def _f32_fast_where_small(em: Emitter, x: SSAValue, full: SSAValue, cosine: bool) -> SSAValue:
    """f32: the fast path's value on lanes it serves, `full` beyond. A lane's
    value must not depend on its neighbours: the exact rerun of a loop that met
    one large lane (see `SINCOS_RANGE`) would otherwise give every small lane the
    chunk reduction's value, an ulp from the fast path's (eager's), and
    `sin(x) == sin(x)` computed in two kernels was False."""
    ed = em.other(f64)
    small = ed.cmp("ole", ed.fabs(ed.ext(x, f64)), ed.c(SINCOS_FAST_MAX_F32))
    return em.select(small, _sincos_f32_fast(em, x, cosine), full)


def sin(em: Emitter, x: SSAValue, fast: bool = False) -> SSAValue:
    if fast and em.is_f32:
        return _sincos_f32_fast(em, x, False)
    s, c, q = _sincos_kernels(em, x, fast)
    # sin(-0) = -0 (so 1 / sin(x) is -inf there): the reductions give r = +-0 and
    # r + r^3 P rounds -0 + 0 to +0
    full = em.select(em.cmp("oeq", x, em.c(0.0)), x, _quadrant(em, s, c, q))
    return _f32_fast_where_small(em, x, full, False) if em.is_f32 else full


def cos(em: Emitter, x: SSAValue, fast: bool = False) -> SSAValue:
    if fast and em.is_f32:
        return _sincos_f32_fast(em, x, True)
    s, c, q = _sincos_kernels(em, x, fast)
    ed = _int_emitter(em, q)
    full = _quadrant(em, s, c, ed.and_(ed.iadd(q, ed.ci(1)), ed.ci(3)))
    return _f32_fast_where_small(em, x, full, True) if em.is_f32 else full
