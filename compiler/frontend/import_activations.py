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

from typing import Any

import torch
import torch.nn.functional as F
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend.aten_table import _c, _entry, _op
from fusec.frontend.importer import _clamp as _clamp_handler
from fusec.frontend.importer import _Importer, _NotMapped, _register
from torch import nn
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

A = torch.ops.aten

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _float(ctx: _Importer, x: Any) -> SSAValue:
    """The tensor `x`, which must be floating for the written-out form."""
    v = ctx.tensor(x)
    if inf.element_type(v.type) not in (inf.F16, inf.BF16, inf.F32, inf.F64):
        raise _NotMapped("the written-out form is for floating tensors")
    return v


def _clamp(ctx: _Importer, v: SSAValue, lo: float | None, hi: float | None) -> SSAValue:
    num = aten.number_attr
    lo_attr = None if lo is None else num(float(lo))
    hi_attr = None if hi is None else num(float(hi))
    return _op(ctx, aten.ClampOp, v, min=lo_attr, max=hi_attr)


def _relu6_of_shifted(ctx: _Importer, v: SSAValue) -> SSAValue:
    """clamp(x + 3, 0, 6): hardsigmoid's and hardswish's common part."""
    return _clamp(ctx, _op(ctx, aten.AddOp, v, _c(ctx, 3.0)), 0.0, 6.0)


@_entry(A.hardtanh.default, A.hardtanh_.default)
@_register(F.hardtanh, "hardtanh", "hardtanh_")
def _hardtanh(
    ctx: _Importer, x: Any, min_val: Any = -1.0, max_val: Any = 1.0, inplace: Any = False
) -> SSAValue:
    return _clamp(ctx, _float(ctx, x), ctx.const(min_val), ctx.const(max_val))


@_register(F.relu6)
def _relu6(ctx: _Importer, x: Any, inplace: Any = False) -> SSAValue:
    return _clamp(ctx, _float(ctx, x), 0.0, 6.0)


@_entry(A.hardsigmoid.default, A.hardsigmoid_.default)
@_register(F.hardsigmoid)
def _hardsigmoid(ctx: _Importer, x: Any, inplace: Any = False) -> SSAValue:
    v = _float(ctx, x)
    return _op(ctx, aten.DivOp, _relu6_of_shifted(ctx, v), _c(ctx, 6.0))


@_entry(A.hardswish.default, A.hardswish_.default)
@_register(F.hardswish)
def _hardswish(ctx: _Importer, x: Any, inplace: Any = False) -> SSAValue:
    v = _float(ctx, x)
    scaled = _op(ctx, aten.MulOp, v, _relu6_of_shifted(ctx, v))
    return _op(ctx, aten.DivOp, scaled, _c(ctx, 6.0))


def _elu_form(ctx: _Importer, v: SSAValue, alpha: float, scale: float, input_scale: float) -> SSAValue:
    """ATen's elu: x <= 0 ? expm1(x * input_scale) * alpha * scale : x * scale."""
    neg = _op(ctx, aten.Expm1Op, _op(ctx, aten.MulOp, v, _c(ctx, input_scale)))
    neg = _op(ctx, aten.MulOp, neg, _c(ctx, alpha * scale))
    pos = v if scale == 1.0 else _op(ctx, aten.MulOp, v, _c(ctx, scale))
    return _op(ctx, aten.WhereOp, _op(ctx, aten.LeOp, v, _c(ctx, 0.0)), neg, pos)


@_entry(A.elu.default, A.elu_.default)
def _aten_elu(
    ctx: _Importer, x: Any, alpha: Any = 1.0, scale: Any = 1.0, input_scale: Any = 1.0
) -> SSAValue:
    v = _float(ctx, x)
    return _elu_form(ctx, v, *(float(ctx.const(a)) for a in (alpha, scale, input_scale)))


@_register(F.elu, "elu", "elu_")
def _elu(ctx: _Importer, x: Any, alpha: Any = 1.0, inplace: Any = False) -> SSAValue:
    return _elu_form(ctx, _float(ctx, x), float(ctx.const(alpha)), 1.0, 1.0)


@_entry(A.selu.default, A.selu_.default)
@_register(F.selu, torch.selu, "selu", "selu_")
def _selu(ctx: _Importer, x: Any, inplace: Any = False) -> SSAValue:
    return _elu_form(ctx, _float(ctx, x), _SELU_ALPHA, _SELU_SCALE, 1.0)


@_entry(A.celu.default, A.celu_.default)
@_register(F.celu, torch.celu, "celu", "celu_")
def _celu(ctx: _Importer, x: Any, alpha: Any = 1.0, inplace: Any = False) -> SSAValue:
    a = float(ctx.const(alpha))
    if a == 0.0:
        raise _NotMapped("celu with alpha 0 (eager raises)")
    return _elu_form(ctx, _float(ctx, x), a, 1.0, 1.0 / a)


@_entry(A.softplus.default)
@_register(F.softplus)
def _softplus(ctx: _Importer, x: Any, beta: Any = 1.0, threshold: Any = 20.0) -> SSAValue:
    v = _float(ctx, x)
    b, t = float(ctx.const(beta)), float(ctx.const(threshold))
    scaled = v if b == 1.0 else _op(ctx, aten.MulOp, v, _c(ctx, b))
    soft = _op(ctx, aten.Log1pOp, _op(ctx, aten.ExpOp, scaled))
    if b != 1.0:
        soft = _op(ctx, aten.DivOp, soft, _c(ctx, b))
    return _op(ctx, aten.WhereOp, _op(ctx, aten.GtOp, scaled, _c(ctx, t)), v, soft)


@_entry(A.mish.default, A.mish_.default)
@_register(F.mish)
def _mish(ctx: _Importer, x: Any, inplace: Any = False) -> SSAValue:
    v = _float(ctx, x)
    soft = _op(ctx, aten.Log1pOp, _op(ctx, aten.ExpOp, v))
    return _op(ctx, aten.MulOp, v, _op(ctx, aten.TanhOp, soft))


@_register(F.logsigmoid)
def _logsigmoid(ctx: _Importer, x: Any) -> SSAValue:
    v = _float(ctx, x)
    low = _clamp(ctx, v, None, 0.0)
    tail = _op(ctx, aten.Log1pOp, _op(ctx, aten.ExpOp, _op(ctx, aten.NegOp, _op(ctx, aten.AbsOp, v))))
    return _op(ctx, aten.SubOp, low, tail)


def _trunc_of(ctx: _Importer, v: SSAValue) -> SSAValue:
    return _op(ctx, aten.DivOp, v, _c(ctx, 1.0), rounding_mode=StringAttr("trunc"))


@_entry(A.trunc.default, A.trunc_.default, A.fix.default)
@_register(torch.trunc, torch.fix, "trunc", "trunc_", "fix")
def _trunc(ctx: _Importer, x: Any) -> SSAValue:
    return _trunc_of(ctx, _float(ctx, x))


def _step_from_trunc(up: bool) -> Any:
    """floor (ceil): trunc(x), one lower (higher) where x is below (above) it."""

    def handle(ctx: _Importer, x: Any) -> SSAValue:
        v = _float(ctx, x)
        t = _trunc_of(ctx, v)
        off = _op(ctx, aten.GtOp if up else aten.LtOp, v, t)
        stepped = _op(ctx, aten.AddOp if up else aten.SubOp, t, _c(ctx, 1.0))
        return _op(ctx, aten.WhereOp, off, stepped, t)

    return handle


_entry(A.floor.default, A.floor_.default)(
    _register(torch.floor, "floor", "floor_")(_step_from_trunc(up=False))
)
_entry(A.ceil.default, A.ceil_.default)(
    _register(torch.ceil, "ceil", "ceil_")(_step_from_trunc(up=True))
)


@_entry(A.frac.default, A.frac_.default)
@_register(torch.frac, "frac", "frac_")
def _frac(ctx: _Importer, x: Any) -> SSAValue:
    v = _float(ctx, x)
    return _op(ctx, aten.SubOp, v, _trunc_of(ctx, v))


@_register(torch.clamp_min, "clamp_min", "clamp_min_")
def _clamp_min(ctx: _Importer, x: Any, min: Any) -> SSAValue:
    return _clamp_handler(ctx, x, min, None)


@_register(torch.clamp_max, "clamp_max", "clamp_max_")
def _clamp_max(ctx: _Importer, x: Any, max: Any) -> SSAValue:
    return _clamp_handler(ctx, x, None, max)


# ------------------------------------------------- their backward ops (AOTAutograd)


@_entry(A.hardtanh_backward.default)
def _hardtanh_backward(ctx: _Importer, grad: Any, x: Any, min_val: Any, max_val: Any) -> SSAValue:
    """(x <= min || x >= max) ? 0 : grad."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    lo, hi = _c(ctx, ctx.const(min_val)), _c(ctx, ctx.const(max_val))
    out = _op(ctx, aten.LogicalOrOp, _op(ctx, aten.LeOp, v, lo), _op(ctx, aten.GeOp, v, hi))
    return _op(ctx, aten.WhereOp, out, ctx.constant(0), g)


@_entry(A.hardsigmoid_backward.default)
def _hardsigmoid_backward(ctx: _Importer, grad: Any, x: Any) -> SSAValue:
    """(-3 < x < 3) ? grad * (1/6) : 0."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    inside = _op(ctx, aten.LogicalAndOp, _op(ctx, aten.GtOp, v, _c(ctx, -3.0)), _op(ctx, aten.LtOp, v, _c(ctx, 3.0)))
    return _op(ctx, aten.WhereOp, inside, _op(ctx, aten.MulOp, g, _c(ctx, 1.0 / 6.0)), ctx.constant(0))


@_entry(A.hardswish_backward.default)
def _hardswish_backward(ctx: _Importer, grad: Any, x: Any) -> SSAValue:
    """x < -3 ? 0 : x <= 3 ? grad * (x / 3 + 0.5) : grad."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    slope = _op(ctx, aten.AddOp, _op(ctx, aten.DivOp, v, _c(ctx, 3.0)), _c(ctx, 0.5))
    mid = _op(ctx, aten.WhereOp, _op(ctx, aten.LeOp, v, _c(ctx, 3.0)), _op(ctx, aten.MulOp, g, slope), g)
    return _op(ctx, aten.WhereOp, _op(ctx, aten.LtOp, v, _c(ctx, -3.0)), ctx.constant(0), mid)


@_entry(A.elu_backward.default)
def _elu_backward(
    ctx: _Importer, grad: Any, alpha: Any, scale: Any, input_scale: Any, is_result: Any, y: Any
) -> SSAValue:
    """y <= 0 ? grad * input_scale * (from the result: y + alpha * scale; from
    the input: alpha * scale * exp(y * input_scale)) : grad * scale."""
    g, v = ctx.tensor(grad), _float(ctx, y)
    a, s, i = (float(ctx.const(c)) for c in (alpha, scale, input_scale))
    if ctx.const(is_result):
        neg = _op(ctx, aten.AddOp, v, _c(ctx, a * s))
    else:
        neg = _op(ctx, aten.MulOp, _c(ctx, a * s), _op(ctx, aten.ExpOp, _op(ctx, aten.MulOp, v, _c(ctx, i))))
    neg = _op(ctx, aten.MulOp, _op(ctx, aten.MulOp, g, _c(ctx, i)), neg)
    return _op(ctx, aten.WhereOp, _op(ctx, aten.LeOp, v, _c(ctx, 0.0)), neg, _op(ctx, aten.MulOp, g, _c(ctx, s)))


@_entry(A.softplus_backward.default)
def _softplus_backward(ctx: _Importer, grad: Any, x: Any, beta: Any, threshold: Any) -> SSAValue:
    """z = exp(x * beta): x * beta > threshold ? grad : grad * z / (z + 1)."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    xb = _op(ctx, aten.MulOp, v, _c(ctx, ctx.const(beta)))
    z = _op(ctx, aten.ExpOp, xb)
    soft = _op(ctx, aten.DivOp, _op(ctx, aten.MulOp, g, z), _op(ctx, aten.AddOp, z, _c(ctx, 1.0)))
    return _op(ctx, aten.WhereOp, _op(ctx, aten.GtOp, xb, _c(ctx, ctx.const(threshold))), g, soft)


@_entry(A.mish_backward.default)
def _mish_backward(ctx: _Importer, grad: Any, x: Any) -> SSAValue:
    """t = tanh(softplus(x)): grad * (t + x * sigmoid(x) * (1 - t * t))."""
    g, v = ctx.tensor(grad), _float(ctx, x)
    t = _op(ctx, aten.TanhOp, _op(ctx, aten.Log1pOp, _op(ctx, aten.ExpOp, v)))
    one_minus = _op(ctx, aten.SubOp, _c(ctx, 1.0), _op(ctx, aten.MulOp, t, t))
    inner = _op(ctx, aten.MulOp, _op(ctx, aten.MulOp, v, _op(ctx, aten.SigmoidOp, v)), one_minus)
    return _op(ctx, aten.MulOp, g, _op(ctx, aten.AddOp, t, inner))


def _module(fn: Any, *attrs: str) -> Any:
    """A handler for a module calling `fn` with the module's attributes `attrs`."""

    def handle(ctx: _Importer, mod: nn.Module, x: Any) -> SSAValue:
        return fn(ctx, x, *(getattr(mod, a) for a in attrs))

    return handle


_register(nn.Hardtanh)(_module(_hardtanh, "min_val", "max_val"))
_register(nn.ReLU6)(_module(_relu6))
_register(nn.Hardsigmoid)(_module(_hardsigmoid))
_register(nn.Hardswish)(_module(_hardswish))
_register(nn.ELU)(_module(_elu, "alpha"))
_register(nn.SELU)(_module(_selu))
_register(nn.CELU)(_module(_celu, "alpha"))
_register(nn.Softplus)(_module(_softplus, "beta", "threshold"))
_register(nn.Mish)(_module(_mish))
_register(nn.LogSigmoid)(_module(_logsigmoid))
