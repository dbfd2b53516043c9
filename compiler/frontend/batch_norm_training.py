"""Batch norm in training: AOTAutograd's `_native_batch_norm_legit_functional`
and `native_batch_norm_backward`, written out as reductions over every dim but
the channels (dim 1) and pointwise ops, so each is one group: with the ReLU and
the residual add after it, a ResNet block's norm is one kernel forward and one
backward, where PyTorch makes a call per norm, per ReLU and per gradient.

    %y, %mean, %rstd, %rm2, %rv2 = _native_batch_norm_legit_functional(%x, %w, %b, %rm, %rv)
->
    %m = aten.mean %x dims = [0, 2, 3] keepdim = true     (and the biased var, as eager)
    %y = (%x - %m) * rsqrt(%var + eps) * %w[c] + %b[c]
    %rm2 = %m * momentum + %rm[c] * (1 - momentum)       (reshaped to [C] outside the kernel)
    %rv2 = %var * (n / (n - 1)) * momentum + %rv[c] * (1 - momentum)

The running statistics come out of the kernel as new tensors, as the functional
op returns them; AOTAutograd writes them into the module's buffers. Float32
and float64 inputs; with symbolic sizes the kernel counts the values per
channel for the unbiased variance. Others stay opaque.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend.import_normalizations import (
    _scalar,
    _shape,
    _unsqueeze,
    build_reduction,
)
from fusec.frontend.imported import NotMapped
from fusec.frontend.registry import register_aten
from xdsl.ir import Operation, SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer

A = torch.ops.aten


class _Builder:
    """Ops over an `[N, C, ...]` input, and its per-channel `[C]` tensors
    unsqueezed to `[C, 1, ...]` so that they broadcast along the channels."""

    def __init__(self, x: SSAValue) -> None:
        shape = _shape(x)
        if len(shape) < 2 or inf.element_type(x.type) not in (inf.F32, inf.F64):
            raise NotMapped("batch norm of a tensor without a channel dim, or not f32/f64")
        self.rank = len(shape)
        self.dims = [0, *range(2, self.rank)]
        if shape[1] == inf.DYNAMIC:
            raise NotMapped("batch norm in training over a symbolic number of channels")
        sizes = [shape[d] for d in self.dims]
        self.count: int | None = None if inf.DYNAMIC in sizes else math.prod(sizes)
        """Values per channel, None where a reduced size is symbolic."""
        self.channels = shape[1]
        self.x = x
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def channel(self, v: SSAValue) -> SSAValue:
        for _ in range(self.rank - 2):
            v = self.add(_unsqueeze(v, len(_shape(v))))
        return v

    def mean(self, v: SSAValue) -> SSAValue:
        red, m = build_reduction(aten.MeanOp, v, self.dims, keepdim=True)
        self.ops += red
        return m

    def sum(self, v: SSAValue) -> SSAValue:
        red, s = build_reduction(aten.SumOp, v, self.dims, keepdim=True)
        self.ops += red
        return s

    def scaled(self, v: SSAValue, factor: float) -> SSAValue:
        return self.add(aten.MulOp(v, self.add(_scalar(factor))))

    def unbiased(self, var: SSAValue) -> SSAValue:
        """`var * n / (n - 1)`: with symbolic sizes `n` is counted in the kernel
        (a sum of f64 ones, exact to 2^53 values)."""
        if self.count is not None:
            return self.scaled(var, self.count / (self.count - 1))
        ones = self.add(aten.FullLikeOp(self.x, aten.number_attr(1.0), inf.F64))
        n = self.sum(ones)
        less = self.add(aten.SubOp(n, self.add(_scalar(1.0))))
        return self.add(aten.ToOp(self.add(aten.MulOp(var, self.add(aten.DivOp(n, less)))),
                                  inf.element_type(self.x.type)))  # fmt: skip

    def flat(self, v: SSAValue) -> SSAValue:
        """A `[1, C, 1, ...]` statistic as the `[C]` tensor PyTorch returns."""
        return self.add(aten.ReshapeOp(v, [self.channels]))


@register_aten(A._native_batch_norm_legit_functional)
def batch_norm_training(
    ctx: Importer, x: Any, weight: Any, bias: Any, running_mean: Any, running_var: Any,
    training: Any, momentum: Any, eps: Any,
) -> tuple[SSAValue, ...]:  # fmt: skip
    """(output, saved mean, saved inverse std, new running mean, new running var)."""
    if not ctx.const(training):
        raise NotMapped("_native_batch_norm_legit_functional in eval mode")
    m, e = float(ctx.const(momentum)), float(ctx.const(eps))
    b = _Builder(ctx.tensor(x))
    xv = b.x
    if b.count is not None and b.count < 2:
        raise NotMapped("batch norm in training over one value per channel")
    mean = b.mean(xv)
    centered = b.add(aten.SubOp(xv, mean))
    var = b.mean(b.add(aten.MulOp(centered, centered)))
    rstd = b.add(aten.RsqrtOp(b.add(aten.AddOp(var, b.add(_scalar(e))))))
    out = b.add(aten.MulOp(centered, rstd))
    if weight is not None:
        out = b.add(aten.MulOp(out, b.channel(ctx.tensor(weight))))
    if bias is not None:
        out = b.add(aten.AddOp(out, b.channel(ctx.tensor(bias))))
    rm = b.channel(ctx.tensor(running_mean))
    rv = b.channel(ctx.tensor(running_var))
    new_mean = b.add(aten.AddOp(b.scaled(mean, m), b.scaled(rm, 1.0 - m)))
    unbiased = b.unbiased(var)
    new_var = b.add(aten.AddOp(b.scaled(unbiased, m), b.scaled(rv, 1.0 - m)))
    results = (out, b.flat(mean), b.flat(rstd), b.flat(new_mean), b.flat(new_var))
    for op in b.ops:
        ctx.add_op(op)
    return results


@register_aten(A.native_batch_norm_backward)
def batch_norm_backward(
    ctx: Importer, grad: Any, x: Any, weight: Any, running_mean: Any, running_var: Any,
    save_mean: Any, save_invstd: Any, train: Any, eps: Any, output_mask: Any,
) -> tuple[SSAValue | None, ...]:  # fmt: skip
    """(grad_input, grad_weight, grad_bias), None where `output_mask` leaves one
    out; training mode (the saved statistics). With `xmu = x - mean`:
    `grad_input = (dy - mean(dy) - xmu * rstd^2 * mean(dy * xmu)) * rstd * w`,
    `grad_weight = sum(dy * xmu) * rstd`, `grad_bias = sum(dy)`, over the
    reduced dims: one group."""
    if not ctx.const(train) or save_mean is None or save_invstd is None:
        raise NotMapped("native_batch_norm_backward in eval mode")
    mask: Sequence[bool] = [bool(v) for v in ctx.const(output_mask)]
    dy, xv = ctx.tensor(grad), ctx.tensor(x)
    b = _Builder(xv)
    mean = b.channel(ctx.tensor(save_mean))
    rstd = b.channel(ctx.tensor(save_invstd))
    xmu = b.add(aten.SubOp(xv, mean))
    dy_xmu = b.add(aten.MulOp(dy, xmu))
    gx = gw = gb = None
    if mask[0]:
        mean_dy = b.mean(dy)
        proj = b.add(aten.MulOp(b.add(aten.MulOp(rstd, rstd)), b.mean(dy_xmu)))
        centered = b.add(aten.SubOp(b.add(aten.SubOp(dy, mean_dy)), b.add(aten.MulOp(xmu, proj))))
        gx = b.add(aten.MulOp(centered, rstd))
        if weight is not None:
            gx = b.add(aten.MulOp(gx, b.channel(ctx.tensor(weight))))
    if mask[1]:
        gw = b.flat(b.add(aten.MulOp(b.sum(dy_xmu), rstd)))
    if mask[2]:
        gb = b.flat(b.sum(dy))
    for op in b.ops:
        ctx.add_op(op)
    return gx, gw, gb
