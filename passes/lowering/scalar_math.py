"""Scalar expansions of PyTorch's integer power, power by a scalar exponent and
floor division, which `CpuScalarOps` (`scalar_ops`) composes: each is eager's
algorithm (c10's powi, pow_tensor_scalar's special exponents, c10's
div_floor_floating) written as loop-level ops, so results agree bit for bit.
"""

from __future__ import annotations

from fusec.dialects.inference import BF16, BOOL, F16
from fusec.passes.lowering.emitter import LoopEmitter
from xdsl.dialects import arith, llvm
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IntegerType
from xdsl.ir import Attribute, Operation, SSAValue


def int_pow(e: LoopEmitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """Integer `a ** b` as c10's powi: square-and-multiply over every bit of `b`
    (products wrap, as in eager); a negative `b` gives 0, or +-1 for a = +-1."""
    t = a.type
    assert isinstance(t, IntegerType)
    zero, one = e.const(0, t), e.const(1, t)
    result, base, bits = one, a, b
    for _ in range(t.width.data):
        odd = e.add(arith.CmpiOp(e.add(arith.AndIOp(bits, one)), zero, "ne"))
        result = e.add(arith.SelectOp(odd, e.add(arith.MuliOp(result, base)), result))
        base = e.add(arith.MuliOp(base, base))
        bits = e.add(arith.ShRUIOp(bits, one))
    if t == BOOL:
        return result
    minus_one = e.const(-1, t)
    odd_b = e.add(arith.CmpiOp(e.add(arith.AndIOp(b, one)), zero, "ne"))
    negative = e.add(arith.SelectOp(
        e.add(arith.CmpiOp(a, one, "eq")), one,
        e.add(arith.SelectOp(e.add(arith.CmpiOp(a, minus_one, "eq")),
                             e.add(arith.SelectOp(odd_b, minus_one, one)), zero))))  # fmt: skip
    return e.add(arith.SelectOp(e.add(arith.CmpiOp(b, zero, "slt")), negative, result))


def pow_scalar_exponent(e: LoopEmitter, x: SSAValue, y: SSAValue, dtype: Attribute) -> SSAValue:
    """`x ** scalar` as PyTorch's pow_tensor_scalar computes it: the exponents
    0.5, -0.5, 2, 3, -1 and -2 are sqrt, rsqrt and products, the rest `pow`
    (so `(-inf) ** 0.5` is sqrt(-inf) = NaN, not pow's +inf). float16 has no
    such cases but 2, 3, -1, -2 (exact in f32, so equal to pow), and bfloat16
    rounds the square inside a cube and inside `1 / (x * x)` (its kernel
    multiplies in bfloat16)."""
    t = x.type
    one = e.const(1.0, t)
    sq = e.add(arith.MulfOp(x, x))
    sq_rounded = e.cast(sq, dtype) if dtype == BF16 else sq
    root = e.add(mathd.SqrtOp(x))
    cases = [
        (2.0, sq),
        (3.0, e.add(arith.MulfOp(sq_rounded, x))),
        (-1.0, e.add(arith.DivfOp(one, x))),
        (-2.0, e.add(arith.DivfOp(one, sq_rounded))),
    ]
    if dtype != F16:
        cases += [(0.5, root), (-0.5, e.add(arith.DivfOp(one, root)))]
    r = e.add(mathd.PowFOp(x, y))
    for value, special in cases:
        r = e.add(arith.SelectOp(e.add(arith.CmpfOp(y, e.const(value, t), "oeq")), special, r))
    return r


def floor_div_int(e: LoopEmitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """Integer `torch.div(a, b, rounding_mode="floor")`; `b` a divisor that cannot
    trap (`CpuScalarOps.safe_divisor`)."""
    t = a.type
    q = e.add(arith.DivSIOp(a, b))
    r = e.add(arith.RemSIOp(a, b))
    zero = e.const(0, t)
    nonzero = e.add(arith.CmpiOp(r, zero, "ne"))
    signs = e.add(arith.XOrIOp(e.add(arith.CmpiOp(r, zero, "slt")),
                               e.add(arith.CmpiOp(b, zero, "slt"))))  # fmt: skip
    adjust = e.add(arith.AndIOp(nonzero, signs))
    return e.add(arith.SelectOp(adjust, e.add(arith.SubiOp(q, e.const(1, t))), q))


def floor_div_float(
    e: LoopEmitter, a: SSAValue, b: SSAValue, half: Attribute | None = None
) -> SSAValue:
    """Float `torch.div(a, b, rounding_mode="floor")`; with a `half` type every
    step is rounded to it, as ATen's kernel computes a half tensor-by-tensor floor
    division in that type (a scalar divisor is divided by in op math)."""
    t = a.type

    def step(op: Operation) -> SSAValue:
        v = e.add(op)
        return v if half is None else e.cast(v, half)

    # c10's div_floor_floating: exact where a plain floor(a / b) is off by one.
    zero, one, point5 = e.const(0.0, t), e.const(1.0, t), e.const(0.5, t)
    mod = e.add(llvm.FRemOp(a, b))  # arith has no remf; exact, so never rounded
    div = step(arith.DivfOp(step(arith.SubfOp(a, mod)), b))
    mod_nz = e.add(arith.CmpfOp(mod, zero, "une"))
    sign_diff = e.add(arith.XOrIOp(e.add(arith.CmpfOp(b, zero, "olt")),
                                   e.add(arith.CmpfOp(mod, zero, "olt"))))  # fmt: skip
    div = e.add(arith.SelectOp(e.add(arith.AndIOp(mod_nz, sign_diff)),
                               step(arith.SubfOp(div, one)), div))  # fmt: skip
    fl = e.add(mathd.FloorOp(div))
    up = e.add(arith.CmpfOp(step(arith.SubfOp(div, fl)), point5, "ogt"))
    fl = e.add(arith.SelectOp(up, step(arith.AddfOp(fl, one)), fl))
    # div == 0 keeps the sign of the true quotient; b == 0 gives a / b (inf/nan).
    is_zero = e.add(arith.CmpfOp(div, zero, "oeq"))
    quotient = step(arith.DivfOp(a, b))
    signed_zero = e.add(mathd.CopySignOp(zero, quotient))
    res = e.add(arith.SelectOp(is_zero, signed_zero, fl))
    b_zero = e.add(arith.CmpfOp(b, zero, "oeq"))
    return e.add(arith.SelectOp(b_zero, quotient, res))
