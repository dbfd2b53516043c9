"""torch-level import of reductions and normalizations: `amax`/`amin`/`var`/`std`,
softmax and log-softmax (functions, methods, modules), `F.layer_norm`/`nn.LayerNorm`,
`F.rms_norm`/`nn.RMSNorm`, eval-mode `batch_norm` and dropout, `F.cross_entropy`.

The `build_*` functions take SSA operands and Python attributes and return the new
ops and the result, so an ATen-level import table can build the same IR
(`aten._softmax` -> `build_softmax`, `aten.native_layer_norm` -> `build_layer_norm`,
`aten.amax` -> `build_reduction(aten.AmaxOp, ...)`, ...). Composite ops
(`aten.softmax`, `aten.layer_norm`) stay whole until `decompose-reductions`, so they
still run as one PyTorch call where nothing fuses; the others are written out here
as reductions and pointwise ops:

    F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-5)   (x: [N, C, L])
    ->
    %m = aten.unsqueeze %rm dim = 1 ; %v = aten.unsqueeze %rv dim = 1 ; ...
    %r = aten.add (aten.mul (aten.mul (aten.sub %x, %m), aten.rsqrt (%v + eps)), %w), %b
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from fusec.codegen.torch_ops import DTYPES_OF_TORCH
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend.imported import NotMapped
from fusec.frontend.registry import register
from torch import nn
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer

Built = tuple[list[Operation], SSAValue]
"""New ops, in order, and the value they compute."""


def _shape(v: SSAValue) -> list[int]:
    t = v.type
    assert isinstance(t, TensorType)
    return list(t.get_shape())


def build_reduction(
    cls: type[aten.ReductionOp],
    x: SSAValue,
    dims: Sequence[int] | None,
    keepdim: bool = False,
    dtype: Attribute | None = None,
    correction: float | None = None,
) -> Built:
    """`cls` (sum, mean, amax, amin, var, std) over `dims` (None or []: all dims)."""
    shape = _shape(x)
    rank = len(shape)
    listed = [inf.normalize_dim(d, max(rank, 1)) for d in dims or []]
    reduced = set(listed) if listed else set(range(rank))
    out = [1 if i in reduced else s for i, s in enumerate(shape) if keepdim or i not in reduced]
    props: dict[str, Attribute] = {}
    if listed:
        props["dims"] = DenseArrayBase.from_list(i64, list(dims or []))
    if keepdim:
        props["keepdim"] = IntegerAttr(1, inf.BOOL)
    if correction is not None:
        props["correction"] = aten.number_attr(correction)
    probe = cls.create(properties=props)
    et = dtype or probe.default_dtype(x.type)  # type: ignore[arg-type]
    op = cls.create(operands=[x], properties=props, result_types=[TensorType(et, out)])
    return [op], op.results[0]


def build_softmax(
    x: SSAValue, dim: int, dtype: Attribute | None = None, log: bool = False
) -> Built:
    """`aten.softmax` / `aten.log_softmax` (the ATen `_softmax(x, dim, half_to_float)`
    passes `dtype=f32` when `half_to_float`)."""
    op = (aten.LogSoftmaxOp if log else aten.SoftmaxOp)(x, dim, dtype)
    return [op], op.results[0]


def build_softmax_backward(grad: SSAValue, output: SSAValue, dim: int, log: bool = False) -> Built:
    """The gradient of softmax (`aten._softmax_backward_data`):
    `out * (grad - sum(grad * out, dim))`; of log-softmax
    (`aten._log_softmax_backward_data`): `grad - exp(out) * sum(grad, dim)`.
    One reduction and pointwise ops: one group."""
    d = inf.normalize_dim(dim, max(len(_shape(output)), 1))
    ops: list[Operation] = []
    if log:
        red, total = build_reduction(aten.SumOp, grad, [d], keepdim=True)
        ops += red
        ops += [e := aten.ExpOp(output), m := aten.MulOp(e.results[0], total)]
        ops.append(r := aten.SubOp(grad, m.results[0]))
        return ops, r.results[0]
    ops.append(go := aten.MulOp(grad, output))
    red, total = build_reduction(aten.SumOp, go.results[0], [d], keepdim=True)
    ops += red
    ops += [diff := aten.SubOp(grad, total), r := aten.MulOp(output, diff.results[0])]
    return ops, r.results[0]


def build_layer_norm(
    x: SSAValue,
    normalized_shape: Sequence[int],
    weight: SSAValue | None,
    bias: SSAValue | None,
    eps: float,
) -> Built:
    op = aten.LayerNormOp(x, normalized_shape, weight, bias, eps)
    return [op], op.results[0]


def build_native_layer_norm(
    x: SSAValue,
    normalized_shape: Sequence[int],
    weight: SSAValue | None,
    bias: SSAValue | None,
    eps: float,
) -> tuple[list[Operation], tuple[SSAValue, SSAValue, SSAValue]]:
    """`aten.native_layer_norm`: (output, mean, rstd), the statistics with the
    normalized dims kept as 1, written out as reductions + pointwise (one group)."""
    rank = len(_shape(x))
    dims = list(range(rank - len(normalized_shape), rank))
    ops: list[Operation] = []
    red, mean = build_reduction(aten.MeanOp, x, dims, keepdim=True)
    ops += red
    ops += [c := aten.SubOp(x, mean), sq := aten.MulOp(c.results[0], c.results[0])]
    red, var = build_reduction(aten.MeanOp, sq.results[0], dims, keepdim=True)
    ops += red
    ops += [e := _scalar(eps), a := aten.AddOp(var, e.result), r := aten.RsqrtOp(a.results[0])]
    ops.append(y := aten.MulOp(c.results[0], r.results[0]))
    out = y.results[0]
    if weight is not None:
        ops.append(w := aten.MulOp(out, weight))
        out = w.results[0]
    if bias is not None:
        ops.append(b := aten.AddOp(out, bias))
        out = b.results[0]
    return ops, (out, mean, r.results[0])


def build_layer_norm_backward(
    grad: SSAValue,
    x: SSAValue,
    normalized_shape: Sequence[int],
    mean: SSAValue,
    rstd: SSAValue,
    weight: SSAValue | None,
    output_mask: Sequence[bool] = (True, True, True),
) -> tuple[list[Operation], tuple[SSAValue | None, SSAValue | None, SSAValue | None]]:
    """`aten.native_layer_norm_backward`: (grad_input, grad_weight, grad_bias), each
    None where `output_mask` leaves it out. With `xhat = (x - mean) * rstd` and
    `gw = grad * weight`: `grad_input = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))`
    over the normalized dims (one group), and the parameter gradients are sums over
    the leading dims of `grad * xhat` and `grad` (another group: bias-gradient sums)."""
    rank = len(_shape(x))
    norm = list(range(rank - len(normalized_shape), rank))
    lead = list(range(rank - len(normalized_shape)))
    ops: list[Operation] = []
    ops += [c := aten.SubOp(x, mean), xh := aten.MulOp(c.results[0], rstd)]
    xhat = xh.results[0]
    gx = gwt = gb = None
    if output_mask[0]:
        gw = grad
        if weight is not None:
            ops.append(m := aten.MulOp(grad, weight))
            gw = m.results[0]
        red, mean_gw = build_reduction(aten.MeanOp, gw, norm, keepdim=True)
        ops += red
        ops.append(p := aten.MulOp(gw, xhat))
        red, mean_p = build_reduction(aten.MeanOp, p.results[0], norm, keepdim=True)
        ops += red
        ops += [
            d1 := aten.SubOp(gw, mean_gw),
            t := aten.MulOp(xhat, mean_p),
            d2 := aten.SubOp(d1.results[0], t.results[0]),
            r := aten.MulOp(rstd, d2.results[0]),
        ]
        gx = r.results[0]
    if output_mask[1] and weight is not None:
        ops.append(gx_hat := aten.MulOp(grad, xhat))
        red, gwt = build_reduction(aten.SumOp, gx_hat.results[0], lead or None)
        ops += red
    if output_mask[2]:
        red, gb = build_reduction(aten.SumOp, grad, lead or None)
        ops += red
    return ops, (gx, gwt, gb)


def _unsqueeze(v: SSAValue, dim: int) -> Operation:
    shape = _shape(v)
    shape.insert(dim, 1)
    return aten.UnsqueezeOp.create(
        operands=[v],
        properties={"dim": IntegerAttr(dim, inf.I64)},
        result_types=[TensorType(inf.element_type(v.type), shape)],
    )


def _scalar(value: float) -> ConstantOp:
    return ConstantOp(aten.number_attr(float(value)))


def build_rms_norm(x: SSAValue, rank: int, weight: SSAValue | None, eps: float) -> Built:
    """`x * rsqrt(mean(x * x, trailing rank dims) + eps) [* weight]`."""
    shape = _shape(x)
    dims = list(range(len(shape) - rank, len(shape)))
    ops: list[Operation] = [sq := aten.MulOp(x, x)]
    red, mean = build_reduction(aten.MeanOp, sq.results[0], dims, keepdim=True)
    ops += red
    ops += [e := _scalar(eps), a := aten.AddOp(mean, e.result), r := aten.RsqrtOp(a.results[0])]
    ops.append(y := aten.MulOp(x, r.results[0]))
    result = y.results[0]
    if weight is not None:
        ops.append(w := aten.MulOp(result, weight))
        result = w.results[0]
    return ops, result


def build_batch_norm_eval(
    x: SSAValue,
    running_mean: SSAValue,
    running_var: SSAValue,
    weight: SSAValue | None,
    bias: SSAValue | None,
    eps: float,
) -> Built:
    """Inference batch norm over channel dim 1: pointwise, with the [C] statistics
    unsqueezed to broadcast (`aten._native_batch_norm_legit_no_training`)."""
    rank = len(_shape(x))
    ops: list[Operation] = []

    def channel(v: SSAValue) -> SSAValue:
        for _ in range(rank - 2):
            ops.append(u := _unsqueeze(v, len(_shape(v))))
            v = u.results[0]
        return v

    ops.append(c := aten.SubOp(x, channel(running_mean)))
    var = channel(running_var)
    ops += [e := _scalar(eps), a := aten.AddOp(var, e.result), r := aten.RsqrtOp(a.results[0])]
    ops.append(y := aten.MulOp(c.results[0], r.results[0]))
    result = y.results[0]
    if weight is not None:
        ops.append(w := aten.MulOp(result, channel(weight)))
        result = w.results[0]
    if bias is not None:
        ops.append(b := aten.AddOp(result, channel(bias)))
        result = b.results[0]
    if inf.element_type(result.type) != inf.element_type(x.type):
        ops.append(t := aten.ToOp(result, inf.element_type(x.type)))
        result = t.results[0]
    return ops, result


def build_cross_entropy(
    logits: SSAValue, target: SSAValue, ignore_index: int = -100, reduction: str = "mean"
) -> Built:
    """Cross-entropy of [N, C] logits and [N] class indices: the log-sum-exp of each
    row (one group), the target's logit picked by `aten.gather`, and the masked
    mean or sum of `lse - picked` (another group)."""
    ops: list[Operation] = []
    dt = inf.element_type(logits.type)

    def add(op: Operation) -> SSAValue:
        ops.append(op)
        return op.results[0]

    red, m = build_reduction(aten.AmaxOp, logits, [1], keepdim=True)
    ops += red
    shifted = add(aten.SubOp(logits, m))
    red, s = build_reduction(aten.SumOp, add(aten.ExpOp(shifted)), [1], keepdim=True)
    ops += red
    lse = add(aten.AddOp(add(aten.LogOp(s)), m))
    ignore = add(ConstantOp(aten.number_attr(int(ignore_index))))
    keep = add(aten.NeOp(target, ignore))
    zero = add(ConstantOp(aten.number_attr(0)))
    safe = add(aten.WhereOp(keep, target, zero))
    picked = add(aten.GatherOp(logits, 1, add(_unsqueeze(safe, 1))))
    loss = add(aten.SubOp(lse, picked))
    keep_col = add(_unsqueeze(keep, 1))
    fzero = add(ConstantOp(aten.number_attr(0.0)))
    loss = add(aten.WhereOp(keep_col, loss, fzero))
    if inf.element_type(loss.type) != dt:
        loss = add(aten.ToOp(loss, dt))
    if reduction == "none":
        return ops, add(aten.SqueezeOp.create(operands=[loss], properties={
            "dim": IntegerAttr(1, inf.I64)}, result_types=[TensorType(dt, _shape(target))]))  # fmt: skip
    red, total = build_reduction(aten.SumOp, loss, None)
    ops += red
    if reduction == "sum":
        return ops, total
    red, count = build_reduction(aten.SumOp, add(aten.ToOp(keep, dt)), None)
    ops += red
    return ops, add(aten.DivOp(total, count))


def emit_built(ctx: Importer, built: Built) -> SSAValue:
    ops, result = built
    for op in ops:
        ctx.add_op(op)
    return result


def result_dtype(ctx: Importer, dtype: Any) -> Attribute | None:
    dt = ctx.const(dtype)
    if dt is None:
        return None
    if not isinstance(dt, torch.dtype) or dt not in DTYPES_OF_TORCH:
        raise NotMapped("dtype")
    return DTYPES_OF_TORCH[dt]


def _dim_list(d: Any) -> list[int] | None:
    if d is None:
        return None
    return [d] if isinstance(d, int) else list(d)


# ---------------------------------------------------------------------- handlers


def extremum(cls: type[aten.ReductionOp]) -> Any:
    def handle(ctx: Importer, x: Any, dim: Any = (), keepdim: Any = False) -> SSAValue:
        dims = _dim_list(ctx.const(dim))
        return emit_built(ctx, build_reduction(cls, ctx.tensor(x), dims, bool(ctx.const(keepdim))))

    return handle


register(torch.amax, "amax")(extremum(aten.AmaxOp))
register(torch.amin, "amin")(extremum(aten.AminOp))


def variance(cls: type[aten.ReductionOp]) -> Any:
    def handle(
        ctx: Importer, x: Any, *args: Any, keepdim: Any = False, correction: Any = None,
        unbiased: Any = None, dim: Any = None,
    ) -> SSAValue:  # fmt: skip
        rest = list(ctx.const(args))
        if rest and isinstance(rest[0], bool):  # var(x, unbiased)
            unbiased = rest.pop(0)
        elif rest:
            dim = rest.pop(0)
            if rest:  # var(x, dim, unbiased, keepdim)
                unbiased = rest.pop(0)
            if rest:
                keepdim = rest.pop(0)
        corr = ctx.const(correction)
        if corr is None:
            ub = ctx.const(unbiased)
            corr = 1 if ub is None or ub else 0
        dims = _dim_list(ctx.const(dim))
        v = ctx.tensor(x)
        built = build_reduction(cls, v, dims, bool(ctx.const(keepdim)), correction=corr)
        return emit_built(ctx, built)

    return handle


register(torch.var, "var")(variance(aten.VarOp))
register(torch.std, "std")(variance(aten.StdOp))


def _softmax(log: bool) -> Any:
    def handle(
        ctx: Importer, x: Any, dim: Any = None, _stacklevel: Any = 3, dtype: Any = None
    ) -> SSAValue:
        d = ctx.const(dim)
        if isinstance(ctx.const(_stacklevel), torch.dtype):  # torch.softmax(x, dim, dtype)
            dtype = _stacklevel
        if not isinstance(d, int):
            raise NotMapped("softmax without a dim")
        return emit_built(ctx, build_softmax(ctx.tensor(x), d, result_dtype(ctx, dtype), log))

    return handle


register(torch.softmax, F.softmax, "softmax")(_softmax(False))
register(torch.log_softmax, F.log_softmax, "log_softmax")(_softmax(True))


def softmax_backward(log: bool) -> Any:
    def handle(ctx: Importer, grad: Any, output: Any, dim: Any, input_dtype: Any) -> SSAValue:
        g, out = ctx.tensor(grad), ctx.tensor(output)
        if inf.element_type(g.type) != inf.element_type(out.type):
            raise NotMapped("softmax backward across dtypes")
        return emit_built(ctx, build_softmax_backward(g, out, int(ctx.const(dim)), log))

    return handle


register(torch._softmax_backward_data)(softmax_backward(False))
register(torch._log_softmax_backward_data)(softmax_backward(True))


@register(torch._softmax, torch._log_softmax)
def _aten_softmax(ctx: Importer, x: Any, dim: Any, half_to_float: Any) -> SSAValue:
    """`aten._softmax(x, dim, half_to_float)`: a softmax, in f32 if `half_to_float`."""
    log = ctx.node.target is torch._log_softmax  # type: ignore[union-attr]
    dtype = inf.F32 if ctx.const(half_to_float) else None
    return emit_built(ctx, build_softmax(ctx.tensor(x), int(ctx.const(dim)), dtype, log))


@register(torch.native_layer_norm)
def native_layer_norm(
    ctx: Importer, x: Any, normalized_shape: Any, weight: Any, bias: Any, eps: Any
) -> tuple[SSAValue, SSAValue, SSAValue]:
    shape = list(ctx.const(normalized_shape))
    ops, results = build_native_layer_norm(
        ctx.tensor(x), shape, _optional(ctx, weight), _optional(ctx, bias), float(ctx.const(eps))
    )
    for op in ops:
        ctx.add_op(op)
    return results


@register(torch.ops.aten.native_layer_norm_backward,
           torch.ops.aten.native_layer_norm_backward.default)  # fmt: skip
def native_layer_norm_backward(
    ctx: Importer, grad: Any, x: Any, normalized_shape: Any, mean: Any, rstd: Any,
    weight: Any, bias: Any, output_mask: Any,
) -> tuple[SSAValue | None, ...]:  # fmt: skip
    mask = [bool(m) for m in ctx.const(output_mask)]
    if len(list(ctx.const(normalized_shape))) == len(_shape(ctx.tensor(x))):
        raise NotMapped("layer_norm backward over every dim")
    if mask[1] and weight is None:
        raise NotMapped("weight gradient without a weight")
    ops, results = build_layer_norm_backward(
        ctx.tensor(grad), ctx.tensor(x), list(ctx.const(normalized_shape)), ctx.tensor(mean),
        ctx.tensor(rstd), _optional(ctx, weight), mask,
    )  # fmt: skip
    for op in ops:
        ctx.add_op(op)
    return results


@register(nn.Softmax, nn.LogSoftmax)
def _softmax_module(ctx: Importer, mod: nn.Softmax | nn.LogSoftmax, x: Any) -> SSAValue:
    if mod.dim is None:
        raise NotMapped("softmax without a dim")
    return emit_built(ctx, build_softmax(ctx.tensor(x), mod.dim, None, isinstance(mod, nn.LogSoftmax)))


def _optional(ctx: Importer, v: Any) -> SSAValue | None:
    return None if v is None else ctx.tensor(v)


@register(F.layer_norm)
def layer_norm(
    ctx: Importer, x: Any, normalized_shape: Any, weight: Any = None, bias: Any = None,
    eps: Any = 1e-5,
) -> SSAValue:  # fmt: skip
    shape = ctx.const(normalized_shape)
    shape = [shape] if isinstance(shape, int) else list(shape)
    built = build_layer_norm(
        ctx.tensor(x), shape, _optional(ctx, weight), _optional(ctx, bias), float(ctx.const(eps))
    )
    return emit_built(ctx, built)


def _module_params(ctx: Importer, mod: nn.Module, *names: str) -> list[SSAValue | None]:
    path = str(ctx.node.target)  # type: ignore[union-attr]
    return [ctx.attr_operand(path, n, getattr(mod, n, None)) for n in names]


@register(nn.LayerNorm)
def _layer_norm_module(ctx: Importer, mod: nn.LayerNorm, x: Any) -> SSAValue:
    w, b = _module_params(ctx, mod, "weight", "bias")
    return emit_built(ctx, build_layer_norm(ctx.tensor(x), list(mod.normalized_shape), w, b, mod.eps))


def _rms_eps(x: SSAValue, eps: Any) -> float:
    if eps is not None:
        return float(eps)
    return float(torch.finfo(DTYPE_TO_TORCH[inf.element_type(x.type)]).eps)


DTYPE_TO_TORCH = {v: k for k, v in DTYPES_OF_TORCH.items()}

if hasattr(F, "rms_norm"):

    @register(F.rms_norm)
    def _rms_norm(
        ctx: Importer, x: Any, normalized_shape: Any, weight: Any = None, eps: Any = None
    ) -> SSAValue:
        shape = ctx.const(normalized_shape)
        rank = 1 if isinstance(shape, int) else len(shape)
        v = ctx.tensor(x)
        if not inf.is_float(inf.element_type(v.type)):
            raise NotMapped("rms_norm of integers")
        built = build_rms_norm(v, rank, _optional(ctx, weight), _rms_eps(v, ctx.const(eps)))
        return emit_built(ctx, built)


if hasattr(nn, "RMSNorm"):

    @register(nn.RMSNorm)
    def _rms_norm_module(ctx: Importer, mod: nn.RMSNorm, x: Any) -> SSAValue:
        (w,) = _module_params(ctx, mod, "weight")
        v = ctx.tensor(x)
        return emit_built(ctx, build_rms_norm(v, len(mod.normalized_shape), w, _rms_eps(v, mod.eps)))


@register(F.batch_norm)
def _batch_norm(
    ctx: Importer, x: Any, running_mean: Any, running_var: Any, weight: Any = None,
    bias: Any = None, training: Any = False, momentum: Any = 0.1, eps: Any = 1e-5,
) -> SSAValue:  # fmt: skip
    if ctx.const(training) or running_mean is None or running_var is None:
        raise NotMapped("batch_norm in training mode")
    v = ctx.tensor(x)
    if len(_shape(v)) < 2:
        raise NotMapped("batch_norm of a tensor without a channel dim")
    built = build_batch_norm_eval(
        v, ctx.tensor(running_mean), ctx.tensor(running_var), _optional(ctx, weight),
        _optional(ctx, bias), float(ctx.const(eps)),
    )  # fmt: skip
    return emit_built(ctx, built)


@register(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _batch_norm_module(ctx: Importer, mod: nn.modules.batchnorm._BatchNorm, x: Any) -> SSAValue:
    if mod.training or not mod.track_running_stats or mod.running_mean is None:
        raise NotMapped("batch_norm in training mode")
    rm, rv, w, b = _module_params(ctx, mod, "running_mean", "running_var", "weight", "bias")
    assert rm is not None and rv is not None
    v = ctx.tensor(x)
    if len(_shape(v)) < 2:
        raise NotMapped("batch_norm of a tensor without a channel dim")
    return emit_built(ctx, build_batch_norm_eval(v, rm, rv, w, b, mod.eps))


def aten_batch_norm(
    ctx: Importer, x: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
    training: Any, momentum: Any, eps: Any, cudnn_enabled: Any = True,
) -> SSAValue:  # fmt: skip
    """`aten.batch_norm.default` (torch.export's training IR): as `F.batch_norm`,
    whose arguments come in another order; training mode stays opaque."""
    return _batch_norm(ctx, x, running_mean, running_var, weight, bias, training, momentum, eps)


def native_batch_norm_no_training(
    ctx: Importer, x: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
    momentum: Any, eps: Any,
) -> tuple[SSAValue, SSAValue, SSAValue]:  # fmt: skip
    """`aten._native_batch_norm_legit_no_training` (functional ATen): the eval batch
    norm and the two saved statistics, which inference leaves empty (`[0]`; where
    PyTorch recorded others the types differ and the op stays opaque)."""
    y = _batch_norm(ctx, x, running_mean, running_var, weight, bias, False, momentum, eps)
    rm = ctx.tensor(running_mean)
    empty = [
        ctx.add_op(
            aten.NarrowOp.create(
                operands=[rm],
                properties={k: IntegerAttr(0, inf.I64) for k in ("dim", "start", "length")},
                result_types=[TensorType(inf.element_type(rm.type), [0])],
            )
        ).results[0]
        for _ in range(2)
    ]
    return y, empty[0], empty[1]


@register(F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, torch.dropout)
def _dropout(
    ctx: Importer, x: Any, p: Any = 0.5, training: Any = True, inplace: Any = False
) -> SSAValue:
    if ctx.const(training) and ctx.const(p) != 0:
        raise NotMapped("dropout in training mode")
    return ctx.tensor(x)


@register(nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)
def _dropout_module(ctx: Importer, mod: nn.Module, x: Any) -> SSAValue:
    if mod.training and mod.p != 0:  # type: ignore[attr-defined]
        raise NotMapped("dropout in training mode")
    return ctx.tensor(x)


@register(F.cross_entropy)
def _cross_entropy(
    ctx: Importer, x: Any, target: Any, weight: Any = None, size_average: Any = None,
    ignore_index: Any = -100, reduce: Any = None, reduction: Any = "mean",
    label_smoothing: Any = 0.0,
) -> SSAValue:  # fmt: skip
    if weight is not None or size_average is not None or reduce is not None:
        raise NotMapped("cross_entropy with class weights or legacy reduction flags")
    if ctx.const(label_smoothing) != 0:
        raise NotMapped("cross_entropy with label smoothing")
    logits, t = ctx.tensor(x), ctx.tensor(target)
    if len(_shape(logits)) != 2 or inf.element_type(t.type) != inf.I64:
        raise NotMapped("cross_entropy other than [N, C] logits and [N] class indices")
    red = ctx.const(reduction)
    if red not in ("mean", "sum", "none"):
        raise NotMapped(f"reduction {red!r}")
    return emit_built(ctx, build_cross_entropy(logits, t, int(ctx.const(ignore_index)), red))


@register(nn.CrossEntropyLoss)
def _cross_entropy_module(
    ctx: Importer, mod: nn.CrossEntropyLoss, x: Any, target: Any
) -> SSAValue:
    if mod.weight is not None:
        raise NotMapped("cross_entropy with class weights")
    return _cross_entropy(
        ctx, x, target, ignore_index=mod.ignore_index, reduction=mod.reduction,
        label_smoothing=mod.label_smoothing,
    )  # fmt: skip
