"""torch- and ATen-level import of activations and rounding ops that are
compositions of `aten` pointwise ops, written out with PyTorch's own CPU
formulas so they fuse with their neighbours:

    F.hardswish(x)             ->  x * clamp(x + 3, 0, 6) / 6
    F.hardsigmoid(x)           ->  clamp(x + 3, 0, 6) / 6
    F.hardtanh(x, lo, hi)      ->  clamp(x, lo, hi)           (F.relu6: 0, 6)
    F.elu(x, alpha)            ->  where(x <= 0, expm1(x * input_scale) * alpha * scale, x * scale)
                                   (F.selu, F.celu: elu's constants)
    F.softplus(x, beta, t)     ->  where(x * beta > t, x, log1p(exp(x * beta)) / beta)
    F.mish(x)                  ->  x * tanh(log1p(exp(x)))
    F.logsigmoid(x)            ->  clamp(x, max=0) - log1p(exp(-|x|))
    torch.trunc(x)             ->  aten.div %x, 1 rounding_mode = "trunc"
    torch.floor(x)             ->  where(x < trunc(x), trunc(x) - 1, trunc(x))
    torch.ceil(x)              ->  where(x > trunc(x), trunc(x) + 1, trunc(x))
    torch.frac(x)              ->  x - trunc(x)

Each handler serves the function, the method, the module (`nn.Hardswish`, ...)
where there is one, and the ATen overload (`aten.hardswish.default`, and the
in-place `aten.hardtanh_`), so graphs from `torch.compile`, AOTAutograd and
`torch.export` fuse them alike; so do their backward ops in AOTAutograd's
backward graphs (`aten.hardswish_backward`, `aten.elu_backward`, ...), with
ATen's CPU formulas. Only floating inputs are written out: the
integer forms (`torch.floor` of an int tensor is the identity, `F.relu6` of one
clamps in integers) stay whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend.imported import NotMapped
from fusec.frontend.registry import register, register_aten
from fusec.frontend.torch_table import clamp as _clamp_handler
from fusec.frontend.torch_table import emit, float_constant
from torch import nn
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer

A = torch.ops.aten

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float(ctx: Importer, x: Any) -> SSAValue:
    """The tensor `x`, which must be floating for the written-out form."""
    v = ctx.tensor(x)
    if inf.element_type(v.type) not in (inf.F16, inf.BF16, inf.F32, inf.F64):
        raise NotMapped("the written-out form is for floating tensors")
    return v


def _clamp(ctx: Importer, v: SSAValue, lo: float | None, hi: float | None) -> SSAValue:
    num = aten.number_attr
    lo_attr = None if lo is None else num(float(lo))
    hi_attr = None if hi is None else num(float(hi))
    return emit(ctx, aten.ClampOp, v, min=lo_attr, max=hi_attr)


def _relu6_of_shifted(ctx: Importer, v: SSAValue) -> SSAValue:
    """clamp(x + 3, 0, 6): hardsigmoid's and hardswish's common part."""
    return _clamp(ctx, emit(ctx, aten.AddOp, v, float_constant(ctx, 3.0)), 0.0, 6.0)


@register_aten(A.hardtanh, A.hardtanh_)
@register(F.hardtanh, "hardtanh", "hardtanh_")
def _hardtanh(
    ctx: Importer, x: Any, min_val: Any = -1.0, max_val: Any = 1.0, inplace: Any = False
) -> SSAValue:
    return _clamp(ctx, _float(ctx, x), ctx.const(min_val), ctx.const(max_val))


@register(F.relu6)
def _relu6(ctx: Importer, x: Any, inplace: Any = False) -> SSAValue:
    return _clamp(ctx, _float(ctx, x), 0.0, 6.0)


@register_aten(A.hardsigmoid, A.hardsigmoid_)
@register(F.hardsigmoid)
def _hardsigmoid(ctx: Importer, x: Any, inplace: Any = False) -> SSAValue:
    v = _float(ctx, x)
    return emit(ctx, aten.DivOp, _relu6_of_shifted(ctx, v), float_constant(ctx, 6.0))


@register_aten(A.hardswish, A.hardswish_)
@register(F.hardswish)
def _hardswish(ctx: Importer, x: Any, inplace: Any = False) -> SSAValue:
    v = _float(ctx, x)
    scaled = emit(ctx, aten.MulOp, v, _relu6_of_shifted(ctx, v))
    return emit(ctx, aten.DivOp, scaled, float_constant(ctx, 6.0))


def _elu_form(ctx: Importer, v: SSAValue, alpha: float, scale: float, input_scale: float) -> SSAValue:
    """ATen's elu: x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale."""
    neg = emit(ctx, aten.Expm1Op, emit(ctx, aten.MulOp, v, float_constant(ctx, input_scale)))
    neg = emit(ctx, aten.MulOp, neg, float_constant(ctx, alpha * scale))
    pos = v if scale == 1.0 else emit(ctx, aten.MulOp, v, float_constant(ctx, scale))
    return emit(ctx, aten.WhereOp, emit(ctx, aten.LeOp, v, float_constant(ctx, 0.0)), neg, pos)


@register_aten(A.elu, A.elu_)
def _aten_elu(
    ctx: Importer, x: Any, alpha: Any = 1.0, scale: Any = 1.0, input_scale: Any = 1.0
) -> SSAValue:
    v = _float(ctx, x)
    return _elu_form(ctx, v, *(float(ctx.const(a)) for a in (alpha, scale, input_scale)))


@register(F.elu, "elu", "elu_")
def _elu(ctx: Importer, x: Any, alpha: Any = 1.0, inplace: Any = False) -> SSAValue:
    return _elu_form(ctx, _float(ctx, x), float(ctx.const(alpha)), 1.0, 1.0)


@register_aten(A.selu, A.selu_)
@register(F.selu, torch.selu, "selu", "selu_")
def _selu(ctx: Importer, x: Any, inplace: Any = False) -> SSAValue:
    return _elu_form(ctx, _float(ctx, x), _SELU_ALPHA, _SELU_SCALE, 1.0)


@register_aten(A.celu, A.celu_)
@register(F.celu, torch.celu, "celu", "celu_")
def _celu(ctx: Importer, x: Any, alpha: Any = 1.0, inplace: Any = False) -> SSAValue:
    a = float(ctx.const(alpha))
    if a == 0.0:
        raise NotMapped("celu with alpha 0 (eager raises)")
    return _elu_form(ctx, _float(ctx, x), a, 1.0, 1.0 / a)


@register_aten(A.softplus)
@register(F.softplus)
def _softplus(ctx: Importer, x: Any, beta: Any = 1.0, threshold: Any = 20.0) -> SSAValue:
    v = _float(ctx, x)
    b, t = float(ctx.const(beta)), float(ctx.const(threshold))
    scaled = v if b == 1.0 else emit(ctx, aten.MulOp, v, float_constant(ctx, b))
    soft = emit(ctx, aten.Log1pOp, emit(ctx, aten.ExpOp, scaled))
    if b != 1.0:
        soft = emit(ctx, aten.DivOp, soft, float_constant(ctx, b))
    return emit(ctx, aten.WhereOp, emit(ctx, aten.GtOp, scaled, float_constant(ctx, t)), v, soft)


@register_aten(A.mish, A.mish_)
@register(F.mish)
def _mish(ctx: Importer, x: Any, inplace: Any = False) -> SSAValue:
    v = _float(ctx, x)
    soft = emit(ctx, aten.Log1pOp, emit(ctx, aten.ExpOp, v))
    return emit(ctx, aten.MulOp, v, emit(ctx, aten.TanhOp, soft))


@register(F.logsigmoid)
def _logsigmoid(ctx: Importer, x: Any) -> SSAValue:
    v = _float(ctx, x)
    low = _clamp(ctx, v, None, 0.0)
    tail = emit(ctx, aten.Log1pOp, emit(ctx, aten.ExpOp, emit(ctx, aten.NegOp, emit(ctx, aten.AbsOp, v))))
    return emit(ctx, aten.SubOp, low, tail)


def _trunc_of(ctx: Importer, v: SSAValue) -> SSAValue:
    return emit(ctx, aten.DivOp, v, float_constant(ctx, 1.0), rounding_mode=StringAttr("trunc"))


@register_aten(A.trunc, A.trunc_, A.fix)
@register(torch.trunc, torch.fix, "trunc", "trunc_", "fix")
def _trunc(ctx: Importer, x: Any) -> SSAValue:
    return _trunc_of(ctx, _float(ctx, x))


def _step_from_trunc(up: bool) -> Any:
    """floor (ceil): trunc(x), one lower (higher) where x is below (above) it."""

    def handle(ctx: Importer, x: Any) -> SSAValue:
        v = _float(ctx, x)
        t = _trunc_of(ctx, v)
        off = emit(ctx, aten.GtOp if up else aten.LtOp, v, t)
        stepped = emit(ctx, aten.AddOp if up else aten.SubOp, t, float_constant(ctx, 1.0))
        return emit(ctx, aten.WhereOp, off, stepped, t)

    return handle


register_aten(A.floor, A.floor_)(
    register(torch.floor, "floor", "floor_")(_step_from_trunc(up=False))
)
register_aten(A.ceil, A.ceil_)(
    register(torch.ceil, "ceil", "ceil_")(_step_from_trunc(up=True))
)


@register_aten(A.frac, A.frac_)
@register(torch.frac, "frac", "frac_")
def _frac(ctx: Importer, x: Any) -> SSAValue:
    v = _float(ctx, x)
    return emit(ctx, aten.SubOp, v, _trunc_of(ctx, v))


@register(torch.clamp_min, "clamp_min", "clamp_min_")
def _clamp_min(ctx: Importer, x: Any, min: Any) -> SSAValue:
    return _clamp_handler(ctx, x, min, None)


@register(torch.clamp_max, "clamp_max", "clamp_max_")
def _clamp_max(ctx: Importer, x: Any, max: Any) -> SSAValue:
    return _clamp_handler(ctx, x, None, max)


# ------------------------------------------------- their backward ops (AOTAutograd)


@register_aten(A.hardtanh_backward)
def _hardtanh_backward(ctx: Importer, grad: Any, x: Any, min_val: Any, max_val: Any) -> SSAValue:
    """(x <= min || x >= max) ? 0 : grad."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    lo, hi = float_constant(ctx, ctx.const(min_val)), float_constant(ctx, ctx.const(max_val))
    out = emit(ctx, aten.LogicalOrOp, emit(ctx, aten.LeOp, v, lo), emit(ctx, aten.GeOp, v, hi))
    return emit(ctx, aten.WhereOp, out, ctx.constant(0), g)


@register_aten(A.hardsigmoid_backward)
def _hardsigmoid_backward(ctx: Importer, grad: Any, x: Any) -> SSAValue:
    """(-3 < x < 3) ? grad * (1/6) : 0."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    inside = emit(ctx, aten.LogicalAndOp, emit(ctx, aten.GtOp, v, float_constant(ctx, -3.0)), emit(ctx, aten.LtOp, v, float_constant(ctx, 3.0)))
    return emit(ctx, aten.WhereOp, inside, emit(ctx, aten.MulOp, g, float_constant(ctx, 1.0 / 6.0)), ctx.constant(0))


@register_aten(A.hardswish_backward)
def _hardswish_backward(ctx: Importer, grad: Any, x: Any) -> SSAValue:
    """x < -3 ? 0 : x <= 3 ? grad * (x / 3 + 0.5) : grad."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    slope = emit(ctx, aten.AddOp, emit(ctx, aten.DivOp, v, float_constant(ctx, 3.0)), float_constant(ctx, 0.5))
    mid = emit(ctx, aten.WhereOp, emit(ctx, aten.LeOp, v, float_constant(ctx, 3.0)), emit(ctx, aten.MulOp, g, slope), g)
    return emit(ctx, aten.WhereOp, emit(ctx, aten.LtOp, v, float_constant(ctx, -3.0)), ctx.constant(0), mid)


@register_aten(A.elu_backward)
def _elu_backward(
    ctx: Importer, grad: Any, alpha: Any, scale: Any, input_scale: Any, is_result: Any, y: Any
) -> SSAValue:
    """y <= 0 ? grad * input_scale * (from the result: y + alpha * scale; from
    the input: alpha * scale * exp(y * input_scale)) : grad * scale."""
    g, v = ctx.tensor(grad), _float(ctx, y)
    a, s, i = (float(ctx.const(c)) for c in (alpha, scale, input_scale))
    if ctx.const(is_result):
        neg = emit(ctx, aten.AddOp, v, float_constant(ctx, a * s))
    else:
        neg = emit(ctx, aten.MulOp, float_constant(ctx, a * s), emit(ctx, aten.ExpOp, emit(ctx, aten.MulOp, v, float_constant(ctx, i))))
    neg = emit(ctx, aten.MulOp, emit(ctx, aten.MulOp, g, float_constant(ctx, i)), neg)
    return emit(ctx, aten.WhereOp, emit(ctx, aten.LeOp, v, float_constant(ctx, 0.0)), neg, emit(ctx, aten.MulOp, g, float_constant(ctx, s)))


@register_aten(A.softplus_backward)
def _softplus_backward(ctx: Importer, grad: Any, x: Any, beta: Any, threshold: Any) -> SSAValue:
    """z = exp(x * beta): x * beta > threshold ? grad : grad * z / (z + 1)."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    xb = emit(ctx, aten.MulOp, v, float_constant(ctx, ctx.const(beta)))
    z = emit(ctx, aten.ExpOp, xb)
    soft = emit(ctx, aten.DivOp, emit(ctx, aten.MulOp, g, z), emit(ctx, aten.AddOp, z, float_constant(ctx, 1.0)))
    return emit(ctx, aten.WhereOp, emit(ctx, aten.GtOp, xb, float_constant(ctx, ctx.const(threshold))), g, soft)


@register_aten(A.mish_backward)
def _mish_backward(ctx: Importer, grad: Any, x: Any) -> SSAValue:
    """t = tanh(softplus(x)): grad * (t + x * sigmoid(x) * (1 - t * t))."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    t = emit(ctx, aten.TanhOp, emit(ctx, aten.Log1pOp, emit(ctx, aten.ExpOp, v)))
    one_minus = emit(ctx, aten.SubOp, float_constant(ctx, 1.0), emit(ctx, aten.MulOp, t, t))
    inner = emit(ctx, aten.MulOp, emit(ctx, aten.MulOp, v, emit(ctx, aten.SigmoidOp, v)), one_minus)
    return emit(ctx, aten.MulOp, g, emit(ctx, aten.AddOp, t, inner))


def _module(fn: Any, *attrs: str) -> Any:
    """A handler for a module calling `fn` with the module's attributes `attrs`."""

    def handle(ctx: Importer, mod: nn.Module, x: Any) -> SSAValue:
        return fn(ctx, x, *(getattr(mod, a) for a in attrs))

    return handle


register(nn.Hardtanh)(_module(_hardtanh, "min_val", "max_val"))
register(nn.ReLU6)(_module(_relu6))
register(nn.Hardsigmoid)(_module(_hardsigmoid))
register(nn.Hardswish)(_module(_hardswish))
register(nn.ELU)(_module(_elu, "alpha"))
register(nn.SELU)(_module(_selu))
register(nn.CELU)(_module(_celu, "alpha"))
register(nn.Softplus)(_module(_softplus, "beta", "threshold"))
register(nn.Mish)(_module(_mish))
register(nn.LogSigmoid)(_module(_logsigmoid))
