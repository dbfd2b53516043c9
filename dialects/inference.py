"""Type inference shared by every `aten` verifier: PyTorch broadcasting and dtype promotion.

dtypes are builtin element types: `i1` is bool, `i8`/`i16`/`i32`/`i64` are signed
integers, `ui8` is uint8, `f16`/`bf16`/`f32`/`f64` are floats.

Python scalars (PyTorch's "wrapped numbers") are SSA values of builtin scalar type,
not tensors: `f64` is a Python float, `i64` a Python int, `i1` a Python bool. They
take part in promotion below 0-d tensors, which rank below tensors with dimensions,
exactly as `c10::ResultTypeState` does:

    tensor<4xf16> + tensor<f32>   -> tensor<4xf16>   (same category: dims win)
    tensor<4xi32> + tensor<f64>   -> tensor<4xf64>   (higher category wins)
    tensor<4xi32> + f64           -> tensor<4xf32>   (wrapped float is the default dtype)
"""

from __future__ import annotations

from collections.abc import Sequence

from fusec.runtime.broadcast import ShapesDoNotBroadcast
from fusec.runtime.broadcast import broadcast_shapes as runtime_broadcast_shapes
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

BOOL = IntegerType(1)
I8 = IntegerType(8)
U8 = IntegerType(8, Signedness.UNSIGNED)
I16 = IntegerType(16)
I32 = IntegerType(32)
I64 = IntegerType(64)
F16 = Float16Type()
BF16 = BFloat16Type()
F32 = Float32Type()
F64 = Float64Type()
DEFAULT_FLOAT = F32
DYNAMIC = DYNAMIC_INDEX

DTYPES: tuple[Attribute, ...] = (BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64)
"""Every element type fusec understands, in no particular order."""

_INT_RANK: dict[Attribute, int] = {U8: 0, I8: 0, I16: 1, I32: 2, I64: 3}


def is_dtype(t: Attribute) -> bool:
    return t in DTYPES


def is_float(t: Attribute) -> bool:
    return t in (F16, BF16, F32, F64)


def is_bool(t: Attribute) -> bool:
    return t == BOOL


def is_integral(t: Attribute, include_bool: bool = False) -> bool:
    return t in _INT_RANK or (include_bool and t == BOOL)


def category(t: Attribute) -> int:
    """0 bool, 1 integer, 2 floating point (PyTorch's promotion categories)."""
    return 0 if t == BOOL else (2 if is_float(t) else 1)


def promote_types(a: Attribute, b: Attribute) -> Attribute:
    """`torch.promote_types` over fusec's dtypes."""
    if a == b:
        return a
    if a == BOOL:
        return b
    if b == BOOL:
        return a
    if is_float(a) and is_float(b):
        if {a, b} == {F16, BF16}:
            return F32
        order = (F16, BF16, F32, F64)
        return max(a, b, key=order.index)
    if is_float(a):
        return a
    if is_float(b):
        return b
    if {a, b} == {U8, I8}:
        return I16
    return max(a, b, key=_INT_RANK.__getitem__)


def _combine_categories(higher: Attribute | None, lower: Attribute | None) -> Attribute | None:
    if higher is None:
        return lower
    if lower is None:
        return higher
    if is_float(higher):
        return higher
    if higher == BOOL or is_float(lower):
        return promote_types(higher, lower)
    return higher


def is_scalar(t: Attribute) -> bool:
    """A Python scalar operand (not a tensor)."""
    return not isinstance(t, TensorType) and t in (F64, I64, BOOL)


def element_type(t: Attribute) -> Attribute:
    return t.get_element_type() if isinstance(t, TensorType) else t


def shape_of(t: Attribute) -> tuple[int, ...]:
    return tuple(t.get_shape()) if isinstance(t, TensorType) else ()


def result_dtype(operand_types: Sequence[Attribute]) -> Attribute:
    """`torch.result_type` over tensors (ranked or 0-d) and Python scalars."""
    dims: Attribute | None = None
    zero: Attribute | None = None
    wrapped: Attribute | None = None
    for t in operand_types:
        if isinstance(t, TensorType):
            dt = t.get_element_type()
            if t.get_num_dims() > 0:
                dims = dt if dims is None else promote_types(dims, dt)
            else:
                zero = dt if zero is None else promote_types(zero, dt)
        else:
            dt = DEFAULT_FLOAT if is_float(t) else t
            wrapped = dt if wrapped is None else promote_types(wrapped, dt)
    result = _combine_categories(dims, _combine_categories(zero, wrapped))
    if result is None:
        raise VerifyException("expected at least one operand to infer a dtype from")
    return result


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """`torch.broadcast_shapes`; a dynamic size (`?`) broadcasts like an unknown
    (`fusec.runtime.broadcast`, the runtime's own, raised as the verifier's error)."""
    try:
        return runtime_broadcast_shapes(shapes, unknown=DYNAMIC)
    except ShapesDoNotBroadcast as e:
        raise VerifyException(
            "shapes "
            + " and ".join(format_shape(x) for x in shapes)
            + f" cannot be broadcast (dimension {e.dim} is {e.size} and {e.other})"
        ) from None


def reshape_sizes(shape: Sequence[int]) -> tuple[int, ...]:
    """A reshape's result shape as torch's target sizes: its dynamic dim (`?`) is
    `-1`, the size torch infers from the element count."""
    return tuple(-1 if d == DYNAMIC else d for d in shape)


def reshape_infers(shape: Sequence[int]) -> bool:
    """Whether a reshape to `shape` can infer its dynamic dims at run time, as
    torch infers a `-1`: at most one, and no 0 beside it."""
    return DYNAMIC not in shape or (list(shape).count(DYNAMIC) == 1 and 0 not in shape)


def format_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join("?" if d == DYNAMIC else str(d) for d in shape) + "]"


def tensor_type(t: Attribute) -> TensorType:
    """`t`, which verified IR makes a tensor type (an operand or result of an op
    whose definition says so), as one: a check a type checker narrows by."""
    if not isinstance(t, TensorType):
        raise TypeError(f"expected a tensor type, got {t}")
    return t


def broadcast_result(operand_types: Sequence[Attribute], dtype: Attribute) -> TensorType:
    """The tensor type of a pointwise op over `operand_types` with element type `dtype`."""
    shapes = [shape_of(t) for t in operand_types if isinstance(t, TensorType)]
    return TensorType(dtype, broadcast_shapes(*shapes))


def normalize_dim(dim: int, rank: int, op_name: str | None = None) -> int:
    """PyTorch's wrap-around dim (`-1` is the last), checked against `rank`; a 0-d
    tensor accepts dims 0 and -1, as in PyTorch. Verifiers leave out `op_name`, since
    the located diagnostic already names the op."""
    bound = max(rank, 1)
    if not -bound <= dim < bound:
        prefix = f"{op_name}: " if op_name else ""
        raise VerifyException(
            f"{prefix}dimension {dim} is out of range for a tensor of rank {rank}"
        )
    return dim + bound if dim < 0 else dim
