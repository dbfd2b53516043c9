"""The torch-level table, pointwise part: handlers of torch functions,
`Tensor` methods and modules that import as `aten` pointwise ops (and casts).

    torch.sigmoid(x), x.sigmoid(), nn.Sigmoid()(x)  ->  %s = aten.sigmoid %x
    x / 2, torch.div(x, y, rounding_mode="floor")   ->  %d = aten.div %x, %c ...
    x.masked_fill(mask, -inf)                       ->  aten.where %mask, %c, %x

The ATen table (`fusec.frontend.aten_table`) reuses these handlers where the
ATen overload's arguments are the torch function's. `emit` and
`float_constant` are the building blocks of written-out formulas.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
import torch.nn.functional as F
from fusec.codegen.torch_ops import DTYPES_OF_TORCH
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend.graph_values import Const
from fusec.frontend.imported import NotMapped
from fusec.frontend.position_embeddings import adds_int_zero
from fusec.frontend.registry import Handler, register
from fusec.frontend.value_types import is_scalar
from torch import nn
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer


def unary_handler(op_cls: type[Operation]) -> Handler:
    def handle(ctx: Importer, x: Any, *rest: Any, inplace: bool = False) -> SSAValue:
        if rest:
            raise NotMapped("extra arguments")
        return ctx.add_op(op_cls(ctx.tensor(x))).results[0]

    return handle


def _unary_module(op_cls: type[Operation]) -> Handler:
    def handle(ctx: Importer, mod: nn.Module, x: Any) -> SSAValue:
        return ctx.add_op(op_cls(ctx.tensor(x))).results[0]

    return handle


_UNARY = {
    aten.NegOp: (torch.neg, operator.neg, "neg"),
    aten.AbsOp: (torch.abs, operator.abs, "abs"),
    aten.ReluOp: (torch.relu, F.relu, "relu", "relu_"),
    aten.ExpOp: (torch.exp, "exp"),
    aten.Expm1Op: (torch.expm1, "expm1"),
    aten.LogOp: (torch.log, "log"),
    aten.Log1pOp: (torch.log1p, "log1p"),
    aten.SqrtOp: (torch.sqrt, "sqrt"),
    aten.RsqrtOp: (torch.rsqrt, "rsqrt"),
    aten.ReciprocalOp: (torch.reciprocal, "reciprocal"),
    aten.SigmoidOp: (torch.sigmoid, F.sigmoid, "sigmoid"),
    aten.TanhOp: (torch.tanh, F.tanh, "tanh"),
    aten.SiluOp: (F.silu,),
    aten.ErfOp: (torch.erf, "erf"),
    aten.SinOp: (torch.sin, "sin"),
    aten.CosOp: (torch.cos, "cos"),
    aten.LogicalNotOp: (torch.logical_not, "logical_not"),
}
for _cls, _keys in _UNARY.items():
    register(*_keys)(unary_handler(_cls))
for _cls, _mod in (
    (aten.ReluOp, nn.ReLU),
    (aten.SigmoidOp, nn.Sigmoid),
    (aten.TanhOp, nn.Tanh),
    (aten.SiluOp, nn.SiLU),
):
    register(_mod)(_unary_module(_cls))


def _number(v: Any) -> Attribute | None:
    return None if v is None else aten.number_attr(v)


def binary(ctx: Importer, op_cls: type[Operation], a: Any, b: Any, **props: Any) -> SSAValue:
    lhs, rhs = ctx.operand(a), ctx.operand(b)
    if not isinstance(lhs.type, TensorType) and not isinstance(rhs.type, TensorType):
        raise NotMapped("no tensor operand")
    return ctx.add_op(op_cls(lhs, rhs, **props)).results[0]


def alpha_handler(op_cls: type[Operation]) -> Handler:
    def handle(ctx: Importer, a: Any, b: Any, *, alpha: Any = None) -> SSAValue:
        alpha = ctx.const(alpha)
        if alpha == 1:
            alpha = None
        return binary(ctx, op_cls, a, b, alpha=_number(alpha))

    return handle


_add_alpha = register(operator.iadd, "add_")(alpha_handler(aten.AddOp))


@register(torch.add, operator.add, "add")
def _add(ctx: Importer, a: Any, b: Any, *, alpha: Any = None) -> SSAValue:
    """`a + alpha * b`; an integer `arange(n) + 0` is the `arange` (`adds_int_zero`)."""
    if alpha in (None, 1) and adds_int_zero(ctx, a, b):
        return ctx.tensor(a)
    return _add_alpha(ctx, a, b, alpha=alpha)


register(torch.sub, operator.sub, operator.isub, "sub", "sub_")(alpha_handler(aten.SubOp))


def _python_number(ctx: Importer, a: Any) -> bool:
    """Whether `a` is a Python number (not a bool), or a node holding one."""
    if isinstance(a, torch.fx.Node):
        v = ctx.env.get(a)
        a = v.value if isinstance(v, Const) else None
    return isinstance(a, int | float | torch.SymInt | torch.SymFloat) and not isinstance(a, bool)


@register(
    torch.div, torch.divide, torch.true_divide, operator.truediv, operator.itruediv,
    "div", "div_", "divide", "divide_", "true_divide", "true_divide_",
)  # fmt: skip
def div(ctx: Importer, a: Any, b: Any, *, rounding_mode: str | None = None) -> SSAValue:
    mode = ctx.const(rounding_mode)
    if mode is None and _python_number(ctx, a):
        # `s / x` is `x.__rtruediv__(s)`, which eager computes as
        # `x.reciprocal() * s`: two ops, the reciprocal rounded to x's dtype.
        recip = ctx.add_op(aten.ReciprocalOp(ctx.tensor(b))).results[0]
        ctx.eager_results.append(recip)
        return ctx.add_op(aten.MulOp(recip, ctx.operand(a))).results[0]
    return binary(ctx, aten.DivOp, a, b, rounding_mode=None if mode is None else StringAttr(mode))


@register(operator.floordiv, operator.ifloordiv, torch.floor_divide, "floor_divide")
def floordiv(ctx: Importer, a: Any, b: Any) -> SSAValue:
    return binary(ctx, aten.DivOp, a, b, rounding_mode=StringAttr("floor"))


for _cls, _keys in {
    aten.MulOp: (
        torch.mul,
        torch.multiply,
        operator.mul,
        operator.imul,
        "mul",
        "mul_",
        "multiply",
        "multiply_",
    ),
    aten.PowOp: (torch.pow, operator.pow, operator.ipow, "pow", "pow_"),
    aten.MaximumOp: (torch.maximum, "maximum"),
    aten.MinimumOp: (torch.minimum, "minimum"),
    aten.EqOp: (torch.eq, operator.eq, "eq"),
    aten.NeOp: (torch.ne, operator.ne, "ne"),
    aten.LtOp: (torch.lt, operator.lt, "lt"),
    aten.LeOp: (torch.le, operator.le, "le"),
    aten.GtOp: (torch.gt, operator.gt, "gt"),
    aten.GeOp: (torch.ge, operator.ge, "ge"),
    aten.LogicalAndOp: (torch.logical_and, "logical_and"),
    aten.LogicalOrOp: (torch.logical_or, "logical_or"),
    aten.LogicalXorOp: (torch.logical_xor, "logical_xor"),
}.items():
    register(*_keys)(lambda ctx, a, b, _c=_cls: binary(ctx, _c, a, b))


def _max_min(op_cls: type[Operation]) -> Handler:
    """`torch.max(a, b)` / `a.max(b)` with a tensor `b` is the elementwise op;
    the reductions (`torch.max(a)`, `torch.max(a, dim)`) stay opaque."""

    def handle(ctx: Importer, a: Any, b: Any = None, *rest: Any, **kwargs: Any) -> SSAValue:
        if rest or kwargs or not isinstance(ctx.env.get(b), SSAValue):
            raise NotMapped("max/min reduction")
        return binary(ctx, op_cls, a, b)

    return handle


register(torch.max, "max")(_max_min(aten.MaximumOp))
register(torch.min, "min")(_max_min(aten.MinimumOp))


@register(torch.where, "where")
def where(ctx: Importer, c: Any, a: Any, b: Any) -> SSAValue:
    return ctx.add_op(aten.WhereOp(ctx.tensor(c), ctx.operand(a), ctx.operand(b))).results[0]


@register(torch.masked_fill, "masked_fill", "masked_fill_")
def masked_fill(ctx: Importer, x: Any, mask: Any, value: Any) -> SSAValue:
    """`x.masked_fill(mask, v)` = `where(mask, v, x)` (also ATen's
    `masked_fill.Scalar`), so an attention mask fuses into the softmax. A tensor
    value or a non-bool mask stays opaque; where `where` would promote (an
    integer `x` filled with a float) the importer's check of the result type
    against PyTorch's keeps the node opaque (`masked_fill` never promotes)."""
    m, v = ctx.tensor(mask), ctx.const(value)
    if inf.element_type(m.type) != inf.BOOL or not is_scalar(v):
        raise NotMapped("masked_fill with a non-bool mask or a tensor value")
    return ctx.add_op(aten.WhereOp(m, ctx.operand(value), ctx.tensor(x))).results[0]


@register(torch.bitwise_not, operator.invert, "bitwise_not")
def bitwise_not(ctx: Importer, x: Any) -> SSAValue:
    """`~mask` of a bool tensor (also ATen's `bitwise_not`) is `logical_not`
    (an attention mask's complement); integer `~` stays opaque."""
    xt = ctx.tensor(x)
    if inf.element_type(xt.type) != inf.BOOL:
        raise NotMapped("bitwise_not of a non-bool tensor")
    return ctx.add_op(aten.LogicalNotOp(xt)).results[0]


def _fill(
    ctx: Importer,
    x: Any,
    value: Any,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: Any = False,
    requires_grad: Any = False,
    memory_format: Any = None,
) -> SSAValue:
    """`torch.full_like(x, v)` and its kin as `aten.full_like`: only x's shape
    is read, so in a kernel the fill is a constant (a causal mask's
    `ones_like(att, dtype=torch.bool)` joins the softmax). Another layout or
    device, pinned memory or a gradient-requiring result stays opaque."""
    xt, v = ctx.tensor(x), ctx.const(value)
    dtype, layout, device = ctx.const(dtype), ctx.const(layout), ctx.const(device)
    real = ctx.real.get(x) if isinstance(x, torch.fx.Node) else None
    if not is_scalar(v):
        raise NotMapped("a fill value that is not a number")
    if layout not in (None, torch.strided) or ctx.const(pin_memory) or ctx.const(requires_grad):
        raise NotMapped("a fill with another layout, pinned memory or requires_grad")
    if device is not None and (real is None or torch.device(device) != real.device):
        raise NotMapped("a fill on another device")
    if ctx.const(memory_format) not in (None, torch.preserve_format, torch.contiguous_format):
        raise NotMapped("a fill with a channels-last memory format")
    dt = inf.element_type(xt.type) if dtype is None else DTYPES_OF_TORCH.get(dtype)
    if dt is None:
        raise NotMapped(f"dtype {dtype}")
    return ctx.add_op(aten.FullLikeOp(xt, aten.number_attr(v), dt)).results[0]


@register(torch.full_like)
def full_like(ctx: Importer, x: Any, fill_value: Any, **kwargs: Any) -> SSAValue:
    return _fill(ctx, x, fill_value, **kwargs)


@register(torch.ones_like)
def ones_like(ctx: Importer, x: Any, **kwargs: Any) -> SSAValue:
    return _fill(ctx, x, 1, **kwargs)


@register(torch.zeros_like)
def zeros_like(ctx: Importer, x: Any, **kwargs: Any) -> SSAValue:
    return _fill(ctx, x, 0, **kwargs)


def _size_source(v: SSAValue) -> SSAValue:
    """A value with `v`'s sizes that is computed no later: back through
    pointwise ops to an operand of the same shape. `positions` reads only
    sizes, and reading them off a result that fuses would order that result's
    group before the group the positions feed (one group, for a causal mask)."""
    while isinstance(v, OpResult) and v.op.has_trait(aten.Pointwise):
        shape = v.type.get_shape()  # type: ignore[attr-defined]
        same = [
            o
            for o in v.op.operands
            if isinstance(o.type, TensorType) and o.type.get_shape() == shape
        ]
        if not same:
            break
        v = same[0]
    return v


def _triangle(lower: bool) -> Handler:
    """`tril`/`triu` as a `where` over positions: element (i, j) of the last two
    dims is kept where j - i <= diagonal (tril) or >= diagonal (triu), else 0
    (False for bool). The positions are two small host tensors; the compare and
    the select are pointwise and fuse (a causal mask becomes index arithmetic in
    the softmax's kernel):

        %c = aten.positions %x dim = -1 ; %r = aten.positions %x dim = -2
        %keep = aten.le (aten.sub %c, (aten.unsqueeze %r dim = 1)), %diagonal
        %y = aten.where %keep, %x, %zero
    """

    def handle(ctx: Importer, x: Any, diagonal: Any = 0) -> SSAValue:
        xt, d = ctx.tensor(x), ctx.const(diagonal)
        if xt.type.get_num_dims() < 2 or not isinstance(d, int) or isinstance(d, bool):
            raise NotMapped("tril/triu of a tensor of rank below 2, or a non-integer diagonal")
        like = _size_source(xt)
        cols = ctx.add_op(aten.PositionsOp(like, -1)).results[0]
        rows = ctx.add_op(aten.PositionsOp(like, -2)).results[0]
        rows = ctx.add_op(aten.UnsqueezeOp([rows], {"dim": IntegerAttr(1, inf.I64)})).results[0]
        diff = ctx.add_op(aten.SubOp(cols, rows)).results[0]
        compare = aten.LeOp if lower else aten.GeOp
        keep = ctx.add_op(compare(diff, ctx.constant(d))).results[0]
        is_bool = inf.element_type(xt.type) == inf.BOOL
        zero = ctx.constant(False if is_bool else 0)
        return ctx.add_op(aten.WhereOp(keep, xt, zero)).results[0]

    return handle


tril = register(torch.tril, "tril")(_triangle(lower=True))
triu = register(torch.triu, "triu")(_triangle(lower=False))


@register(torch.clamp, torch.clip, "clamp", "clip")
def clamp(ctx: Importer, x: Any, min: Any = None, max: Any = None) -> SSAValue:
    lo, hi = ctx.const(min), ctx.const(max)
    if not all(v is None or is_scalar(v) for v in (lo, hi)):
        raise NotMapped("tensor bounds")
    op = aten.ClampOp(ctx.tensor(x), min=_number(lo), max=_number(hi))
    return ctx.add_op(op).results[0]


@register(F.leaky_relu)
def leaky_relu(
    ctx: Importer, x: Any, negative_slope: Any = 0.01, inplace: bool = False
) -> SSAValue:
    op = aten.LeakyReluOp(ctx.tensor(x), negative_slope=_number(float(ctx.const(negative_slope))))
    return ctx.add_op(op).results[0]


@register(nn.LeakyReLU)
def _leaky_relu_module(ctx: Importer, mod: nn.LeakyReLU, x: Any) -> SSAValue:
    return leaky_relu(ctx, x, mod.negative_slope)


@register(F.gelu)
def gelu(ctx: Importer, x: Any, approximate: str = "none") -> SSAValue:
    mode = ctx.const(approximate)
    op = aten.GeluOp(ctx.tensor(x), approximate=None if mode == "none" else StringAttr(mode))
    return ctx.add_op(op).results[0]


@register(nn.GELU)
def _gelu_module(ctx: Importer, mod: nn.GELU, x: Any) -> SSAValue:
    return gelu(ctx, x, mod.approximate)


def _cast(ctx: Importer, x: Any, dtype: torch.dtype) -> SSAValue:
    """`x.to(dtype)`; to x's own dtype it is x itself, as in PyTorch (no copy):
    a later in-place write through the result writes x."""
    v = ctx.tensor(x)
    assert isinstance(v.type, TensorType)
    if v.type.get_element_type() == DTYPES_OF_TORCH[dtype]:
        return v
    return ctx.add_op(aten.ToOp(v, DTYPES_OF_TORCH[dtype])).results[0]


@register("to")
def _to(ctx: Importer, x: Any, *args: Any, **kwargs: Any) -> SSAValue:
    args = ctx.const(args)
    kwargs = {k: ctx.const(v) for k, v in kwargs.items()}
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    if kwargs:
        raise NotMapped("to() options")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, str | torch.device):
            device = a
        else:
            raise NotMapped("to() argument")
    real = ctx.real[ctx.node.args[0]]  # type: ignore[union-attr]
    if device is not None and torch.device(device) != real.device:
        raise NotMapped("device change")
    if dtype is None:
        return ctx.tensor(x)
    return _cast(ctx, x, dtype)


for _meth, _dt in {
    "float": torch.float32,
    "half": torch.float16,
    "double": torch.float64,
    "bfloat16": torch.bfloat16,
    "int": torch.int32,
    "long": torch.int64,
    "bool": torch.bool,
}.items():
    register(_meth)(lambda ctx, x, _d=_dt: _cast(ctx, x, _d))


@register("contiguous", torch.Tensor.contiguous)
def _contiguous(ctx: Importer, x: Any, memory_format: Any = torch.contiguous_format) -> SSAValue:
    """`x.contiguous()` is x itself when x is contiguous, as in PyTorch (a later
    in-place write through the result writes x), and otherwise a fresh copy: a
    same-dtype `aten.to`, so writes to it never reach x (nor the caller's input
    x may be a view of). Which one is decided on the traced value; a program is
    specialized on its arguments' contiguity. Another memory format runs through
    PyTorch when it has to copy (the copy's strides are not row-major)."""
    v = ctx.tensor(x)
    fmt = ctx.const(memory_format)
    real = ctx.real.get(x) if isinstance(x, torch.fx.Node) else None
    if not isinstance(real, torch.Tensor):
        raise NotMapped("contiguous() of a value not traced")
    if real.is_contiguous(memory_format=fmt):
        return v
    if fmt is not torch.contiguous_format:
        raise NotMapped(f"a copy in memory format {fmt}")
    assert isinstance(v.type, TensorType)
    return ctx.add_op(aten.ToOp(v, v.type.get_element_type())).results[0]


def emit(ctx: Importer, cls: type[Operation], *operands: SSAValue, **props: Any) -> SSAValue:
    """Adds `cls(*operands, **props)` and returns its result."""
    return ctx.add_op(cls(*operands, **props)).results[0]


def float_constant(ctx: Importer, v: float) -> SSAValue:
    """An f64 constant (a formula's literal)."""
    return ctx.constant(float(v))
