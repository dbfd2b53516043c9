"""The `aten` dialect: an imported PyTorch graph, one op per PyTorch operator kind.

Ops work on builtin `tensor<...>` types and Python scalars (`f64`, `i64`, `i1`
SSA values). Every verifier infers its result types with the rules in
`fusec.dialects.inference` (broadcasting, dtype promotion) and checks them:

    func.func @f(%x: tensor<4x1xf32>, %y: tensor<3xf32>) -> tensor<4x3xf32> {
      %s = arith.constant 2.0 : f64
      %0 = aten.mul %x, %s : tensor<4x1xf32>, f64 -> tensor<4x1xf32>
      %1 = aten.add %0, %y alpha = 2 : i64 : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
      func.return %1 : tensor<4x3xf32>
    }

A dynamic dim (`?`) is a size known only at run time (a symbolic size of the
graph): it broadcasts like any size, a static size beside it is what it must be,
and ops whose result sizes would follow its value (a chunk, split, narrow or
partial slice of it, a squeeze of it) reject it:

    %0 = aten.add %x, %b : tensor<?x16xf32>, tensor<16xf32> -> tensor<?x16xf32>

Passes ask traits, never lists: `Pointwise` marks elementwise ops, `ShapeOp` marks
views and layout ops, and anything else is a fusion barrier.
"""

from __future__ import annotations

import math
from abc import ABC
from collections.abc import Sequence
from typing import ClassVar

from fusec.dialects import inference as inf
from fusec.dialects.inference import BOOL, DEFAULT_FLOAT, I64
from fusec.dialects.lazy_format import LazyFormatOp
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    IRDLOperation,
    VarResultDef,
    base,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import MemoryWriteEffect, OpTrait, Pure
from xdsl.utils.exceptions import VerifyException

Number = base(FloatAttr) | base(IntegerAttr)
IntArray = DenseArrayBase.constr(i64)


class Pointwise(OpTrait):
    """Each result element depends only on the operand elements at the same
    (broadcast) index, so the op can run inside a fused loop nest."""


class ShapeOp(OpTrait):
    """A view or layout op (expand, view, chunk, cat, ...): it moves elements and
    computes none. Passes decide case by case which of these can enter a group."""


class Reduction(OpTrait):
    """A reduction over `dims` (all when absent) of one tensor: `fuse` lets it join a
    group, whose kernel loops over the kept dims with an inner loop over `dims`."""


def number_value(attr: Attribute | None, default: float | int) -> float | int:
    """The Python value of an optional `Number` property."""
    if attr is None:
        return default
    assert isinstance(attr, FloatAttr | IntegerAttr)
    return attr.value.data


def number_attr(value: float | int | bool) -> FloatAttr | IntegerAttr:
    """A `Number` property for a Python scalar: `2.0 : f64`, `2 : i64`."""
    if isinstance(value, bool):
        return IntegerAttr(int(value), BOOL)
    if isinstance(value, int):
        return IntegerAttr(value, I64)
    return FloatAttr(float(value), inf.F64)


def _bound_type(attr: FloatAttr | IntegerAttr) -> Attribute:
    """The Python-scalar type a `Number` property stands for: `f64`, `i64` or `i1`."""
    if isinstance(attr, FloatAttr):
        return inf.F64
    return BOOL if attr.type == BOOL else I64


class AtenOp(LazyFormatOp, ABC):
    """Base of every aten op: results are inferred from operand types and properties."""

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        raise NotImplementedError

    def __init__(
        self,
        operands: Sequence[SSAValue | Operation | None | Sequence[SSAValue | Operation]],
        properties: dict[str, Attribute | None] | None = None,
        result_types: Sequence[Attribute] | None = None,
    ):
        props = {k: v for k, v in (properties or {}).items() if v is not None}
        if result_types is None:
            # A bare op (no results yet) lets `infer_result_types` read its properties.
            probe = type(self).create(properties=props)
            flat = [
                SSAValue.get(o).type
                for o in operands
                if o is not None
                for o in (o if isinstance(o, Sequence) else [o])
            ]
            result_types = probe.infer_result_types(flat)
        defs = type(self).get_irdl_definition().results
        variadic = len(defs) == 1 and isinstance(defs[0][1], VarResultDef)
        super().__init__(
            operands=operands,
            properties=props,
            result_types=[list(result_types)] if variadic else list(result_types),
        )

    def verify_(self) -> None:
        operand_types = [o.type for o in self.operands]
        for t in operand_types:
            if not isinstance(t, TensorType) and not inf.is_scalar(t):
                raise VerifyException(
                    f"operand of type {t} is neither a tensor nor a Python scalar (f64, i64, i1)"
                )
            if isinstance(t, TensorType) and not inf.is_dtype(t.get_element_type()):
                raise VerifyException(f"unsupported element type in {t}")
        actual = [r.type for r in self.results]
        for t in actual:
            if isinstance(t, TensorType) and not inf.is_dtype(t.get_element_type()):
                raise VerifyException(f"unsupported element type in {t}")
        expected = self.infer_result_types(operand_types)
        if len(expected) != len(actual):
            raise VerifyException(f"expected {len(expected)} results, but got {len(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            if e != a:
                raise VerifyException(f"result #{i} has type {a}, but the inferred type is {e}")


def _require_tensor(op: AtenOp, t: Attribute, what: str = "input") -> TensorType:
    if not isinstance(t, TensorType):
        raise VerifyException(f"{what} must be a tensor, got {t}")
    return t


def _static_size(t: TensorType, d: int, what: str) -> int:
    """Size `d` of `t`, which `what` needs to know: a dynamic dim (`?`, a size
    known only at run time) is an error, as the result's sizes would follow it."""
    size = t.get_shape()[d]
    if size == inf.DYNAMIC:
        raise VerifyException(f"{what} needs a static size, but dim {d} of {t} is dynamic")
    return size


def _same_size(a: int, b: int) -> bool:
    """Sizes that may be equal at run time: equal, or one of them dynamic."""
    return a == b or inf.DYNAMIC in (a, b)


def _require_ranked(op: AtenOp, t: Attribute) -> TensorType:
    """A tensor with at least one dim: PyTorch does not split or concatenate 0-d tensors."""
    t = _require_tensor(op, t)
    if t.get_num_dims() == 0:
        raise VerifyException(f"needs a tensor with at least one dim, got {t}")
    return t


# --------------------------------------------------------------------------- pointwise


class UnaryPointwiseOp(AtenOp, ABC):
    """`%r = aten.<op> %x : tensor<...> -> tensor<...>`."""

    DTYPE_RULE: ClassVar[str] = "same"
    """`same` keeps the dtype, `float` turns integers and bool into the default
    float (as `torch.exp` does), `float_only` rejects integers and bool (as
    `torch.nn.functional.gelu` does), `bool` gives bool."""

    ALLOWS_BOOL: ClassVar[bool] = True
    """False where PyTorch rejects a bool input (`neg`, `abs`, `relu`)."""

    input = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pointwise())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, **props: Attribute | None):
        super().__init__([input], props)

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        dt = t.get_element_type()
        if not self.ALLOWS_BOOL and dt == BOOL:
            raise VerifyException(f"does not support bool inputs, got {t}")
        if self.DTYPE_RULE == "float_only" and not inf.is_float(dt):
            raise VerifyException(f"needs a floating-point input, got {t}")
        if self.DTYPE_RULE == "float" and not inf.is_float(dt):
            dt = DEFAULT_FLOAT
        elif self.DTYPE_RULE == "bool":
            dt = BOOL
        return [TensorType(dt, t.get_shape())]


class FloatUnaryOp(UnaryPointwiseOp, ABC):
    DTYPE_RULE: ClassVar[str] = "float"


class NumericUnaryOp(UnaryPointwiseOp, ABC):
    ALLOWS_BOOL: ClassVar[bool] = False


class FloatOnlyUnaryOp(UnaryPointwiseOp, ABC):
    DTYPE_RULE: ClassVar[str] = "float_only"


def _unary(
    name: str, doc: str, base_cls: type[UnaryPointwiseOp] = UnaryPointwiseOp
) -> type[UnaryPointwiseOp]:
    cls = type(
        name.split(".")[1].title().replace("_", "") + "Op",
        (base_cls,),
        {"name": name, "__doc__": f"{doc}\n\n    %r = {name} %x : tensor<4xf32> -> tensor<4xf32>"},
    )
    return irdl_op_definition(cls)


NegOp = _unary("aten.neg", "`-x`; not for bool.", NumericUnaryOp)
AbsOp = _unary("aten.abs", "`|x|`; not for bool.", NumericUnaryOp)
ReluOp = _unary("aten.relu", "`max(x, 0)`; NaN stays NaN; not for bool.", NumericUnaryOp)
ExpOp = _unary("aten.exp", "`e^x`.", FloatUnaryOp)
Expm1Op = _unary("aten.expm1", "`e^x - 1`, accurate near 0.", FloatUnaryOp)
LogOp = _unary("aten.log", "Natural logarithm.", FloatUnaryOp)
Log1pOp = _unary("aten.log1p", "`log(1 + x)`, accurate near 0.", FloatUnaryOp)
SqrtOp = _unary("aten.sqrt", "Square root.", FloatUnaryOp)
RsqrtOp = _unary("aten.rsqrt", "`1 / sqrt(x)`.", FloatUnaryOp)
ReciprocalOp = _unary("aten.reciprocal", "`1 / x`.", FloatUnaryOp)
SigmoidOp = _unary("aten.sigmoid", "`1 / (1 + e^-x)`.", FloatUnaryOp)
TanhOp = _unary("aten.tanh", "Hyperbolic tangent.", FloatUnaryOp)
SiluOp = _unary("aten.silu", "`x * sigmoid(x)`; floats only, as in PyTorch.", FloatOnlyUnaryOp)
ErfOp = _unary("aten.erf", "The error function.", FloatUnaryOp)
SinOp = _unary("aten.sin", "Sine.", FloatUnaryOp)
CosOp = _unary("aten.cos", "Cosine.", FloatUnaryOp)


@irdl_op_definition
class LogicalNotOp(UnaryPointwiseOp):
    """`not x` as bool.

    %r = aten.logical_not %x : tensor<4xf32> -> tensor<4xi1>
    """

    name = "aten.logical_not"
    DTYPE_RULE: ClassVar[str] = "bool"


@irdl_op_definition
class LeakyReluOp(FloatOnlyUnaryOp):
    """`x if x > 0 else negative_slope * x`; floats only.

    %r = aten.leaky_relu %x negative_slope = 1.000000e-01 : f64 : tensor<4xf32> -> tensor<4xf32>
    """

    name = "aten.leaky_relu"
    negative_slope = opt_prop_def(Number)
    assembly_format = "$input (`negative_slope` `=` $negative_slope^)? attr-dict `:` type($input) `->` type($result)"


@irdl_op_definition
class GeluOp(FloatOnlyUnaryOp):
    """GELU, exact (`x * Phi(x)`, erf-based) or with `approximate = "tanh"`; floats only.

    %r = aten.gelu %x approximate = "tanh" : tensor<4xf32> -> tensor<4xf32>
    """

    name = "aten.gelu"
    approximate = opt_prop_def(StringAttr)
    assembly_format = (
        "$input (`approximate` `=` $approximate^)? attr-dict `:` type($input) `->` type($result)"
    )

    def verify_(self) -> None:
        if self.approximate is not None and self.approximate.data not in ("none", "tanh"):
            raise VerifyException(
                f'approximate must be "none" or "tanh", got "{self.approximate.data}"'
            )
        super().verify_()


@irdl_op_definition
class ClampOp(UnaryPointwiseOp):
    """`min(max(x, min), max)` with optional scalar bounds; NaN propagates.

    %r = aten.clamp %x min = 0.0 : f64 max = 6.0 : f64 : tensor<4xf32> -> tensor<4xf32>
    """

    name = "aten.clamp"
    min = opt_prop_def(Number)
    max = opt_prop_def(Number)
    assembly_format = (
        "$input (`min` `=` $min^)? (`max` `=` $max^)? attr-dict `:` type($input) `->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        bounds = [_bound_type(b) for b in (self.min, self.max) if b is not None]
        dt = inf.result_dtype([t, *bounds])
        if dt == BOOL:
            raise VerifyException("cannot clamp to a bool result")
        return [TensorType(dt, t.get_shape())]

    def verify_(self) -> None:
        if self.min is None and self.max is None:
            raise VerifyException("needs at least one of min and max")
        super().verify_()


class DtypeFromResultOp(UnaryPointwiseOp, ABC):
    """A unary op whose result type names its dtype (not a rule on the input's)."""

    def __init__(self, input: SSAValue | Operation, dtype: Attribute, **props: Attribute):
        t = SSAValue.get(input).type
        assert isinstance(t, TensorType)
        AtenOp.__init__(self, [input], dict(props), [TensorType(dtype, t.get_shape())])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        dt = self.result.type.get_element_type() if self.results else t.get_element_type()
        return [TensorType(dt, t.get_shape())]


@irdl_op_definition
class ToOp(DtypeFromResultOp):
    """A dtype cast (`x.to(dtype)`); the result type names the dtype. To the same
    dtype it is a copy, a fresh tensor (`contiguous()` of a non-contiguous tensor,
    ATen's `clone`): a no-op cast imports as the value itself.

    %r = aten.to %x : tensor<4xf32> -> tensor<4xf16>
    """

    name = "aten.to"


@irdl_op_definition
class FullLikeOp(DtypeFromResultOp):
    """A tensor of `input`'s shape filled with `value` (`torch.full_like`,
    `ones_like`, `zeros_like`); the result type names the dtype. Only the
    shape of `input` is read, so in a kernel it is a constant.

    %r = aten.full_like %x value = 1 : i64 : tensor<4xf32> -> tensor<4xi1>
    """

    name = "aten.full_like"
    value = prop_def(Number)
    assembly_format = "$input `value` `=` $value attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, value: Attribute, dtype: Attribute):
        super().__init__(input, dtype, value=value)


@irdl_op_definition
class PositionsOp(AtenOp):
    """The positions 0, 1, ..., n-1 along dim `dim` of `input`, as int32 on its
    device: `torch.arange(input.size(dim), dtype=torch.int32,
    device=input.device)` (int32: a kernel compares twice as many per vector as
    int64, and no dim reaches 2^31). Only the size is read. Not pointwise (a
    kernel's index space may be reordered and merged), so it runs on the host,
    a small tensor that kernels read broadcast: `tril` compares the column
    positions with the row positions.

    %r = aten.positions %x dim = 1 : tensor<4x3xf32> -> tensor<3xi32>
    """

    name = "aten.positions"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr[builtin.I64])
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$input `dim` `=` $dim attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, dim: int):
        super().__init__([input], {"dim": IntegerAttr(dim, I64)})

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_ranked(self, operand_types[0])
        d = inf.normalize_dim(_dim_prop(self), t.get_num_dims())
        return [TensorType(inf.I32, [t.get_shape()[d]])]


class BinaryPointwiseOp(AtenOp, ABC):
    """`%r = aten.<op> %a, %b : A, B -> R` over tensors and Python scalars."""

    DTYPE_RULE: ClassVar[str] = "promote"
    """`promote` is `torch.result_type`, `float` also turns integers into the default
    float (true division), `bool` gives bool (comparisons, logical ops)."""

    TENSORS_ONLY: ClassVar[bool] = False
    """True where PyTorch's schema takes no Python scalar (`maximum`, `logical_and`)."""

    ALLOWS_BOOL: ClassVar[bool] = True
    """False where PyTorch rejects a bool computation dtype (`pow`)."""

    lhs = operand_def(AnyAttr())
    rhs = operand_def(AnyAttr())
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pointwise())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(
        self, lhs: SSAValue | Operation, rhs: SSAValue | Operation, **props: Attribute | None
    ):
        super().__init__([lhs, rhs], props)

    def result_dtype(self, operand_types: Sequence[Attribute]) -> Attribute:
        if self.TENSORS_ONLY and not all(isinstance(t, TensorType) for t in operand_types):
            raise VerifyException("takes tensors only, not Python scalars")
        dt = inf.result_dtype(operand_types)
        if not self.ALLOWS_BOOL and dt == BOOL:
            raise VerifyException("does not support bool operands")
        if self.DTYPE_RULE == "float" and not inf.is_float(dt):
            return DEFAULT_FLOAT
        if self.DTYPE_RULE == "bool":
            return BOOL
        return dt

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        if not any(isinstance(t, TensorType) for t in operand_types):
            raise VerifyException("needs at least one tensor operand")
        return [inf.broadcast_result(operand_types, self.result_dtype(operand_types))]


class AlphaBinaryOp(BinaryPointwiseOp, ABC):
    alpha = opt_prop_def(Number)
    assembly_format = "$lhs `,` $rhs (`alpha` `=` $alpha^)? attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def result_dtype(self, operand_types: Sequence[Attribute]) -> Attribute:
        dt = super().result_dtype(operand_types)
        if isinstance(self.alpha, FloatAttr) and not inf.is_float(dt):
            raise VerifyException(f"a float alpha needs a floating-point result, not {dt}")
        if isinstance(self.alpha, IntegerAttr) and self.alpha.type == BOOL and dt != BOOL:
            raise VerifyException(f"a bool alpha needs a bool result, not {dt}")
        return dt


@irdl_op_definition
class AddOp(AlphaBinaryOp):
    """`a + alpha * b`.

    %r = aten.add %a, %b alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    """

    name = "aten.add"


@irdl_op_definition
class SubOp(AlphaBinaryOp):
    """`a - alpha * b`.

    %r = aten.sub %a, %b : tensor<4xf32>, f64 -> tensor<4xf32>
    """

    name = "aten.sub"

    def result_dtype(self, operand_types: Sequence[Attribute]) -> Attribute:
        if any(inf.element_type(t) == BOOL for t in operand_types):
            raise VerifyException("does not support bool operands (use logical_xor)")
        return super().result_dtype(operand_types)


@irdl_op_definition
class DivOp(BinaryPointwiseOp):
    """`a / b`; true division unless `rounding_mode` is "trunc" or "floor".

    %r = aten.div %a, %b rounding_mode = "floor" : tensor<4xi64>, tensor<4xi64> -> tensor<4xi64>
    """

    name = "aten.div"
    rounding_mode = opt_prop_def(StringAttr)
    assembly_format = "$lhs `,` $rhs (`rounding_mode` `=` $rounding_mode^)? attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def result_dtype(self, operand_types: Sequence[Attribute]) -> Attribute:
        dt = inf.result_dtype(operand_types)
        if self.rounding_mode is None:
            return dt if inf.is_float(dt) else DEFAULT_FLOAT
        if self.rounding_mode.data not in ("trunc", "floor"):
            raise VerifyException(
                f'rounding_mode must be "trunc" or "floor", got "{self.rounding_mode.data}"'
            )
        if dt == BOOL:
            raise VerifyException("rounding division does not support bool operands")
        return dt


def _binary(
    name: str,
    doc: str,
    rule: str = "promote",
    example: str = "tensor<4xf32>",
    tensors_only: bool = False,
    allows_bool: bool = True,
) -> type[BinaryPointwiseOp]:
    cls = type(
        "".join(p.title() for p in name.split(".")[1].split("_")) + "Op",
        (BinaryPointwiseOp,),
        {
            "name": name,
            "DTYPE_RULE": rule,
            "TENSORS_ONLY": tensors_only,
            "ALLOWS_BOOL": allows_bool,
            "__annotations__": {
                "DTYPE_RULE": ClassVar[str],
                "TENSORS_ONLY": ClassVar[bool],
                "ALLOWS_BOOL": ClassVar[bool],
            },
            "__doc__": f"{doc}\n\n    %r = {name} %a, %b : tensor<4xf32>, tensor<4xf32> -> {example}",
        },
    )
    return irdl_op_definition(cls)


MulOp = _binary("aten.mul", "`a * b`.")
PowOp = _binary("aten.pow", "`a ** b`; not for bool.", allows_bool=False)
MaximumOp = _binary(
    "aten.maximum", "Elementwise max of two tensors; NaN propagates.", tensors_only=True
)
MinimumOp = _binary(
    "aten.minimum", "Elementwise min of two tensors; NaN propagates.", tensors_only=True
)
EqOp = _binary("aten.eq", "`a == b`.", "bool", "tensor<4xi1>")
NeOp = _binary("aten.ne", "`a != b`.", "bool", "tensor<4xi1>")
LtOp = _binary("aten.lt", "`a < b`.", "bool", "tensor<4xi1>")
LeOp = _binary("aten.le", "`a <= b`.", "bool", "tensor<4xi1>")
GtOp = _binary("aten.gt", "`a > b`.", "bool", "tensor<4xi1>")
GeOp = _binary("aten.ge", "`a >= b`.", "bool", "tensor<4xi1>")
LogicalAndOp = _binary("aten.logical_and", "`a and b` as bool.", "bool", "tensor<4xi1>", True)
LogicalOrOp = _binary("aten.logical_or", "`a or b` as bool.", "bool", "tensor<4xi1>", True)
LogicalXorOp = _binary("aten.logical_xor", "`a xor b` as bool.", "bool", "tensor<4xi1>", True)


@irdl_op_definition
class WhereOp(AtenOp):
    """`a if cond else b`, broadcasting all three.

    %r = aten.where %c, %a, %b : tensor<4xi1>, tensor<4xf32>, f64 -> tensor<4xf32>
    """

    name = "aten.where"
    condition = operand_def(TensorType)
    lhs = operand_def(AnyAttr())
    rhs = operand_def(AnyAttr())
    result = result_def(TensorType)
    traits = traits_def(Pure(), Pointwise())
    assembly_format = (
        "$condition `,` $lhs `,` $rhs attr-dict `:` type($condition) `,` type($lhs) `,` "
        "type($rhs) `->` type($result)"
    )

    def __init__(self, condition: SSAValue, lhs: SSAValue, rhs: SSAValue):
        super().__init__([condition, lhs, rhs])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        cond, a, b = operand_types
        if inf.element_type(cond) != BOOL:
            raise VerifyException(f"condition must be a bool tensor, got {cond}")
        return [inf.broadcast_result(operand_types, inf.result_dtype([a, b]))]


# --------------------------------------------------------------------------- shape ops


def _dim_prop(op: IRDLOperation, name: str = "dim") -> int:
    attr = op.properties[name]
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


class ShapeOpBase(AtenOp, ABC):
    input = operand_def(TensorType)
    traits = traits_def(Pure(), ShapeOp())


class ShapeUnaryOp(ShapeOpBase, ABC):
    result = result_def(TensorType)


@irdl_op_definition
class ExpandOp(ShapeUnaryOp):
    """Broadcast to `size` (`-1` keeps a dim); the result is a stride-0 view.

    %r = aten.expand %x size = [4, -1] : tensor<1x3xf32> -> tensor<4x3xf32>
    """

    name = "aten.expand"
    size = prop_def(IntArray)
    assembly_format = "$input `size` `=` $size attr-dict `:` type($input) `->` type($result)"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        size = list(self.size.get_values())
        shape = t.get_shape()
        if len(size) < len(shape):
            raise VerifyException(f"{len(size)} sizes given for a tensor of rank {len(shape)}")
        lead = len(size) - len(shape)
        out: list[int] = []
        for i, s in enumerate(size):
            old = shape[i - lead] if i >= lead else None
            if s == -1:
                if old is None:
                    raise VerifyException("-1 is not allowed for a new leading dim")
                s = old
            elif s < 0:
                raise VerifyException(f"size {s} of dim {i} is negative")
            elif old is not None and old not in (1, inf.DYNAMIC) and old != s:
                raise VerifyException(f"dim {i} of size {old} cannot be expanded to {s}")
            out.append(s)
        return [TensorType(t.get_element_type(), out)]


class ReshapeLikeOp(ShapeUnaryOp, ABC):
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, shape: Sequence[int]):
        t = SSAValue.get(input).type
        assert isinstance(t, TensorType)
        AtenOp.__init__(self, [input], {}, [TensorType(t.get_element_type(), shape)])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        r = self.result.type
        assert isinstance(r, TensorType)
        if r.get_element_type() != t.get_element_type():
            raise VerifyException("cannot change the element type")
        if not inf.reshape_infers(r.get_shape()):
            raise VerifyException(f"the dynamic dims of {r} cannot be inferred")
        if inf.DYNAMIC not in (*t.get_shape(), *r.get_shape()):
            if math.prod(t.get_shape()) != math.prod(r.get_shape()):
                raise VerifyException(
                    f"shape {inf.format_shape(t.get_shape())} and "
                    f"{inf.format_shape(r.get_shape())} have different element counts"
                )
        return [r]


@irdl_op_definition
class ViewOp(ReshapeLikeOp):
    """Reshape without copying; the result type gives the shape.

    %r = aten.view %x : tensor<4x4xf32> -> tensor<16xf32>
    """

    name = "aten.view"


@irdl_op_definition
class ReshapeOp(ReshapeLikeOp):
    """Reshape, copying if the layout needs it; the result type gives the shape.
    One dynamic dim (`?`) is allowed: its size is the element count over the
    others' (a `-1` size), so one reshape serves every size.

    %r = aten.reshape %x : tensor<4x4xf32> -> tensor<2x8xf32>
    %r = aten.reshape %x : tensor<?x4x4xf32> -> tensor<?x16xf32>
    """

    name = "aten.reshape"


@irdl_op_definition
class UnsqueezeOp(ShapeUnaryOp):
    """Insert a dim of size 1 at `dim`.

    %r = aten.unsqueeze %x dim = 0 : tensor<3xf32> -> tensor<1x3xf32>
    """

    name = "aten.unsqueeze"
    dim = prop_def(IntegerAttr[builtin.I64])
    assembly_format = "$input `dim` `=` $dim attr-dict `:` type($input) `->` type($result)"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        shape = list(t.get_shape())
        d = inf.normalize_dim(_dim_prop(self), len(shape) + 1)
        shape.insert(d, 1)
        return [TensorType(t.get_element_type(), shape)]


@irdl_op_definition
class SqueezeOp(ShapeUnaryOp):
    """Drop size-1 dims: all of them, or only `dim`.

    %r = aten.squeeze %x dim = 0 : tensor<1x3xf32> -> tensor<3xf32>
    """

    name = "aten.squeeze"
    dim = opt_prop_def(IntegerAttr[builtin.I64])
    assembly_format = "$input (`dim` `=` $dim^)? attr-dict `:` type($input) `->` type($result)"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        shape = list(t.get_shape())
        if self.dim is None:
            if inf.DYNAMIC in shape:
                raise VerifyException(f"squeezing every size-1 dim of {t} needs static sizes")
            shape = [s for s in shape if s != 1]
        else:
            d = inf.normalize_dim(self.dim.value.data, len(shape))
            if shape and _static_size(t, d, "squeeze") == 1:
                del shape[d]
        return [TensorType(t.get_element_type(), shape)]


@irdl_op_definition
class PermuteOp(ShapeUnaryOp):
    """Reorder dims: result dim i is input dim `dims[i]`.

    %r = aten.permute %x dims = [1, 0] : tensor<2x3xf32> -> tensor<3x2xf32>
    """

    name = "aten.permute"
    dims = prop_def(IntArray)
    assembly_format = "$input `dims` `=` $dims attr-dict `:` type($input) `->` type($result)"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        shape = t.get_shape()
        dims = [inf.normalize_dim(d, len(shape)) for d in self.dims.get_values()]
        if sorted(dims) != list(range(len(shape))):
            raise VerifyException(
                f"dims {list(self.dims.get_values())} are not a permutation "
                f"of the {len(shape)} dims"
            )
        return [TensorType(t.get_element_type(), [shape[d] for d in dims])]


@irdl_op_definition
class TransposeOp(ShapeUnaryOp):
    """Swap two dims.

    %r = aten.transpose %x dim0 = 0 dim1 = 1 : tensor<2x3xf32> -> tensor<3x2xf32>
    """

    name = "aten.transpose"
    dim0 = prop_def(IntegerAttr[builtin.I64])
    dim1 = prop_def(IntegerAttr[builtin.I64])
    assembly_format = (
        "$input `dim0` `=` $dim0 `dim1` `=` $dim1 attr-dict `:` type($input) `->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        shape = list(t.get_shape())
        a = inf.normalize_dim(_dim_prop(self, "dim0"), len(shape))
        b = inf.normalize_dim(_dim_prop(self, "dim1"), len(shape))
        if shape:
            shape[a], shape[b] = shape[b], shape[a]
        return [TensorType(t.get_element_type(), shape)]


def chunk_sizes(size: int, chunks: int) -> list[int]:
    """`torch.chunk`'s split: pieces of `ceil(size / chunks)`, the last may be
    smaller, and fewer than `chunks` pieces when they run out."""
    step = -(-size // chunks) if size else 0
    if step == 0:
        return [0] * chunks
    return [min(step, size - i) for i in range(0, size, step)]


def _split_types(t: TensorType, dim: int, sizes: Sequence[int]) -> list[Attribute]:
    out: list[Attribute] = []
    for s in sizes:
        shape = list(t.get_shape())
        shape[dim] = s
        out.append(TensorType(t.get_element_type(), shape))
    return out


@irdl_op_definition
class ChunkOp(ShapeOpBase):
    """Split into `chunks` views along `dim`, as `torch.chunk`.

    %r:2 = aten.chunk %x chunks = 2 dim = 1 : tensor<3x8xf32> -> tensor<3x4xf32>, tensor<3x4xf32>
    """

    name = "aten.chunk"
    outputs = var_result_def(TensorType)
    chunks = prop_def(IntegerAttr[builtin.I64])
    dim = prop_def(IntegerAttr[builtin.I64])
    assembly_format = (
        "$input `chunks` `=` $chunks `dim` `=` $dim attr-dict `:` type($input) `->` type($outputs)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_ranked(self, operand_types[0])
        n = _dim_prop(self, "chunks")
        if n <= 0:
            raise VerifyException(f"chunks must be positive, got {n}")
        d = inf.normalize_dim(_dim_prop(self), t.get_num_dims())
        return _split_types(t, d, chunk_sizes(_static_size(t, d, "chunk"), n))


@irdl_op_definition
class SplitOp(ShapeOpBase):
    """Split along `dim` into pieces of `split_size` (the last may be smaller), or
    of the given `sizes`.

    %r:2 = aten.split %x sizes = [1, 3] dim = 0 : tensor<4xf32> -> tensor<1xf32>, tensor<3xf32>
    """

    name = "aten.split"
    outputs = var_result_def(TensorType)
    split_size = opt_prop_def(IntegerAttr[builtin.I64])
    sizes = opt_prop_def(IntArray)
    dim = prop_def(IntegerAttr[builtin.I64])
    assembly_format = (
        "$input (`split_size` `=` $split_size^)? (`sizes` `=` $sizes^)? `dim` `=` $dim "
        "attr-dict `:` type($input) `->` type($outputs)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_ranked(self, operand_types[0])
        d = inf.normalize_dim(_dim_prop(self), t.get_num_dims())
        total = _static_size(t, d, "split")
        if (self.split_size is None) == (self.sizes is None):
            raise VerifyException("needs exactly one of split_size and sizes")
        if self.sizes is not None:
            sizes = list(self.sizes.get_values())
            if sum(sizes) != total:
                raise VerifyException(f"sizes {sizes} do not add up to dim {d} of size {total}")
        else:
            assert self.split_size is not None  # exactly one of the two, above
            step = self.split_size.value.data
            if step <= 0:
                raise VerifyException(f"split_size must be positive, got {step}")
            sizes = [min(step, total - i) for i in range(0, total, step)] or [0]
        return _split_types(t, d, sizes)


@irdl_op_definition
class CatOp(AtenOp):
    """Concatenate along `dim`; dtypes promote as `torch.cat` does.

    %r = aten.cat %a, %b dim = 0 : tensor<2xf32>, tensor<3xf32> -> tensor<5xf32>
    """

    name = "aten.cat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr[builtin.I64])
    traits = traits_def(Pure(), ShapeOp())
    assembly_format = "$inputs `dim` `=` $dim attr-dict `:` type($inputs) `->` type($result)"

    def __init__(self, inputs: Sequence[SSAValue | Operation], dim: int):
        super().__init__([inputs], {"dim": IntegerAttr(dim, I64)})

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        if not operand_types:
            raise VerifyException("needs at least one input")
        ts = [_require_ranked(self, t) for t in operand_types]
        rank = ts[0].get_num_dims()
        d = inf.normalize_dim(_dim_prop(self), rank)
        shape = list(ts[0].get_shape())
        for t in ts[1:]:
            other = t.get_shape()
            if len(other) != rank or any(
                not _same_size(a, b)
                for i, (a, b) in enumerate(zip(shape, other, strict=True))
                if i != d
            ):
                raise VerifyException(
                    f"shapes {inf.format_shape(ts[0].get_shape())} and "
                    f"{inf.format_shape(other)} differ outside dim {d}"
                )
            # Outside `dim` a static size is what a dynamic one must be at run time.
            for i, b in enumerate(other):
                if i != d and shape[i] == inf.DYNAMIC:
                    shape[i] = b
            shape[d] = inf.DYNAMIC if inf.DYNAMIC in (shape[d], other[d]) else shape[d] + other[d]
        dt = inf.result_dtype(ts)
        return [TensorType(dt, shape)]


_WHOLE = 2**62
"""An end at least this large slices to the end of any dim (ATen writes `x[a:]`
with end = 2**63 - 1)."""


def _slice_len(size: int, start: int, end: int, step: int) -> int:
    start = max(0, min(size, start + size if start < 0 else start))
    end = max(0, min(size, end + size if end < 0 else end))
    return max(0, -(-(end - start) // step))


@irdl_op_definition
class NarrowOp(ShapeUnaryOp):
    """`length` elements of `dim` from `start`, as a view.

    %r = aten.narrow %x dim = 0 start = 1 length = 2 : tensor<4xf32> -> tensor<2xf32>
    """

    name = "aten.narrow"
    dim = prop_def(IntegerAttr[builtin.I64])
    start = prop_def(IntegerAttr[builtin.I64])
    length = prop_def(IntegerAttr[builtin.I64])
    assembly_format = (
        "$input `dim` `=` $dim `start` `=` $start `length` `=` $length attr-dict "
        "`:` type($input) `->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_ranked(self, operand_types[0])
        d = inf.normalize_dim(_dim_prop(self), t.get_num_dims())
        size = _static_size(t, d, "narrow")
        start, length = _dim_prop(self, "start"), _dim_prop(self, "length")
        start = start + size if start < 0 else start
        if start < 0 or length < 0 or start + length > size:
            raise VerifyException(
                f"start {start} and length {length} exceed dim {d} of size {size}"
            )
        return _split_types(t, d, [length])


@irdl_op_definition
class SliceOp(ShapeUnaryOp):
    """`x[start:end:step]` along `dim`, as a view; bounds clip as in Python.

    %r = aten.slice %x dim = 0 start = 0 end = 4 step = 2 : tensor<4xf32> -> tensor<2xf32>
    """

    name = "aten.slice"
    dim = prop_def(IntegerAttr[builtin.I64])
    start = prop_def(IntegerAttr[builtin.I64])
    end = prop_def(IntegerAttr[builtin.I64])
    step = prop_def(IntegerAttr[builtin.I64])
    assembly_format = (
        "$input `dim` `=` $dim `start` `=` $start `end` `=` $end `step` `=` $step "
        "attr-dict `:` type($input) `->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_ranked(self, operand_types[0])
        d = inf.normalize_dim(_dim_prop(self), t.get_num_dims())
        step = _dim_prop(self, "step")
        if step <= 0:
            raise VerifyException(f"step must be positive, got {step}")
        start, end = _dim_prop(self, "start"), _dim_prop(self, "end")
        if t.get_shape()[d] == inf.DYNAMIC and start == 0 and end >= _WHOLE and step == 1:
            return [t]  # the whole dim, whatever its size
        n = _slice_len(_static_size(t, d, "slice"), start, end, step)
        return _split_types(t, d, [n])


# --------------------------------------------------------------------------- barriers


def _matmul_shape(op: AtenOp, a: TensorType, b: TensorType) -> list[int]:
    sa, sb = list(a.get_shape()), list(b.get_shape())
    if not sa or not sb:
        raise VerifyException("both operands need at least one dim")
    va, vb = len(sa) == 1, len(sb) == 1
    if va:
        sa = [1, *sa]
    if vb:
        sb = [*sb, 1]
    if not _same_size(sa[-1], sb[-2]):
        raise VerifyException(
            f"inner dims differ: {inf.format_shape(a.get_shape())} @ "
            f"{inf.format_shape(b.get_shape())}"
        )
    batch = list(inf.broadcast_shapes(sa[:-2], sb[:-2]))
    out = [*batch, sa[-2], sb[-1]]
    if vb:
        out.pop()
    if va:
        out.pop(-2 if not vb else -1)
    return out


def _float_or_same(op: AtenOp, a: TensorType, *others: TensorType) -> Attribute:
    """The one dtype of a matrix product's operands (PyTorch does not promote them)."""
    for b in others:
        if a.get_element_type() != b.get_element_type():
            raise VerifyException(
                f"operands must have one dtype, got {a.get_element_type()} "
                f"and {b.get_element_type()}"
            )
    if a.get_element_type() == BOOL:
        raise VerifyException("matrix products do not support bool operands")
    return a.get_element_type()


class MatmulLikeOp(AtenOp, ABC):
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    def __init__(self, lhs: SSAValue | Operation, rhs: SSAValue | Operation):
        super().__init__([lhs, rhs])


@irdl_op_definition
class MatmulOp(MatmulLikeOp):
    """`torch.matmul` with its vector and batch broadcasting rules.

    %r = aten.matmul %a, %b : tensor<2x3x4xf32>, tensor<4x5xf32> -> tensor<2x3x5xf32>
    """

    name = "aten.matmul"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        a, b = (_require_tensor(self, t) for t in operand_types)
        return [TensorType(_float_or_same(self, a, b), _matmul_shape(self, a, b))]


@irdl_op_definition
class MmOp(MatmulLikeOp):
    """2-d matrix product.

    %r = aten.mm %a, %b : tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
    """

    name = "aten.mm"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        a, b = (_require_tensor(self, t) for t in operand_types)
        if a.get_num_dims() != 2 or b.get_num_dims() != 2:
            raise VerifyException("both operands must be 2-d")
        return [TensorType(_float_or_same(self, a, b), _matmul_shape(self, a, b))]


@irdl_op_definition
class AddmmOp(AtenOp):
    """`beta * bias + alpha * (a @ b)`.

    %r = aten.addmm %bias, %a, %b : tensor<4xf32>, tensor<2x3xf32>, tensor<3x4xf32> -> tensor<2x4xf32>
    """

    name = "aten.addmm"
    bias = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    beta = opt_prop_def(Number)
    alpha = opt_prop_def(Number)
    traits = traits_def(Pure())
    assembly_format = (
        "$bias `,` $lhs `,` $rhs (`beta` `=` $beta^)? (`alpha` `=` $alpha^)? attr-dict `:` "
        "type($bias) `,` type($lhs) `,` type($rhs) `->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        bias, a, b = (_require_tensor(self, t) for t in operand_types)
        if a.get_num_dims() != 2 or b.get_num_dims() != 2:
            raise VerifyException("mat1 and mat2 must be 2-d")
        shape = _matmul_shape(self, a, b)
        if inf.broadcast_shapes(bias.get_shape(), shape) != tuple(shape):
            raise VerifyException(
                f"bias {inf.format_shape(bias.get_shape())} does not broadcast "
                f"to {inf.format_shape(shape)}"
            )
        return [TensorType(_float_or_same(self, a, b, bias), shape)]


@irdl_op_definition
class LinearOp(AtenOp):
    """`x @ weight.T (+ bias)`.

    %r = aten.linear %x, %w, %b : tensor<2x3xf32>, tensor<4x3xf32>, tensor<4xf32> -> tensor<2x4xf32>
    """

    name = "aten.linear"
    input = operand_def(TensorType)
    weight = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $weight (`,` $bias^)? attr-dict `:` type($input) `,` type($weight) "
        "(`,` type($bias)^)? `->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        x, w = (_require_tensor(self, t) for t in operand_types[:2])
        if w.get_num_dims() not in (1, 2):
            raise VerifyException("weight must be 1-d or 2-d")
        wt = TensorType(w.get_element_type(), list(reversed(w.get_shape())))
        shape = _matmul_shape(self, x, wt)
        biases: list[TensorType] = []
        if len(operand_types) == 3:
            b = _require_tensor(self, operand_types[2], "bias")
            if inf.broadcast_shapes(b.get_shape(), shape) != tuple(shape):
                raise VerifyException(
                    f"bias {inf.format_shape(b.get_shape())} does not broadcast "
                    f"to {inf.format_shape(shape)}"
                )
            biases.append(b)
        return [TensorType(_float_or_same(self, x, w, *biases), shape)]



@irdl_op_definition
class ScaledDotProductAttentionOp(AtenOp):
    """`F.scaled_dot_product_attention(q, k, v, attn_mask, scale=scale,
    is_causal=is_causal)`: `softmax(q @ k^T * scale + attn_mask, dim=-1) @ v` over
    the last two dims, the batch dims broadcast as `matmul` does; the float mask
    is optional, and `is_causal = true` (no mask then) leaves out the scores of
    columns past their row. A barrier that runs through PyTorch, whose kernel
    never writes the `[L, S]` scores out.

    %r = aten.scaled_dot_product_attention %q, %k, %v scale = 1.250000e-01 : f64
           : tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32> -> tensor<2x4x8x32xf32>
    """

    name = "aten.scaled_dot_product_attention"
    query = operand_def(TensorType)
    key = operand_def(TensorType)
    value = operand_def(TensorType)
    attn_mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    scale = prop_def(FloatAttr)
    is_causal = opt_prop_def(IntegerAttr[builtin.I1])
    traits = traits_def(Pure())
    assembly_format = (
        "$query `,` $key `,` $value (`,` $attn_mask^)? `scale` `=` $scale "
        "(`is_causal` `=` $is_causal^)? attr-dict `:` "
        "type($query) `,` type($key) `,` type($value) (`,` type($attn_mask)^)? `->` type($result)"
    )

    def __init__(
        self,
        query: SSAValue | Operation,
        key: SSAValue | Operation,
        value: SSAValue | Operation,
        scale: float,
        attn_mask: SSAValue | Operation | None = None,
        is_causal: bool = False,
    ):
        props: dict[str, Attribute | None] = {
            "scale": FloatAttr(float(scale), inf.F64),
            "is_causal": IntegerAttr(1, BOOL) if is_causal else None,
        }
        super().__init__([query, key, value, attn_mask], props)

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        q, k, v = (
            _require_tensor(self, t, what)
            for t, what in zip(operand_types[:3], ("query", "key", "value"), strict=True)
        )
        if min(q.get_num_dims(), k.get_num_dims(), v.get_num_dims()) < 2:
            raise VerifyException("query, key and value need at least two dims")
        dtype = _float_or_same(self, q, k, v)
        if not inf.is_float(dtype):
            raise VerifyException(f"needs floating-point operands, got {dtype}")
        ks = list(k.get_shape())
        scores = _matmul_shape(self, q, TensorType(dtype, [*ks[:-2], ks[-1], ks[-2]]))
        if len(operand_types) == 4:
            if self.is_causal is not None and self.is_causal.value.data:
                raise VerifyException("takes an attn_mask or is_causal = true, not both")
            mask = _require_tensor(self, operand_types[3], "attn_mask")
            if mask.get_element_type() != dtype:
                raise VerifyException(f"attn_mask must have the dtype {dtype}, got {mask}")
            if inf.broadcast_shapes(mask.get_shape(), scores) != tuple(scores):
                raise VerifyException(
                    f"attn_mask {inf.format_shape(mask.get_shape())} does not broadcast "
                    f"to the scores {inf.format_shape(scores)}"
                )
        return [TensorType(dtype, _matmul_shape(self, TensorType(dtype, scores), v))]

class ReductionOp(AtenOp, ABC):
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dims = opt_prop_def(IntArray)
    keepdim = opt_prop_def(IntegerAttr[builtin.I1])
    traits = traits_def(Pure(), Reduction())
    assembly_format = (
        "$input (`dims` `=` $dims^)? (`keepdim` `=` $keepdim^)? attr-dict `:` type($input) "
        "`->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        rank = t.get_num_dims()
        given = list(self.dims.get_values()) if self.dims is not None else []
        listed = [inf.normalize_dim(d, rank) for d in given]
        if len(set(listed)) != len(listed):
            raise VerifyException(f"dims {given} name a dim twice")
        dims = set(listed) if listed else set(range(rank))
        keep = self.keepdim is not None and bool(self.keepdim.value.data)
        shape = [
            1 if i in dims else s for i, s in enumerate(t.get_shape()) if keep or i not in dims
        ]
        if self.results:
            dt = _require_tensor(self, self.results[0].type, "result").get_element_type()
        else:
            dt = self.default_dtype(t)
        return [TensorType(dt, shape)]

    def default_dtype(self, t: TensorType) -> Attribute:
        dt = t.get_element_type()
        return I64 if inf.is_integral(dt, include_bool=True) else dt


@irdl_op_definition
class SumOp(ReductionOp):
    """Sum over `dims` (all when absent); the result type may name a dtype.

    %r = aten.sum %x dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
    """

    name = "aten.sum"


@irdl_op_definition
class MeanOp(ReductionOp):
    """Mean over `dims` (all when absent); floats only.

    %r = aten.mean %x dims = [0] : tensor<2x3xf32> -> tensor<3xf32>
    """

    name = "aten.mean"

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        if not inf.is_float(t.get_element_type()):
            raise VerifyException(f"needs a floating-point input, got {t}")
        out = super().infer_result_types(operand_types)
        if not inf.is_float(inf.element_type(out[0])):
            raise VerifyException(f"needs a floating-point result, got {out[0]}")
        return out


class ExtremumOp(ReductionOp, ABC):
    """`amax`/`amin`: the result has the input's dtype."""

    def default_dtype(self, t: TensorType) -> Attribute:
        return t.get_element_type()

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        out = super().infer_result_types(operand_types)
        t = _require_tensor(self, operand_types[0])
        return [TensorType(t.get_element_type(), inf.shape_of(out[0]))]


@irdl_op_definition
class AmaxOp(ExtremumOp):
    """Maximum over `dims` (all when absent); NaN wins, as in `torch.amax`.

    %r = aten.amax %x dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
    """

    name = "aten.amax"


@irdl_op_definition
class AminOp(ExtremumOp):
    """Minimum over `dims` (all when absent); NaN wins, as in `torch.amin`.

    %r = aten.amin %x dims = [1] : tensor<2x3xf32> -> tensor<2xf32>
    """

    name = "aten.amin"


class VarianceOp(ReductionOp, ABC):
    """`var`/`std` over `dims` with Bessel's `correction` (default 1); floats only.
    `decompose-reductions` writes them as two passes (mean, then squared deviations),
    which stays accurate where the one-pass `E[x^2] - E[x]^2` cancels."""

    correction = opt_prop_def(Number)
    assembly_format = (
        "$input (`dims` `=` $dims^)? (`keepdim` `=` $keepdim^)? "
        "(`correction` `=` $correction^)? attr-dict `:` type($input) `->` type($result)"
    )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        if not inf.is_float(t.get_element_type()):
            raise VerifyException(f"needs a floating-point input, got {t}")
        out = super().infer_result_types(operand_types)
        if inf.element_type(out[0]) != t.get_element_type():
            raise VerifyException(f"result dtype must be the input's, got {out[0]}")
        return out


@irdl_op_definition
class VarOp(VarianceOp):
    """Variance over `dims`: sum((x - mean)^2) / (N - correction).

    %r = aten.var %x dims = [1] correction = 0 : i64 : tensor<2x3xf32> -> tensor<2xf32>
    """

    name = "aten.var"


@irdl_op_definition
class StdOp(VarianceOp):
    """Standard deviation over `dims`: sqrt(var).

    %r = aten.std %x dims = [1] keepdim = true : tensor<2x3xf32> -> tensor<2x1xf32>
    """

    name = "aten.std"


class NormalizationOp(AtenOp, ABC):
    """A composite op `decompose-reductions` expands into reductions and pointwise
    ops, so it fuses into one group; unfused, it runs as the PyTorch function."""

    traits = traits_def(Pure())


class SoftmaxLikeOp(NormalizationOp, ABC):
    input = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr[builtin.I64])
    assembly_format = "$input `dim` `=` $dim attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, dim: int, dtype: Attribute | None = None):
        t = SSAValue.get(input).type
        assert isinstance(t, TensorType)
        res = TensorType(dtype or t.get_element_type(), t.get_shape())
        super().__init__([input], {"dim": IntegerAttr(dim, I64)}, [res])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        inf.normalize_dim(self.dim.value.data, max(t.get_num_dims(), 1))
        if self.results:
            dt = _require_tensor(self, self.results[0].type, "result").get_element_type()
        else:
            dt = t.get_element_type()
        if not inf.is_float(dt):
            raise VerifyException(f"needs a floating-point result, got {dt}")
        return [TensorType(dt, t.get_shape())]


@irdl_op_definition
class SoftmaxOp(SoftmaxLikeOp):
    """`torch.softmax(x, dim)`: exp(x - max) / sum(exp(x - max)); the result type may
    name a dtype (`dtype=` of `F.softmax`).

    %r = aten.softmax %x dim = -1 : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "aten.softmax"


@irdl_op_definition
class LogSoftmaxOp(SoftmaxLikeOp):
    """`torch.log_softmax(x, dim)`: x - max - log(sum(exp(x - max))).

    %r = aten.log_softmax %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    """

    name = "aten.log_softmax"


@irdl_op_definition
class LayerNormOp(NormalizationOp):
    """`F.layer_norm(x, normalized_shape, weight, bias, eps)` over the trailing
    `len(normalized_shape)` dims; `weight`/`bias` are optional (in that order: a bias
    alone is written with `has_weight = false`).

    %r = aten.layer_norm %x, %w, %b normalized_shape = [8] eps = 1.0e-05 : f64
           : tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32> -> tensor<4x8xf32>
    """

    name = "aten.layer_norm"
    input = operand_def(TensorType)
    params = var_operand_def(TensorType)
    result = result_def(TensorType)
    normalized_shape = prop_def(IntArray)
    eps = prop_def(Number)
    has_weight = opt_prop_def(IntegerAttr[builtin.I1])
    assembly_format = (
        "$input (`,` $params^)? `normalized_shape` `=` $normalized_shape `eps` `=` $eps "
        "(`has_weight` `=` $has_weight^)? attr-dict `:` type($input) (`,` type($params)^)? `->` type($result)"
    )

    def __init__(
        self,
        input: SSAValue | Operation,
        normalized_shape: Sequence[int],
        weight: SSAValue | Operation | None = None,
        bias: SSAValue | Operation | None = None,
        eps: float = 1e-5,
    ):
        params = [p for p in (weight, bias) if p is not None]
        props: dict[str, Attribute | None] = {
            "normalized_shape": DenseArrayBase.from_list(i64, list(normalized_shape)),
            "eps": number_attr(float(eps)),
            "has_weight": IntegerAttr(0, BOOL) if weight is None and bias is not None else None,
        }
        super().__init__([input, params], props)

    @property
    def weight(self) -> SSAValue | None:
        has_w = self.has_weight is None or bool(self.has_weight.value.data)
        return self.params[0] if has_w and self.params else None

    @property
    def bias(self) -> SSAValue | None:
        n = len(self.params)
        return self.params[-1] if n == 2 or (n == 1 and self.weight is None) else None

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        if not inf.is_float(t.get_element_type()):
            raise VerifyException(f"needs a floating-point input, got {t}")
        norm = list(self.normalized_shape.get_values())
        shape = list(t.get_shape())
        trailing = shape[len(shape) - len(norm) :]
        if (
            not norm
            or len(norm) > len(shape)
            or not all(_same_size(a, b) for a, b in zip(trailing, norm, strict=True))
        ):
            raise VerifyException(
                f"normalized_shape {norm} is not the trailing shape of {inf.format_shape(shape)}"
            )
        if len(operand_types) > 3:
            raise VerifyException("takes at most a weight and a bias")
        for p in operand_types[1:]:
            pt = _require_tensor(self, p, "weight or bias")
            if list(pt.get_shape()) != norm:
                raise VerifyException(f"weight and bias must have shape {norm}, got {pt}")
        return [TensorType(t.get_element_type(), shape)]


@irdl_op_definition
class GatherOp(AtenOp):
    """`torch.gather(x, dim, index)`: picks elements along `dim` (a barrier that runs
    through PyTorch; cross-entropy uses it to pick the target's logit).

    %r = aten.gather %x, %i dim = 1 : tensor<4x8xf32>, tensor<4x1xi64> -> tensor<4x1xf32>
    """

    name = "aten.gather"
    input = operand_def(TensorType)
    index = operand_def(TensorType)
    result = result_def(TensorType)
    dim = prop_def(IntegerAttr[builtin.I64])
    traits = traits_def(Pure())
    assembly_format = (
        "$input `,` $index `dim` `=` $dim attr-dict `:` type($input) `,` type($index) "
        "`->` type($result)"
    )

    def __init__(self, input: SSAValue | Operation, dim: int, index: SSAValue | Operation):
        super().__init__([input, index], {"dim": IntegerAttr(dim, I64)})

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        t = _require_tensor(self, operand_types[0])
        i = _require_tensor(self, operand_types[1], "index")
        if i.get_element_type() != I64:
            raise VerifyException(f"index must be i64, got {i}")
        if i.get_num_dims() != t.get_num_dims():
            raise VerifyException("index and input must have the same rank")
        inf.normalize_dim(self.dim.value.data, max(t.get_num_dims(), 1))
        return [TensorType(t.get_element_type(), i.get_shape())]


@irdl_op_definition
class EmbeddingOp(AtenOp):
    """`torch.embedding(weight, indices)`: the rows of a 2-d table that integer
    indices pick, shaped `indices.shape + [row size]`. Alone it runs through
    PyTorch; `fuse-gathers` moves it into the group that reads it, whose kernel
    reads each row from the table at `index * row size` (indices out of range
    raise eager's `IndexError`).

    %r = aten.embedding %w, %ids : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
    """

    name = "aten.embedding"
    weight = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = (
        "$weight `,` $indices attr-dict `:` type($weight) `,` type($indices) `->` type($result)"
    )

    def __init__(self, weight: SSAValue | Operation, indices: SSAValue | Operation):
        super().__init__([weight, indices])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        w = _require_tensor(self, operand_types[0], "weight")
        i = _require_tensor(self, operand_types[1], "indices")
        if w.get_num_dims() != 2:
            raise VerifyException(f"weight must be 2-d, got {w}")
        if i.get_element_type() not in (I64, builtin.i32):
            raise VerifyException(f"indices must be i64 or i32, got {i}")
        return [TensorType(w.get_element_type(), [*i.get_shape(), w.get_shape()[1]])]


@irdl_op_definition
class EmbeddingDenseBackwardOp(AtenOp):
    """`aten.embedding_dense_backward(grad, indices, num_weights, padding_idx,
    False)`: the gradient of an embedding table, a `num_weights x row size`
    tensor whose row `r` is the sum of the gradient's rows whose index is `r`
    (none for `padding_idx`; -1 for none). Alone it runs through PyTorch;
    `fuse-scatters` makes it a kernel of its own, which scatter-adds the rows.

    %g = aten.embedding_dense_backward %d, %ids num_weights = 100 padding_idx = -1 : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<100x32xf32>
    """

    name = "aten.embedding_dense_backward"
    grad = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    num_weights = prop_def(IntegerAttr[builtin.I64])
    padding_idx = prop_def(IntegerAttr[builtin.I64])
    traits = traits_def(Pure())
    assembly_format = (
        "$grad `,` $indices `num_weights` `=` $num_weights `padding_idx` `=` $padding_idx "
        "attr-dict `:` type($grad) `,` type($indices) `->` type($result)"
    )

    def __init__(
        self,
        grad: SSAValue | Operation,
        indices: SSAValue | Operation,
        num_weights: int,
        padding_idx: int = -1,
    ):
        super().__init__(
            [grad, indices],
            {
                "num_weights": IntegerAttr(num_weights, I64),
                "padding_idx": IntegerAttr(padding_idx, I64),
            },
        )

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        g = _require_tensor(self, operand_types[0], "grad")
        i = _require_tensor(self, operand_types[1], "indices")
        if i.get_element_type() not in (I64, builtin.i32):
            raise VerifyException(f"indices must be i64 or i32, got {i}")
        gs, ids = list(g.get_shape()), list(i.get_shape())
        if len(gs) != len(ids) + 1 or any(
            a != b and inf.DYNAMIC not in (a, b) for a, b in zip(gs, ids, strict=False)
        ):
            raise VerifyException(
                f"grad must be shaped indices.shape + [row size], got {g} for indices {i}"
            )
        rows = self.num_weights.value.data
        if rows < 0:
            raise VerifyException(f"num_weights must not be negative, got {rows}")
        return [TensorType(g.get_element_type(), [rows, gs[-1]])]


@irdl_op_definition
class ForeachCopyOp(IRDLOperation):
    """`torch._foreach_copy_(dsts, srcs)`: writes each `src` into its `dst` in
    place, in order, in one PyTorch call. `batch-argument-writes` makes it of the
    write-backs a graph ends with (AOTAutograd's updated buffers).

    aten.foreach_copy_ (%a, %b), (%x, %y) : (tensor<4xf32>, tensor<i64>), (tensor<4xf32>, tensor<i64>)
    """

    name = "aten.foreach_copy_"
    dsts = var_operand_def(TensorType)
    srcs = var_operand_def(TensorType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = (
        "`(` $dsts `)` `,` `(` $srcs `)` attr-dict `:` `(` type($dsts) `)` `,` `(` type($srcs) `)`"
    )

    def __init__(self, dsts: Sequence[SSAValue], srcs: Sequence[SSAValue]):
        super().__init__(operands=[dsts, srcs])

    def verify_(self) -> None:
        if len(self.dsts) != len(self.srcs):
            raise VerifyException(f"{len(self.dsts)} destinations but {len(self.srcs)} sources")
        for d, s in zip(self.dsts, self.srcs, strict=True):
            if d.type != s.type:
                raise VerifyException(f"source {s.type} is not of its destination's type {d.type}")


@irdl_op_definition
class ForeachAddOp(IRDLOperation):
    """`torch._foreach_add_(dsts, value)`: adds a number to each tensor in
    place, in one PyTorch call (batch norm's `num_batches_tracked += 1`, written
    back by `batch-argument-writes`).

    aten.foreach_add_ (%a, %b) value = 1 : i64 : (tensor<i64>, tensor<i64>)
    """

    name = "aten.foreach_add_"
    dsts = var_operand_def(TensorType)
    value = prop_def(Number)
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "`(` $dsts `)` `value` `=` $value attr-dict `:` `(` type($dsts) `)`"

    def __init__(self, dsts: Sequence[SSAValue], value: Attribute):
        super().__init__(operands=[dsts], properties={"value": value})


OPAQUE_FRESH = "fresh"
"""The `aten.opaque` attribute saying its results are fresh tensors, its operands
only read (see `OpaqueOp`)."""


@irdl_op_definition
class OpaqueOp(LazyFormatOp):
    """Any PyTorch operator fusec does not model; it names its target and runs
    through PyTorch. Unknown effects: always a fusion barrier.

    %r = aten.opaque "aten.softmax.int"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>

    With the `fresh` attribute (`OPAQUE_FRESH`: the importer sets it for an ATen
    OpOverload whose schema marks no argument or result aliased or written) its
    results are new tensors and it writes none of its operands:

    %r = aten.opaque "aten.convolution.default"(%x, %w) {fresh} : ...
    """

    name = "aten.opaque"
    target = prop_def(StringAttr)
    node = opt_prop_def(StringAttr)
    args = var_operand_def(AnyAttr())
    outputs = var_result_def(AnyAttr())
    assembly_format = (
        "$target (`node` `=` $node^)? `(` $args `)` attr-dict `:` functional-type($args, $outputs)"
    )

    def __init__(
        self,
        target: str,
        args: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        node: str | None = None,
    ):
        super().__init__(
            operands=[args],
            result_types=[result_types],
            properties={"target": StringAttr(target), "node": StringAttr(node) if node else None},
        )

    def verify_(self) -> None:
        if not self.target.data:
            raise VerifyException("needs a non-empty target name")


# --------------------------------------------------------------------------- writes and sizes


@irdl_attr_definition
class SizeType(ParametrizedAttribute, TypeAttribute):
    """A tensor's sizes as a runtime value (a `torch.Size`), for sizes that are
    returned or passed on rather than folded into constants; `rank` is its length.

    %s = aten.size %x : tensor<4x3xf32> -> !aten.size<2>
    """

    name = "aten.size"
    rank: IntAttr

    def __init__(self, rank: int | IntAttr):
        super().__init__(IntAttr(rank) if isinstance(rank, int) else rank)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return [IntAttr(parser.parse_integer(allow_boolean=False, allow_negative=False))]

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(str(self.rank.data))


@irdl_op_definition
class CopyOp(AtenOp):
    """`dst.copy_(src)`: writes `src` (broadcast, cast) into the tensor `dst` in place.

    The imported form of every in-place op: `x.add_(y)` is `aten.add` then
    `aten.copy_` back into `x`. It has a write effect, so DCE keeps it, and it is no
    fusion candidate; `functionalize` removes the ones whose target has no alias.

    aten.copy_ %x, %t : tensor<4x3xf32>, tensor<3xf32>
    """

    name = "aten.copy_"
    dst = operand_def(TensorType)
    src = operand_def(AnyAttr())
    traits = traits_def(MemoryWriteEffect())
    assembly_format = "$dst `,` $src attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, dst: SSAValue | Operation, src: SSAValue | Operation):
        super().__init__([dst, src])

    def infer_result_types(self, operand_types: Sequence[Attribute]) -> list[Attribute]:
        dst = _require_tensor(self, operand_types[0], "destination")
        src = operand_types[1]
        if isinstance(src, TensorType):
            try:
                fits = inf.broadcast_shapes(src.get_shape(), dst.get_shape()) == tuple(
                    dst.get_shape()
                )
            except VerifyException:
                fits = False
            if not fits:
                raise VerifyException(f"{src} does not broadcast to the destination {dst}")
        return []


@irdl_op_definition
class SizeOp(LazyFormatOp):
    """`x.size()` as a runtime value (`torch.Size`), where a constant would make the
    import valid only for the example shapes (a returned size, an opaque op's
    argument).

    %s = aten.size %x : tensor<4x3xf32> -> !aten.size<2>
    """

    name = "aten.size"
    input = operand_def(TensorType)
    result = result_def(SizeType)
    traits = traits_def(Pure())
    assembly_format = "$input attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation):
        t = SSAValue.get(input).type
        assert isinstance(t, TensorType)
        super().__init__(operands=[input], result_types=[SizeType(t.get_num_dims())])

    def verify_(self) -> None:
        t = self.input.type
        assert isinstance(t, TensorType) and isinstance(self.result.type, SizeType)
        if self.result.type.rank.data != t.get_num_dims():
            raise VerifyException(
                f"the size of a tensor of rank {t.get_num_dims()} has rank "
                f"{t.get_num_dims()}, got {self.result.type}"
            )


@irdl_op_definition
class SymSizeOp(LazyFormatOp):
    """One size of a tensor as a runtime i64 (ATen's `sym_size.int`): in a graph
    with symbolic shapes a size is a value of the program, not a constant of the
    call that compiled it.

    %n = aten.sym_size %x dim = 0 : tensor<4x3xf32> -> i64
    """

    name = "aten.sym_size"
    input = operand_def(TensorType)
    dim = prop_def(IntegerAttr[builtin.I64])
    result = result_def(I64)
    traits = traits_def(Pure())
    assembly_format = "$input `dim` `=` $dim attr-dict `:` type($input) `->` type($result)"

    def __init__(self, input: SSAValue | Operation, dim: int):
        super().__init__(
            operands=[input], properties={"dim": IntegerAttr(dim, I64)}, result_types=[I64]
        )

    def verify_(self) -> None:
        t = self.input.type
        assert isinstance(t, TensorType)
        inf.normalize_dim(self.dim.value.data, t.get_num_dims())


ATEN_OPS: list[type[Operation]] = [
    NegOp, AbsOp, ReluOp, ExpOp, Expm1Op, LogOp, Log1pOp, SqrtOp, RsqrtOp, ReciprocalOp,
    SigmoidOp, TanhOp, SiluOp, ErfOp, SinOp, CosOp, LogicalNotOp, LeakyReluOp, GeluOp,
    ClampOp, ToOp, AddOp, SubOp, DivOp, MulOp, PowOp, MaximumOp, MinimumOp, EqOp, NeOp,
    LtOp, LeOp, GtOp, GeOp, LogicalAndOp, LogicalOrOp, LogicalXorOp, WhereOp, ExpandOp,
    ViewOp, ReshapeOp, UnsqueezeOp, SqueezeOp, PermuteOp, TransposeOp, ChunkOp, SplitOp,
    CatOp, NarrowOp, SliceOp, MatmulOp, MmOp, AddmmOp, LinearOp, SumOp, MeanOp, OpaqueOp,
]  # fmt: skip

ATEN_OPS += [CopyOp, SizeOp]
ATEN_OPS += [AmaxOp, AminOp, VarOp, StdOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp, GatherOp]
ATEN_OPS += [SymSizeOp, FullLikeOp, PositionsOp, ScaledDotProductAttentionOp, EmbeddingOp]
ATEN_OPS += [EmbeddingDenseBackwardOp, ForeachCopyOp, ForeachAddOp]

Aten = Dialect("aten", ATEN_OPS, [SizeType])
