"""What the loop-level lowerings share: the op emitter (`_Emitter`), each
pointwise op's scalar semantics (`emit_pointwise`), dtypes, a kernel body's
operand plan and exits, and a kernel function's entry block and signature.

    %0 = aten.mul %x, %y : tensor<4xf16>, tensor<4xf16> -> tensor<4xf16>
    -> emit_pointwise(e, op, [x, y])     (x, y: elements loaded as f32)
    %1 = arith.mulf %x, %y : f32
    %2 = arith.truncf %1 : f32 to f16    (rounded to f16 as eager rounds each result,
    %3 = arith.extf %2 : f16 to f32       then computed on in f32)

`lower-group-to-loops` (`fusec.passes.lower_group_to_loops`: pointwise kernels
and the pass), the reduction kernels (`fusec.passes.lower_reduction_to_loops`,
`fusec.passes.lower_reduction_gpu`) and the GPU loops (`fusec.passes.gpu_loop`)
build on this module, which imports none of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.inference import BF16, BOOL, F16, F32, F64
from fusec.dialects.opmath import is_step
from fusec.passes.kernel_cost import element_cost
from fusec.runtime.kernel_signature import CatExit, KernelSignature, OperandSpec, OutputSpec
from xdsl.dialects import arith, builtin, func, llvm, memref
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

INDEX = IndexType()
DYN = builtin.DYNAMIC_INDEX

# ----------------------------------------------------------------- signature data
# (the dataclasses live in `fusec.runtime.kernel_signature`, which needs no xDSL)

__all__ = ["CatExit", "KernelSignature", "OperandSpec", "OutputSpec"]


def dtype_name(t: Attribute) -> str:
    """`f32`, `bf16`, `i1`, ... as written in the IR."""
    return str(t)


# ----------------------------------------------------------------- type helpers


def compute_type(t: Attribute) -> Attribute:
    """Half types compute in f32 (as PyTorch's CPU kernels and Inductor do);
    uint8 in i32, zero-extended (arith's integers are signless, and every
    signed i32 op but a wrap gives the unsigned result on values 0..255), each
    result wrapped back to 0..255 as uint8 arithmetic wraps (`wrap_u8`)."""
    if t in (F16, BF16):
        return F32
    return inf.I32 if t == inf.U8 else t


def storage_type(t: Attribute) -> Attribute:
    """The element type of a kernel's memref for a tensor of element type `t`:
    uint8 is stored as (signless) i8, the others as they are."""
    return inf.I8 if t == inf.U8 else t


def is_floating(t: Attribute) -> bool:
    return t in (F16, BF16, F32, F64)


_VIEW_OPS = (
    aten.ChunkOp,
    aten.SplitOp,
    aten.NarrowOp,
    aten.SliceOp,
    aten.ExpandOp,
    aten.UnsqueezeOp,
    aten.SqueezeOp,
    aten.PermuteOp,
    aten.TransposeOp,
    aten.ViewOp,
    aten.ReshapeOp,
)


def _view_step(op: Operation, result_index: int) -> tuple[object, ...]:
    def p(name: str) -> int:
        attr = op.properties[name]
        assert isinstance(attr, IntegerAttr)
        return attr.value.data

    match op:
        case aten.ChunkOp():
            return ("chunk", result_index, p("chunks"), p("dim"))
        case aten.SplitOp():
            d = inf.normalize_dim(p("dim"), op.input.type.get_num_dims())
            sizes = [r.type.get_shape()[d] for r in op.results]
            start = sum(sizes[:result_index])
            return ("narrow", d, start, sizes[result_index])
        case aten.NarrowOp():
            return ("narrow", p("dim"), p("start"), p("length"))
        case aten.SliceOp():
            return ("slice", p("dim"), p("start"), p("end"), p("step"))
        case aten.ExpandOp():
            return ("rank", op.results[0].type.get_num_dims())
        case aten.UnsqueezeOp():
            return ("unsqueeze", p("dim"))
        case aten.SqueezeOp():
            return ("squeeze",) if op.dim is None else ("squeeze", op.dim.value.data)
        case aten.PermuteOp():
            return ("permute", tuple(op.dims.get_values()))
        case aten.TransposeOp():
            return ("transpose", p("dim0"), p("dim1"))
        case _:
            return ("reshape", inf.reshape_sizes(op.results[0].type.get_shape()))


# ----------------------------------------------------------------- the emitter


@dataclass
class _Emitter:
    """Appends loop-level ops for one element of the index space."""

    ops: list[Operation] = field(default_factory=list)
    zero_divisors: list[SSAValue] = field(default_factory=list)
    """i1 values, true where an integer divisor of this element is 0."""
    gpu: bool = False
    """Emitting a GPU kernel: ops whose eager result differs between PyTorch's
    CPU and CUDA kernels (signed zeros in max/min) follow CUDA's."""

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def const(self, value: float | int | bool, t: Attribute) -> SSAValue:
        if isinstance(t, IndexType) or isinstance(t, IntegerType):
            return self.add(arith.ConstantOp(IntegerAttr(int(value), t)))
        return self.add(arith.ConstantOp(FloatAttr(float(value), t)))

    def wrap_u8(self, v: SSAValue) -> SSAValue:
        """An i32 computed for a uint8 result, wrapped to 0..255 (`v & 255`)."""
        return self.add(arith.AndIOp(v, self.const(255, inf.I32)))

    def load(self, ref: SSAValue, offsets: Sequence[SSAValue], et: Attribute) -> SSAValue:
        """An element of `ref` (a tensor of element type `et`) as a compute-typed
        value: halves widened to f32, uint8 zero-extended to i32."""
        loaded = self.add(memref.LoadOp.get(ref, offsets))
        if et in (F16, BF16):
            return self.add(arith.ExtFOp(loaded, F32))
        if et == inf.U8:
            return self.add(arith.ExtUIOp(loaded, inf.I32))
        return loaded

    def store(self, v: SSAValue, ref: SSAValue, offsets: Sequence[SSAValue], et: Attribute) -> None:
        """Stores a value as element type `et` (`load`'s inverse)."""
        v = self.cast(v, compute_type(et))
        if et in (F16, BF16):
            v = self.add(arith.TruncFOp(v, et))
        elif et == inf.U8:
            v = self.add(arith.TruncIOp(v, inf.I8))
        self.add(memref.StoreOp.get(v, ref, offsets))

    def to_bool(self, v: SSAValue) -> SSAValue:
        t = v.type
        if t == BOOL:
            return v
        zero = self.const(0, t)
        if is_floating(t):
            return self.add(arith.CmpfOp(v, zero, "une"))
        return self.add(arith.CmpiOp(v, zero, "ne"))

    def cast(self, v: SSAValue, to: Attribute) -> SSAValue:
        """PyTorch's `to(dtype)` between compute types (f16/bf16 are rounded by
        a trip through the storage type, uint8 wraps to 0..255 in i32)."""
        frm = v.type
        if to == inf.U8:
            return self.wrap_u8(self.cast(v, inf.I32))
        if to in (F16, BF16):
            narrow = self.cast(v, F32) if frm != F32 else v
            rounded = self.add(arith.TruncFOp(narrow, to))
            return self.add(arith.ExtFOp(rounded, F32))
        if frm == to:
            return v
        if to == BOOL:
            return self.to_bool(v)
        if is_floating(to):
            if is_floating(frm):
                wider = frm.bitwidth < to.bitwidth  # type: ignore[attr-defined]
                return self.add(arith.ExtFOp(v, to) if wider else arith.TruncFOp(v, to))
            if frm == BOOL:
                return self.add(arith.UIToFPOp(v, to))
            return self.add(arith.SIToFPOp(v, to))
        assert isinstance(to, IntegerType)
        if is_floating(frm):
            return self.add(arith.FPToSIOp(v, to))
        assert isinstance(frm, IntegerType)
        if frm == BOOL:
            return self.add(arith.ExtUIOp(v, to))
        if frm.width.data < to.width.data:
            return self.add(arith.ExtSIOp(v, to))
        return self.add(arith.TruncIOp(v, to))


def _prop_number(op: Operation, name: str) -> float | int | None:
    attr = op.properties.get(name)
    if attr is None:
        return None
    assert isinstance(attr, FloatAttr | IntegerAttr)
    if attr.type == BOOL:  # i1 prints `true` as -1 (signed); `min=True` is 1
        return int(attr.value.data != 0)
    return attr.value.data


def _to_common_dtype(
    e: _Emitter, op: Operation, args: Sequence[SSAValue], dtype: Attribute
) -> list[SSAValue]:
    """PyTorch converts every operand to the op's common dtype before computing,
    so with a half type a Python scalar, a 0-d tensor of a wider type or an
    integer is first rounded to it:

        x_f16 < 0.1   compares x with f16(0.1) = 0.0999755859375, not with 0.1

    except where its CPU kernels read the scalar in op math (`_opmath_operands`):
    `x_f16 * 1e-8` multiplies by the float32 1e-8, not by f16(1e-8) = 0."""
    if dtype not in (F16, BF16):
        return list(args)
    keep = _opmath_operands(op)
    return [
        v if k in keep or inf.element_type(o.type) == dtype else e.cast(v, dtype)
        for k, (o, v) in enumerate(zip(op.operands, args, strict=True))
    ]


def _opmath_operands(op: Operation) -> set[int]:
    """Operands a half-typed op reads as float32 values, unrounded: all of an
    op-math step's (`fusec.dialects.opmath`), and the scalar (a Python number or
    a 0-d tensor) that is the second operand of `mul` and `div`: ATen's
    mul/div kernels take it as `iter.original_scalar_value<float>`. A Python
    number first in a `mul` is `x.__rmul__(s)`, so it is the second in eager."""
    if is_step(op):
        return set(range(len(op.operands)))
    if op.name not in ("aten.mul", "aten.div") or len(op.operands) != 2:
        return set()
    keep: set[int] = set()
    second = op.operands[1].type
    if not isinstance(second, TensorType) or second.get_num_dims() == 0:
        keep.add(1)
    if op.name == "aten.mul" and not isinstance(op.operands[0].type, TensorType):
        keep.add(0)
    return keep


def round_result(e: _Emitter, op: Operation, v: SSAValue) -> SSAValue:
    """`v`, the value of `op`'s (first) result, rounded to the result's half type
    as eager rounds every op's result, so overflow to inf, the values an int or
    bool cast sees and every later op match eager; an op-math step keeps float32."""
    t = op.results[0].type
    et = t.get_element_type() if isinstance(t, TensorType) else t
    if et not in (F16, BF16) or is_step(op) or v.type != F32:
        return v
    return e.cast(v, et)


_CMPF = {"aten.eq": "oeq", "aten.ne": "une", "aten.lt": "olt", "aten.le": "ole",
         "aten.gt": "ogt", "aten.ge": "oge"}  # fmt: skip
_CMPI = {"aten.eq": "eq", "aten.ne": "ne", "aten.lt": "slt", "aten.le": "sle",
         "aten.gt": "sgt", "aten.ge": "sge"}  # fmt: skip
_CMPU = {"aten.eq": "eq", "aten.ne": "ne", "aten.lt": "ult", "aten.le": "ule",
         "aten.gt": "ugt", "aten.ge": "uge"}  # fmt: skip
_UNARY_MATH = {
    "aten.exp": mathd.ExpOp, "aten.expm1": mathd.ExpM1Op, "aten.log": mathd.LogOp,
    "aten.log1p": mathd.Log1pOp, "aten.sqrt": mathd.SqrtOp, "aten.rsqrt": mathd.RsqrtOp,
    "aten.tanh": mathd.TanhOp, "aten.erf": mathd.ErfOp, "aten.sin": mathd.SinOp,
    "aten.cos": mathd.CosOp,
}  # fmt: skip


def _maximum(e: _Emitter, a: SSAValue, b: SSAValue, is_max: bool) -> SSAValue:
    t = a.type
    if is_floating(t):
        # PyTorch's max/min (and clamp): NaN propagates, and on a tie (0.0 vs
        # -0.0) the first operand wins on the CPU (std::max), where CUDA's
        # fmaxf/fminf order -0.0 below +0.0: max(-0.0, 0.0) is +0.0 there.
        other_wins = e.add(arith.CmpfOp(a, b, "olt") if is_max else arith.CmpfOp(b, a, "olt"))
        if e.gpu:
            one = e.const(1.0, t)
            a_negative = e.add(arith.CmpfOp(e.add(mathd.CopySignOp(one, a)), one, "olt"))
            tie_sign = a_negative if is_max else e.add(arith.XOrIOp(a_negative, e.const(1, BOOL)))
            tie = e.add(arith.AndIOp(e.add(arith.CmpfOp(a, b, "oeq")), tie_sign))
            other_wins = e.add(arith.OrIOp(other_wins, tie))
        r = e.add(arith.SelectOp(other_wins, b, a))
        nan = e.add(arith.CmpfOp(a, b, "uno"))
        return e.add(arith.SelectOp(nan, e.add(arith.AddfOp(a, b)), r))
    if t == BOOL:
        return e.add(arith.OrIOp(a, b) if is_max else arith.AndIOp(a, b))
    return e.add(arith.MaxSIOp(a, b) if is_max else arith.MinSIOp(a, b))


def _sigmoid(e: _Emitter, x: SSAValue) -> SSAValue:
    one = e.const(1.0, x.type)
    ex = e.add(mathd.ExpOp(e.add(arith.NegfOp(x))))
    return e.add(arith.DivfOp(one, e.add(arith.AddfOp(one, ex))))


def _divides_integers(op: Operation) -> bool:
    """`aten.div` of integers (any rounding mode): its lowering needs `_safe_divisor`."""
    if op.name != "aten.div" or not op.results:
        return False
    t = op.results[0].type
    return isinstance(t, TensorType) and not is_floating(t.get_element_type())


def _safe_divisor(e: _Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
    """An integer divisor that cannot trap: `x / 0 -> x / 1` (recorded in
    `e.zero_divisors`, so the host raises eager's error) and `MIN / -1 -> MIN / 1`
    (the wrapped quotient, as eager computes it without trapping)."""
    t = a.type
    assert isinstance(t, IntegerType)
    if t == BOOL:
        raise DiagnosticException("lower-group-to-loops: integer division of bools")
    zero = e.add(arith.CmpiOp(b, e.const(0, t), "eq"))
    e.zero_divisors.append(zero)
    width = t.width.data
    overflow = e.add(arith.AndIOp(e.add(arith.CmpiOp(b, e.const(-1, t), "eq")),
                                  e.add(arith.CmpiOp(a, e.const(-(1 << (width - 1)), t), "eq"))))  # fmt: skip
    return e.add(arith.SelectOp(e.add(arith.OrIOp(zero, overflow)), e.const(1, t), b))


def _int_pow(e: _Emitter, a: SSAValue, b: SSAValue) -> SSAValue:
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


def _pow_scalar_exponent(e: _Emitter, x: SSAValue, y: SSAValue, dtype: Attribute) -> SSAValue:
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


def _floor_div(e: _Emitter, a: SSAValue, b: SSAValue, half: Attribute | None = None) -> SSAValue:
    """`torch.div(a, b, rounding_mode="floor")`; with a `half` type every step is
    rounded to it, as ATen's kernel computes a half tensor-by-tensor floor
    division in that type (a scalar divisor is divided by in op math)."""
    t = a.type
    if not is_floating(t):
        b = _safe_divisor(e, a, b)
        q = e.add(arith.DivSIOp(a, b))
        r = e.add(arith.RemSIOp(a, b))
        zero = e.const(0, t)
        nonzero = e.add(arith.CmpiOp(r, zero, "ne"))
        signs = e.add(arith.XOrIOp(e.add(arith.CmpiOp(r, zero, "slt")),
                                   e.add(arith.CmpiOp(b, zero, "slt"))))  # fmt: skip
        adjust = e.add(arith.AndIOp(nonzero, signs))
        return e.add(arith.SelectOp(adjust, e.add(arith.SubiOp(q, e.const(1, t))), q))

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


def _operand_type(t: Attribute) -> Attribute:
    """What an op of common dtype `t` converts its operands to: its compute
    type, or for uint8 (in i32) the operand wrapped to 0..255, as PyTorch
    converts a Python-scalar operand: `x_u8 // -3` divides by 253."""
    return t if t == inf.U8 else compute_type(t)


def emit_pointwise(e: _Emitter, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    """The scalar computation of one `aten` pointwise op on compute-typed values."""
    res = _emit_pointwise(e, op, args)
    res_t = op.results[0].type
    assert isinstance(res_t, TensorType)
    if res_t.get_element_type() == inf.U8 and op.name != "aten.to":  # `to` has wrapped
        return e.wrap_u8(res)
    if op.name == "aten.to":  # `cast` has rounded
        return res
    return round_result(e, op, res)


def _emit_pointwise(e: _Emitter, op: Operation, args: Sequence[SSAValue]) -> SSAValue:
    res_t = op.results[0].type
    assert isinstance(res_t, TensorType)
    ct = compute_type(res_t.get_element_type())
    name = op.name
    if name in _CMPF:
        dtype = inf.result_dtype([o.type for o in op.operands])
        common = compute_type(dtype)
        a, b = (e.cast(v, _operand_type(dtype)) for v in _to_common_dtype(e, op, args, dtype))
        if is_floating(common):
            return e.add(arith.CmpfOp(a, b, _CMPF[name]))
        return e.add(arith.CmpiOp(a, b, (_CMPU if common == BOOL else _CMPI)[name]))
    if name in ("aten.logical_and", "aten.logical_or", "aten.logical_xor"):
        a, b = (e.to_bool(v) for v in args)
        cls = {"aten.logical_and": arith.AndIOp, "aten.logical_or": arith.OrIOp,
               "aten.logical_xor": arith.XOrIOp}[name]  # fmt: skip
        return e.add(cls(a, b))
    if name == "aten.logical_not":
        return e.add(arith.XOrIOp(e.to_bool(args[0]), e.const(1, BOOL)))
    et = _operand_type(res_t.get_element_type())
    if name == "aten.where":
        cond = e.to_bool(args[0])
        return e.add(arith.SelectOp(cond, e.cast(args[1], et), e.cast(args[2], et)))
    if name == "aten.to":
        return e.cast(args[0], res_t.get_element_type())
    if name == "aten.full_like":
        value = _prop_number(op, "value")
        assert value is not None
        return e.const(bool(value) if ct == BOOL else value, ct)
    # (a float pow takes its scalar exponent at full precision, a half one rounded)
    args = _to_common_dtype(e, op, args, res_t.get_element_type())
    xs = [e.cast(v, et) for v in args]
    fl = is_floating(ct)
    x = xs[0]
    match name:
        case "aten.neg":
            return e.add(arith.NegfOp(x) if fl else arith.SubiOp(e.const(0, ct), x))
        case "aten.abs":
            if fl:
                return e.add(mathd.AbsFOp(x))
            neg = e.add(arith.SubiOp(e.const(0, ct), x))
            return e.add(arith.SelectOp(e.add(arith.CmpiOp(x, e.const(0, ct), "slt")), neg, x))
        case "aten.relu":
            if not fl:
                return _maximum(e, x, e.const(0, ct), True)
            zero = e.const(0.0, ct)
            # CPU: x < 0 ? 0 : x keeps -0.0; CUDA's relu is fmaxf(x, 0): +0.0.
            below = "ole" if e.gpu else "olt"
            return e.add(arith.SelectOp(e.add(arith.CmpfOp(x, zero, below)), zero, x))
        case n if n in _UNARY_MATH:
            return e.add(_UNARY_MATH[n](x))
        case "aten.reciprocal":
            return e.add(arith.DivfOp(e.const(1.0, ct), x))
        case "aten.sigmoid":
            return _sigmoid(e, x)
        case "aten.silu":
            return e.add(arith.MulfOp(x, _sigmoid(e, x)))
        case "aten.leaky_relu":
            slope_value = _prop_number(op, "negative_slope")
            slope = e.const(0.01 if slope_value is None else slope_value, ct)
            pos = e.add(arith.CmpfOp(x, e.const(0.0, ct), "ogt"))
            return e.add(arith.SelectOp(pos, x, e.add(arith.MulfOp(x, slope))))
        case "aten.gelu":
            half, one = e.const(0.5, ct), e.const(1.0, ct)
            approx = op.properties.get("approximate")
            if approx is not None and approx.data == "tanh":  # type: ignore[attr-defined]
                k0 = e.const(math.sqrt(2.0 / math.pi), ct)
                k1 = e.const(0.044715, ct)
                cube = e.add(arith.MulfOp(x, e.add(arith.MulfOp(x, x))))
                inner = e.add(
                    arith.MulfOp(k0, e.add(arith.AddfOp(x, e.add(arith.MulfOp(k1, cube)))))
                )
                t = e.add(mathd.TanhOp(inner))
            else:
                t = e.add(mathd.ErfOp(e.add(arith.MulfOp(x, e.const(math.sqrt(0.5), ct)))))
            return e.add(arith.MulfOp(e.add(arith.MulfOp(half, x)), e.add(arith.AddfOp(one, t))))
        case "aten.clamp":
            lo, hi = _prop_number(op, "min"), _prop_number(op, "max")
            et = res_t.get_element_type()
            if lo is not None:
                x = _maximum(e, x, e.cast(e.const(lo, ct), et), True)
            if hi is not None:
                x = _maximum(e, x, e.cast(e.const(hi, ct), et), False)
            return x
        case "aten.add" | "aten.sub":
            b = xs[1]
            alpha = _prop_number(op, "alpha")
            if alpha is not None and alpha != 1:
                # alpha is converted to the op's dtype, as the other operands are:
                # add(inf, x, alpha=1e-8) in f16 is inf + x * 0 = NaN, as in eager.
                scale = e.const(alpha, ct)
                if not is_step(op):
                    scale = e.cast(scale, res_t.get_element_type())
                b = e.add((arith.MulfOp if fl else arith.MuliOp)(b, scale))
            if ct == BOOL:
                return e.add(arith.OrIOp(x, b))
            if name == "aten.add":
                return e.add(arith.AddfOp(x, b) if fl else arith.AddiOp(x, b))
            return e.add(arith.SubfOp(x, b) if fl else arith.SubiOp(x, b))
        case "aten.mul":
            if ct == BOOL:
                return e.add(arith.AndIOp(x, xs[1]))
            return e.add(arith.MulfOp(x, xs[1]) if fl else arith.MuliOp(x, xs[1]))
        case "aten.div":
            mode = op.properties.get("rounding_mode")
            mode_s = None if mode is None else mode.data  # type: ignore[attr-defined]
            if mode_s == "floor":
                dt = res_t.get_element_type()
                in_half = dt in (F16, BF16) and 1 not in _opmath_operands(op)
                return _floor_div(e, x, xs[1], dt if in_half else None)
            if fl:
                q = e.add(arith.DivfOp(x, xs[1]))
                if mode_s != "trunc":
                    return q
                # Half types round the quotient before truncating, as PyTorch does,
                # but for a scalar divisor, which its kernel divides by in op math.
                if 1 not in _opmath_operands(op):
                    q = e.cast(q, res_t.get_element_type())
                return e.add(mathd.TruncOp(q))
            return e.add(arith.DivSIOp(x, _safe_divisor(e, x, xs[1])))
        case "aten.pow":
            if not fl:
                return _int_pow(e, x, xs[1])
            if isinstance(op.operands[1].type, TensorType):
                return e.add(mathd.PowFOp(x, xs[1]))
            return _pow_scalar_exponent(e, x, xs[1], res_t.get_element_type())
        case "aten.maximum" | "aten.minimum":
            return _maximum(e, x, xs[1], name == "aten.maximum")
    raise DiagnosticException(f"lower-group-to-loops: no lowering for {name}")


# ----------------------------------------------------------------- kernel builder


@dataclass
class _Plan:
    operands: list[OperandSpec]
    operand_of: dict[SSAValue, int]
    scalars: list[tuple[int, str]]
    scalar_of: dict[SSAValue, int]


def _plan(block: Block) -> _Plan:
    """Which (input, view chain) pairs the kernel reads, and its scalar inputs."""
    chains: dict[SSAValue, tuple[int, tuple[tuple[object, ...], ...]]] = {}
    scalars: list[tuple[int, str]] = []
    scalar_of: dict[SSAValue, int] = {}
    for i, arg in enumerate(block.args):
        if isinstance(arg.type, TensorType):
            chains[arg] = (i, ())
        else:
            scalar_of[arg] = len(scalars)
            scalars.append((i, dtype_name(arg.type)))
    for op in block.ops:
        if isinstance(op, _VIEW_OPS):
            src = op.operands[0]
            if src not in chains:
                raise DiagnosticException(
                    f"lower-group-to-loops: {op.name} of a computed value is not supported "
                    "(only views of group inputs)"
                )
            i, views = chains[src]
            for k, r in enumerate(op.results):
                chains[r] = (i, (*views, _view_step(op, k)))
    operands: list[OperandSpec] = []
    operand_of: dict[SSAValue, int] = {}
    for op in block.ops:
        uses = [v for v in op.operands if v in chains]
        if isinstance(op, _VIEW_OPS):
            continue
        for v in uses:
            if v not in operand_of:
                i, views = chains[v]
                et = v.type.get_element_type()  # type: ignore[attr-defined]
                operand_of[v] = len(operands)
                operands.append(OperandSpec(i, views, dtype_name(et)))
    return _Plan(operands, operand_of, scalars, scalar_of)


def _check_dtype(t: Attribute) -> None:
    if t not in inf.DTYPES:
        raise DiagnosticException(f"lower-group-to-loops: dtype {t} is not supported")


_CAT_NOT_EXIT = (
    "lower-group-to-loops: aten.cat inside a group must be an exit "
    "(its result used only by fusion.yield)"
)


def _exit_outputs(
    body: Block, result_types: Sequence[Attribute]
) -> tuple[list[SSAValue], list[Attribute], list[CatExit]]:
    """The values the kernel writes and their types, and the group's cat exits.

    A yielded `aten.cat` is written part by part: each part is an output of its
    own, of the part's shape in the cat's dtype (the store casts, as `torch.cat`
    promotes), so the index space stays the parts' shape."""
    term = body.last_op
    assert term is not None
    values: list[SSAValue] = []
    types: list[Attribute] = []
    exits: list[CatExit] = []
    for k, (v, t) in enumerate(zip(term.operands, result_types, strict=True)):
        cat = v.op if isinstance(v, OpResult) else None
        if not isinstance(cat, aten.CatOp) or cat.parent_block() is not body:
            values.append(v)
            types.append(t)
            continue
        if any(u.operation is not term for u in cat.result.uses):
            raise DiagnosticException(_CAT_NOT_EXIT)
        part_types = [p.type for p in cat.inputs]
        shapes = {tuple(pt.get_shape()) for pt in part_types}  # type: ignore[attr-defined]
        if len(shapes) != 1:
            raise DiagnosticException(
                "lower-group-to-loops: the parts of a cat exit must have one shape"
            )
        assert isinstance(t, TensorType)
        (shape,) = shapes
        dim = inf.normalize_dim(cat.dim.value.data, len(shape))
        parts: list[int] = []
        for p in cat.inputs:
            parts.append(len(values))
            values.append(p)
            types.append(TensorType(t.get_element_type(), shape))
        exits.append(CatExit(k, dim, tuple(parts)))
    return values, types, exits


def kernel_entry(
    arg_types: list[Attribute], n_mems: int, lrank: int, gpu: bool
) -> tuple[Block, list[SSAValue], list[SSAValue], list[tuple[SSAValue, list[SSAValue]]], int]:
    """The kernel's entry block over the `KernelSignature` argument layout, and its
    arguments taken apart: (block, all args, sizes, (data, strides) per memref,
    index of the first scalar)."""
    entry = Block(arg_types=arg_types)
    a = list(entry.args)
    pos = 1 if gpu else 2
    sizes = a[pos : pos + lrank]
    pos += lrank
    mems: list[tuple[SSAValue, list[SSAValue]]] = []
    for _ in range(n_mems):
        mems.append((a[pos], a[pos + 1 : pos + 1 + lrank]))
        pos += 1 + lrank
    return entry, a, sizes, mems, pos


def finish_kernel(
    name: str,
    e: _Emitter,
    entry: Block,
    arg_types: list[Attribute],
    body: Block,
    plan: Any,
    rank: int,
    out_specs: Sequence[OutputSpec],
    target: str,
    **extra: Any,
) -> tuple[func.FuncOp, KernelSignature]:
    """The kernel function holding `e`'s ops, and its signature (`extra` are the
    kind-specific fields: exits, the zero-division flag, reduced dims); shared by
    the pointwise and the reduction builders."""
    e.add(func.ReturnOp())
    cost = element_cost(e.ops)
    entry.add_ops(e.ops)
    fn = func.FuncOp(name, (arg_types, []), Region(entry))
    fn.attributes["fusion.kernel"] = UnitAttr()
    sig = KernelSignature(
        rank=rank,
        inputs=tuple(dtype_name(arg.type) for arg in body.args),
        operands=tuple(plan.operands),
        scalars=tuple(plan.scalars),
        outputs=tuple(out_specs),
        target=target,
        cost=cost,
        **extra,
    )
    return fn, sig


def _storage_type(dtype: str, body: Block) -> Attribute:
    for t in inf.DTYPES:
        if str(t) == dtype:
            return storage_type(t)
    raise DiagnosticException(f"lower-group-to-loops: dtype {dtype} is not supported")
