"""Vectorizable expansions of `math` functions into plain llvm-dialect float ops.

Used by `convert-math-to-llvm` for the CPU target: a libm call (`expf`) stops
LLVM's loop vectorizer, while a straight line of `fmul`/`fadd`/`select`/bit
operations becomes `<8 x float>` code. Each function follows the classic recipe
(fdlibm / musl / Cephes): range reduction, a polynomial on the reduced
argument, reconstruction, then `select`s for the IEEE special cases (NaN
propagates, overflow to inf, underflow to 0, log(0) = -inf, ...).

f32 accuracy is a few ulp; f64 uses longer polynomials. The few functions whose
f32 reduction needs more than 24 bits (the sin/cos reduction, powf) compute in
f64 internally, which still vectorizes.

    %y = math.exp %x : f32
->
    %c = llvm.mlir.constant(12582912.0 : f32) : f32
    %t = llvm.fmul %x, %log2e {fastmathFlags = #llvm.fastmath<contract>} : f32
    ...  (Cody-Waite reduction, Horner polynomial, 2^n by exponent bits)
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Callable, Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    f32,
    f64,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue

_CONTRACT = llvm.FastMathAttr((llvm.FastMathFlag.ALLOW_CONTRACT,))


def _float_bits(value: float, ftype: AnyFloat) -> int:
    """The IEEE bits of `value` rounded to `ftype`, as a signed integer."""
    if isinstance(ftype, Float32Type):
        return struct.unpack("<i", struct.pack("<f", value))[0]
    return struct.unpack("<q", struct.pack("<d", value))[0]


class Emitter:
    """Appends llvm-dialect ops for one float type to a shared op list.

    `Emitter(f32, ops).add(a, b)` creates `llvm.fadd %a, %b : f32`, appends it to
    `ops` and returns its result, so an expansion reads like the formula.
    """

    def __init__(
        self,
        ftype: AnyFloat,
        ops: list[Operation] | None = None,
        consts: dict[tuple[Attribute, float | int], SSAValue] | None = None,
    ):
        self.ftype = ftype
        self.ops: list[Operation] = [] if ops is None else ops
        # one constant op per value per expansion keeps the IR readable
        self._consts: dict[tuple[Attribute, float | int], SSAValue] = (
            {} if consts is None else consts
        )
        self.is_f32 = isinstance(ftype, Float32Type)
        self.itype: IntegerType = i32 if self.is_f32 else i64
        self.mant = 23 if self.is_f32 else 52
        self.bias = 127 if self.is_f32 else 1023

    def other(self, ftype: AnyFloat) -> Emitter:
        """An emitter for another float type appending to the same op list."""
        return Emitter(ftype, self.ops, self._consts)

    def emit(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    # constants
    def c(self, value: float) -> SSAValue:
        key = (self.ftype, _float_bits(value, self.ftype))
        if key not in self._consts:
            attr = FloatAttr(value, self.ftype)
            self._consts[key] = self.emit(llvm.ConstantOp(attr, self.ftype))
        return self._consts[key]

    def ci(self, value: int) -> SSAValue:
        key = (self.itype, value)
        if key not in self._consts:
            attr = IntegerAttr(value, self.itype)
            self._consts[key] = self.emit(llvm.ConstantOp(attr, self.itype))
        return self._consts[key]

    # float arithmetic; `contract` lets LLVM fuse mul+add into an FMA where the
    # target has one (the polynomials tolerate either rounding).
    def add(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FAddOp(a, b, _CONTRACT))

    def sub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FSubOp(a, b, _CONTRACT))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FMulOp(a, b, _CONTRACT))

    def div(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FDivOp(a, b))

    def neg(self, a: SSAValue) -> SSAValue:
        return self.emit(llvm.FNegOp(a))

    # exact-rounding helpers that must not be contracted (Cody-Waite, 2Sum)
    def sub_exact(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FSubOp(a, b))

    def add_exact(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FAddOp(a, b))

    def mul_exact(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FMulOp(a, b))

    def horner(self, x: SSAValue, coeffs: Sequence[float]) -> SSAValue:
        """coeffs[0] + x*(coeffs[1] + x*(...)), highest degree innermost."""
        acc = self.c(coeffs[-1])
        for coeff in reversed(coeffs[:-1]):
            acc = self.add(self.mul(acc, x), self.c(coeff))
        return acc

    # comparisons and selection
    def cmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FCmpOp(a, b, pred))

    def icmp(self, pred: str, a: SSAValue, b: SSAValue) -> SSAValue:
        flag = llvm.ICmpPredicateFlag(pred).to_int()
        return self.emit(llvm.ICmpOp(a, b, IntegerAttr(flag, i64)))

    def select(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.SelectOp(cond, a, b))

    def or_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.OrOp(a, b))

    def and_(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.AndOp(a, b))

    def xor(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.XOrOp(a, b))

    def not_(self, a: SSAValue) -> SSAValue:
        true = self.emit(llvm.ConstantOp(IntegerAttr(-1, i1), i1))
        return self.emit(llvm.XOrOp(a, true))

    # integer view of the float bits
    def bits(self, a: SSAValue) -> SSAValue:
        return self.emit(llvm.BitcastOp(a, self.itype))

    def from_bits(self, a: SSAValue) -> SSAValue:
        return self.emit(llvm.BitcastOp(a, self.ftype))

    def iadd(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.AddOp(a, b))

    def isub(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.SubOp(a, b))

    def shl(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.ShlOp(a, b))

    def ashr(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.AShrOp(a, b))

    def sitofp(self, a: SSAValue) -> SSAValue:
        return self.emit(llvm.SIToFPOp(a, self.ftype))

    # intrinsics LLVM vectorizes natively
    def floor(self, a: SSAValue) -> SSAValue:
        return self.emit(llvm.FFloorOp(a))

    def fabs(self, a: SSAValue) -> SSAValue:
        return self.emit(llvm.FAbsOp(a, self.ftype))

    def copysign(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.emit(llvm.FCopySignOp(a, b))

    def ext(self, a: SSAValue, to: Attribute) -> SSAValue:
        return self.emit(llvm.FPExtOp(a, to))

    def trunc(self, a: SSAValue, to: Attribute) -> SSAValue:
        return self.emit(llvm.FPTruncOp(a, to))

    # building blocks
    def round_to_int(self, y: SSAValue) -> tuple[SSAValue, SSAValue]:
        """(float, int) of y rounded to nearest, for |y| < 2^(mant-1): adding
        1.5*2^mant pushes the integer into the low mantissa bits."""
        magic = 1.5 * 2.0**self.mant
        t = self.add_exact(y, self.c(magic))
        n_f = self.sub_exact(t, self.c(magic))
        n_i = self.isub(self.bits(t), self.ci(_float_bits(magic, self.ftype)))
        return n_f, n_i

    def pow2(self, n: SSAValue) -> SSAValue:
        """2^n for an integer n in the normal exponent range."""
        biased = self.iadd(n, self.ci(self.bias))
        return self.from_bits(self.shl(biased, self.ci(self.mant)))

    def scale(self, v: SSAValue, n: SSAValue) -> SSAValue:
        """v * 2^n for n in [2*emin, 2*emax], in two exact halves so that both
        the overflow edge and gradual underflow round once."""
        n1 = self.ashr(n, self.ci(1))
        n2 = self.isub(n, n1)
        return self.mul_exact(self.mul_exact(v, self.pow2(n1)), self.pow2(n2))

    def clamp(self, x: SSAValue, lo: float, hi: float) -> SSAValue:
        """x clamped to [lo, hi]; NaN stays NaN (both compares are false)."""
        x = self.select(self.cmp("ogt", x, self.c(hi)), self.c(hi), x)
        return self.select(self.cmp("olt", x, self.c(lo)), self.c(lo), x)

    def is_nan(self, x: SSAValue) -> SSAValue:
        return self.cmp("uno", x, x)


# --------------------------------------------------------------------------- exp


def _taylor(first: int, last: int) -> list[float]:
    return [1.0 / math.factorial(k) for k in range(first, last + 1)]


# expm1(r) = r + r^2 * Q(r) on |r| <= ln2/2: Taylor to r^8 (f32) / r^13 (f64)
# leaves a truncation error below 2^-30 / 2^-56 relative.
_EXPM1_Q = {True: _taylor(2, 8), False: _taylor(2, 13)}
# ln2 split so that n*LN2_HI is exact for every n the reduction produces.
_LN2_HI = {True: 0.693359375, False: 6.93147180369123816490e-01}
_LN2_LO = {True: -2.12194440e-4, False: 1.90821492927058770002e-10}
_EXP_HI = {True: 88.72283905206835, False: 709.782712893384}
_EXP_LO = {True: -103.97208404541016, False: -745.1332191019412}


def _expm1_poly(em: Emitter, r: SSAValue) -> SSAValue:
    r2 = em.mul(r, r)
    return em.add(r, em.mul(r2, em.horner(r, _EXPM1_Q[em.is_f32])))


def _exp_reduce(em: Emitter, xc: SSAValue) -> tuple[SSAValue, SSAValue]:
    """xc = n*ln2 + r with |r| <= ln2/2; returns (expm1(r), n)."""
    n_f, n_i = em.round_to_int(em.mul(xc, em.c(1 / math.log(2))))
    r = em.sub_exact(xc, em.mul_exact(n_f, em.c(_LN2_HI[em.is_f32])))
    r = em.sub_exact(r, em.mul_exact(n_f, em.c(_LN2_LO[em.is_f32])))
    return _expm1_poly(em, r), n_i


def _below_to_zero(em: Emitter, x: SSAValue, lo: float, hi: float) -> SSAValue:
    """x clamped to hi, and 0 where x < lo (NaN stays NaN): the lanes below lo
    are replaced by a constant result anyway, and computing them at lo would
    scale by 2^n into subnormal numbers, which x86 cores handle in microcode,
    about 100x slower: every -inf lane of a masked softmax did (2.3x the time
    of the whole kernel)."""
    x = em.select(em.cmp("ogt", x, em.c(hi)), em.c(hi), x)
    return em.select(em.cmp("olt", x, em.c(lo)), em.c(0.0), x)


def exp(em: Emitter, x: SSAValue) -> SSAValue:
    hi, lo = _EXP_HI[em.is_f32], _EXP_LO[em.is_f32]
    p, n = _exp_reduce(em, _below_to_zero(em, x, lo, hi))
    res = em.scale(em.add(em.c(1.0), p), n)
    res = em.select(em.cmp("ogt", x, em.c(hi)), em.c(math.inf), res)
    return em.select(em.cmp("olt", x, em.c(lo)), em.c(0.0), res)


def exp2(em: Emitter, x: SSAValue) -> SSAValue:
    hi = 128.0 if em.is_f32 else 1024.0
    lo = -151.0 if em.is_f32 else -1076.0
    xc = _below_to_zero(em, x, lo, hi)
    n_f, n_i = em.round_to_int(xc)
    r = em.mul(em.sub_exact(xc, n_f), em.c(math.log(2)))
    res = em.scale(em.add(em.c(1.0), _expm1_poly(em, r)), n_i)
    res = em.select(em.cmp("oge", x, em.c(hi)), em.c(math.inf), res)
    return em.select(em.cmp("olt", x, em.c(lo)), em.c(0.0), res)


def _expm1_nonneg_or_any(em: Emitter, x: SSAValue) -> SSAValue:
    """expm1 without the -0 fix-up (callers that care add it)."""
    hi = _EXP_HI[em.is_f32]
    lo = -30.0 if em.is_f32 else -45.0  # below this expm1 rounds to -1
    p, n = _exp_reduce(em, em.clamp(x, lo, hi))
    # 2^n*(p+1) - 1 = 2 * (s*p + (s - 1/2)) with s = 2^(n-1): s - 1/2 is exact
    # for small n, so no cancellation near 0, and rounds harmlessly for large
    # n; s stays finite up to n = emax + 1 (x = hi), and doubling is exact.
    s = em.pow2(em.isub(n, em.ci(1)))
    half = em.add(em.mul(s, p), em.sub_exact(s, em.c(0.5)))
    res = em.add_exact(half, half)
    res = em.select(em.cmp("ogt", x, em.c(hi)), em.c(math.inf), res)
    return em.select(em.cmp("olt", x, em.c(lo)), em.c(-1.0), res)


def expm1(em: Emitter, x: SSAValue) -> SSAValue:
    res = _expm1_nonneg_or_any(em, x)
    # keeps the sign of -0
    return em.select(em.cmp("oeq", x, em.c(0.0)), x, res)


def tanh(em: Emitter, x: SSAValue) -> SSAValue:
    """tanh|x| = e/(e+2) with e = expm1(2|x|): accurate from tiny to saturated."""
    a = em.fabs(x)
    e = _expm1_nonneg_or_any(em, em.add_exact(a, a))
    t = em.div(e, em.add(e, em.c(2.0)))
    sat = 9.1 if em.is_f32 else 19.5  # tanh rounds to 1 beyond this
    t = em.select(em.cmp("ogt", a, em.c(sat)), em.c(1.0), t)
    return em.copysign(t, x)


# --------------------------------------------------------------------------- log

# log(1+f) = f - hfsq + s*(hfsq + R(s^2)), s = f/(2+f) (fdlibm / musl)
_LG = {
    True: [0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841],
    False: [
        6.666666666666735130e-01,
        3.999999999940941908e-01,
        2.857142874366239149e-01,
        2.222219843214978396e-01,
        1.818357216161805012e-01,
        1.531383769920937332e-01,
        1.479819860511658591e-01,
    ],
}
_LOG_LN2_HI = {True: 6.9313812256e-01, False: 6.93147180369123816490e-01}
_LOG_LN2_LO = {True: 9.0580006145e-06, False: 1.90821492927058770002e-10}
_SQRT_HALF_BITS = {True: 0x3F3504F3, False: 0x3FE6A09E667F3BCD}


class _LogParts:
    """u = 2^k * (1 + f), sqrt(1/2) <= 1+f < sqrt(2), with the fdlibm terms."""

    def __init__(self, em: Emitter, u: SSAValue):
        extra = em.mant + 2
        # subnormals: scale into the normal range first
        sub = em.cmp("olt", u, em.c(2.0 ** (-em.bias + 1)))
        u = em.select(sub, em.mul_exact(u, em.c(2.0**extra)), u)
        k_adj = em.select(sub, em.ci(-extra), em.ci(0))
        one_bits = _float_bits(1.0, em.ftype)
        sqrt_half = _SQRT_HALF_BITS[em.is_f32]
        ix = em.iadd(em.bits(u), em.ci(one_bits - sqrt_half))
        k = em.iadd(em.isub(em.ashr(ix, em.ci(em.mant)), em.ci(em.bias)), k_adj)
        mant_mask = (1 << em.mant) - 1
        ix = em.iadd(em.and_(ix, em.ci(mant_mask)), em.ci(sqrt_half))
        self.f = em.sub_exact(em.from_bits(ix), em.c(1.0))
        self.k = em.sitofp(k)
        self.s = em.div(self.f, em.add_exact(em.c(2.0), self.f))
        z = em.mul(self.s, self.s)
        self.r = em.mul(z, em.horner(z, _LG[em.is_f32]))
        self.hfsq = em.mul(em.mul(em.c(0.5), self.f), self.f)
        # s*(hfsq+R): the small tail shared by log, log1p and log2
        self.tail = em.mul(self.s, em.add(self.hfsq, self.r))

    def log(self, em: Emitter, correction: SSAValue | None = None) -> SSAValue:
        lo = em.mul(self.k, em.c(_LOG_LN2_LO[em.is_f32]))
        if correction is not None:
            lo = em.add(lo, correction)
        acc = em.sub(em.add(self.tail, lo), self.hfsq)
        acc = em.add(acc, self.f)
        return em.add(acc, em.mul(self.k, em.c(_LOG_LN2_HI[em.is_f32])))


def _log_specials(em: Emitter, x: SSAValue, res: SSAValue) -> SSAValue:
    res = em.select(em.cmp("oeq", x, em.c(math.inf)), em.c(math.inf), res)
    res = em.select(em.cmp("oeq", x, em.c(0.0)), em.c(-math.inf), res)
    # x < 0 or NaN
    return em.select(em.cmp("ult", x, em.c(0.0)), em.c(math.nan), res)


def log(em: Emitter, x: SSAValue) -> SSAValue:
    return _log_specials(em, x, _LogParts(em, x).log(em))


def log10(em: Emitter, x: SSAValue) -> SSAValue:
    res = em.mul(_LogParts(em, x).log(em), em.c(1 / math.log(10)))
    return _log_specials(em, x, res)


def log2(em: Emitter, x: SSAValue) -> SSAValue:
    """musl's log2: f - hfsq split into a short `hi` (exact products with
    1/ln2's high part) and `lo`, so log2 of powers of two is exact."""
    p = _LogParts(em, x)
    mask = -(1 << 12) if em.is_f32 else -(1 << 32)
    hi = em.from_bits(em.and_(em.bits(em.sub_exact(p.f, p.hfsq)), em.ci(mask)))
    lo = em.add(em.sub_exact(em.sub_exact(p.f, hi), p.hfsq), p.tail)
    inv_hi = 1.4428710938e00 if em.is_f32 else 1.44269504072144627571e00
    inv_lo = -1.7605285393e-04 if em.is_f32 else 1.67517131648865118353e-10
    val_hi = em.mul_exact(hi, em.c(inv_hi))
    val_lo = em.add(em.mul(em.add(lo, hi), em.c(inv_lo)), em.mul(lo, em.c(inv_hi)))
    w = em.add_exact(p.k, val_hi)
    val_lo = em.add(val_lo, em.add_exact(em.sub_exact(p.k, w), val_hi))
    return _log_specials(em, x, em.add_exact(val_lo, w))


def log1p(em: Emitter, x: SSAValue) -> SSAValue:
    """log(u) + c/u with u = 1+x rounded and c the rounding error of u."""
    one = em.c(1.0)
    u = em.add_exact(one, x)
    c_small = em.sub_exact(x, em.sub_exact(u, one))
    c_big = em.sub_exact(one, em.sub_exact(u, x))
    c = em.select(em.cmp("olt", x, one), c_small, c_big)
    res = _LogParts(em, u).log(em, em.div(c, u))
    res = em.select(em.cmp("oeq", x, em.c(math.inf)), em.c(math.inf), res)
    res = em.select(em.cmp("oeq", x, em.c(-1.0)), em.c(-math.inf), res)
    res = em.select(em.cmp("ult", x, em.c(-1.0)), em.c(math.nan), res)
    # keeps the sign of -0
    return em.select(em.cmp("oeq", x, em.c(0.0)), x, res)


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


def _table_load(ed: Emitter, table: str, index: SSAValue) -> SSAValue:
    """Element `index` of the f64 constant global `table` (a gather once
    vectorized)."""
    ptr = ed.emit(llvm.AddressOfOp(table, llvm.LLVMPointerType()))
    elem = ed.emit(llvm.GEPOp(ptr, [llvm.GEP_USE_SSA_VAL], f64, ssa_indices=[index]))
    return ed.emit(llvm.LoadOp(elem, f64))


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
        chunk = _table_load(ed, TWO_OVER_PI_TABLE, ed.iadd(k0, ed.ci(i)))
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
    k = ed.isub(ed.bits(z), ed.ci(_float_bits(_ERF_SHIFT, f64)))
    k = ed.select(ed.cmp("ole", a, ed.c(_ERF_MAX)), k, ed.ci(_ERF_LAST))
    at = ed.shl(k, ed.ci(1))
    erf_r = _table_load(ed, ERF_TABLE, at)
    scale = _table_load(ed, ERF_TABLE, ed.iadd(at, ed.ci(1)))
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


def tables_used(
    op_name: str, ftype: Attribute, fast: bool
) -> list[tuple[str, Callable[[], llvm.GlobalOp]]]:
    """The constant globals the expansion of `op_name` loads from: (symbol,
    maker of the `llvm.mlir.global` a module needs once)."""
    if op_name in ("math.sin", "math.cos") and not fast:
        return [(TWO_OVER_PI_TABLE, two_over_pi_global)]
    if op_name == "math.erf":
        return [(ERF_TABLE, erf_table_global)]
    return []


# -------------------------------------------------------------------------- powf


def _pow_f64(ed: Emitter, x: SSAValue, y: SSAValue) -> SSAValue:
    """exp2(y*log2|x|) plus C99's sign and special-case rules."""
    ax = ed.fabs(x)
    # base 2 keeps exact powers of two exact (pow(2, 1024) overflows to inf)
    mag = exp2(ed, ed.mul(y, log2(ed, ax)))
    # log|x| = -inf / +inf at 0 / inf
    mag = ed.select(
        ed.cmp("oeq", ax, ed.c(0.0)),
        ed.select(ed.cmp("ogt", y, ed.c(0.0)), ed.c(0.0), ed.c(math.inf)),
        mag,
    )
    mag = ed.select(
        ed.cmp("oeq", ax, ed.c(math.inf)),
        ed.select(ed.cmp("ogt", y, ed.c(0.0)), ed.c(math.inf), ed.c(0.0)),
        mag,
    )
    # |x| = 1 with y = +-inf gives 1, not NaN from 0*inf
    mag = ed.select(ed.cmp("oeq", ax, ed.c(1.0)), ed.c(1.0), mag)
    mag = ed.select(ed.is_nan(x), x, mag)
    mag = ed.select(ed.is_nan(y), y, mag)
    y_int = ed.cmp("oeq", ed.floor(y), y)
    half = ed.mul_exact(y, ed.c(0.5))
    y_odd = ed.and_(y_int, ed.cmp("one", ed.floor(half), half))
    x_neg = ed.icmp("slt", ed.bits(x), ed.ci(0))
    res = ed.select(ed.and_(x_neg, y_odd), ed.neg(mag), mag)
    finite_neg = ed.and_(ed.cmp("olt", x, ed.c(0.0)), ed.cmp("one", x, ed.c(-math.inf)))
    y_frac = ed.and_(ed.not_(y_int), ed.cmp("ord", y, y))
    res = ed.select(ed.and_(finite_neg, y_frac), ed.c(math.nan), res)
    # pow(x, 1) = x exactly (log2 of DBL_MAX rounds up to 1024)
    res = ed.select(ed.cmp("oeq", y, ed.c(1.0)), x, res)
    # pow(1, y) = 1 and pow(x, 0) = 1, even for NaN
    res = ed.select(ed.cmp("oeq", x, ed.c(1.0)), ed.c(1.0), res)
    return ed.select(ed.cmp("oeq", y, ed.c(0.0)), ed.c(1.0), res)


def powf(em: Emitter, x: SSAValue, y: SSAValue) -> SSAValue:
    if not em.is_f32:
        return _pow_f64(em, x, y)
    ed = em.other(f64)
    return ed.trunc(_pow_f64(ed, ed.ext(x, f64), ed.ext(y, f64)), f32)


UNARY: dict[str, Callable[[Emitter, SSAValue], SSAValue]] = {
    "math.exp": exp,
    "math.exp2": exp2,
    "math.expm1": expm1,
    "math.log": log,
    "math.log10": log10,
    "math.log1p": log1p,
    "math.log2": log2,
    "math.tanh": tanh,
    "math.erf": erf,
    "math.sin": sin,
    "math.cos": cos,
}
"""Expansions of unary `math` ops, by op name."""

BINARY: dict[str, Callable[[Emitter, SSAValue, SSAValue], SSAValue]] = {"math.powf": powf}
"""Expansions of binary `math` ops, by op name."""

SUPPORTED_TYPES = (Float32Type, Float64Type)
