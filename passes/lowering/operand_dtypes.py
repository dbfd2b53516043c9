"""How eager PyTorch converts a pointwise op's operands and rounds its result,
for the scalar semantics (`fusec.passes.lowering.scalar_ops`): the common dtype
(with a half type, a scalar operand is rounded to it unless the kernel reads it in
op math), the compute type operands are cast to, and the result's rounding.

    x_f16 < 0.1   compares x with f16(0.1) = 0.0999755859375 (`to_common_dtype`)
    x_f16 * 1e-8  multiplies by the float32 1e-8 (`opmath_operands`: {1})
"""

from __future__ import annotations

from collections.abc import Sequence

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.inference import BF16, BOOL, F16, F32
from fusec.dialects.opmath import is_step
from fusec.passes.lowering.emitter import LoopEmitter, compute_type, is_floating
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue


def prop_number(op: Operation, name: str) -> float | int | None:
    attr = op.properties.get(name)
    if attr is None:
        return None
    assert isinstance(attr, FloatAttr | IntegerAttr)
    if attr.type == BOOL:  # i1 prints `true` as -1 (signed); `min=True` is 1
        return int(attr.value.data != 0)
    return attr.value.data


def to_common_dtype(
    e: LoopEmitter, op: Operation, args: Sequence[SSAValue], dtype: Attribute
) -> list[SSAValue]:
    """PyTorch converts every operand to the op's common dtype before computing,
    so with a half type a Python scalar, a 0-d tensor of a wider type or an
    integer is first rounded to it:

        x_f16 < 0.1   compares x with f16(0.1) = 0.0999755859375, not with 0.1

    except where its CPU kernels read the scalar in op math (`opmath_operands`):
    `x_f16 * 1e-8` multiplies by the float32 1e-8, not by f16(1e-8) = 0."""
    if dtype not in (F16, BF16):
        return list(args)
    keep = opmath_operands(op)
    return [
        v if k in keep or inf.element_type(o.type) == dtype else e.cast(v, dtype)
        for k, (o, v) in enumerate(zip(op.operands, args, strict=True))
    ]


def opmath_operands(op: Operation) -> set[int]:
    """Operands a half-typed op reads as float32 values, unrounded: all of an
    op-math step's (`fusec.dialects.opmath`), and the scalar (a Python number or
    a 0-d tensor) that is the second operand of `mul` and `div`: ATen's
    mul/div kernels take it as `iter.original_scalar_value<float>`. A Python
    number first in a `mul` is `x.__rmul__(s)`, so it is the second in eager."""
    if is_step(op):
        return set(range(len(op.operands)))
    if not isinstance(op, aten.MulOp | aten.DivOp) or len(op.operands) != 2:
        return set()
    keep: set[int] = set()
    second = op.operands[1].type
    if not isinstance(second, TensorType) or second.get_num_dims() == 0:
        keep.add(1)
    if isinstance(op, aten.MulOp) and not isinstance(op.operands[0].type, TensorType):
        keep.add(0)
    return keep


def round_result(e: LoopEmitter, op: Operation, v: SSAValue) -> SSAValue:
    """`v`, the value of `op`'s (first) result, rounded to the result's half type
    as eager rounds every op's result, so overflow to inf, the values an int or
    bool cast sees and every later op match eager; an op-math step keeps float32."""
    t = op.results[0].type
    et = t.get_element_type() if isinstance(t, TensorType) else t
    if et not in (F16, BF16) or is_step(op) or v.type != F32:
        return v
    return e.cast(v, et)


def divides_integers(op: Operation) -> bool:
    """`aten.div` of integers (any rounding mode): its lowering needs `safe_divisor`."""
    if not isinstance(op, aten.DivOp) or not op.results:
        return False
    t = op.results[0].type
    return isinstance(t, TensorType) and not is_floating(t.get_element_type())


def operand_type(t: Attribute) -> Attribute:
    """What an op of common dtype `t` converts its operands to: its compute
    type, or for uint8 (in i32) the operand wrapped to 0..255, as PyTorch
    converts a Python-scalar operand: `x_u8 // -3` divides by 253."""
    return t if t == inf.U8 else compute_type(t)
