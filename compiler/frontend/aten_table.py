"""ATen-level import: `torch.ops.aten` OpOverload -> `aten`-dialect op builder.

Graphs from `torch.export`, AOTAutograd and Dynamo's ATen passes call OpOverloads
(`torch.ops.aten.add.Tensor`), not torch functions. Each table entry builds the
same `aten` op the torch-level importer builds for the torch call, so ATen graphs
fuse as their torch-level twins do:

    %add = call_function[target=torch.ops.aten.add.Tensor](args = (%x, %y))
    %sig = call_function[target=torch.ops.aten.sigmoid.default](args = (%add,))
->
    %add = aten.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    %sig = aten.sigmoid %add : tensor<4xf32> -> tensor<4xf32>

Handlers take the `Importer` and the node's fx arguments, as the torch-level
ones do (`torch_table`, `torch_shapes`), and reuse them where the signatures
agree. An entry names the operator's packet (`register_aten(A.add)` registers
`add.Tensor`, `add.Scalar`, ...: `fusec.frontend.registry.aten_overloads`), and
single overloads where the packet's overloads take different arguments
(`A.var.dim`). An OpOverload with no entry, or whose entry raises `NotMapped`,
imports as `aten.opaque` and runs through PyTorch: nothing is dropped. Backward ops with a pointwise formula
(`sigmoid_backward`, `tanh_backward`, `threshold_backward`, `silu_backward`,
`gelu_backward`) import as those pointwise ops, so they fuse.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from fusec.codegen.torch_ops import DTYPES_OF_TORCH
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend import import_normalizations as norm
from fusec.frontend import torch_shapes, torch_table
from fusec.frontend.imported import NotMapped
from fusec.frontend.position_embeddings import adds_int_zero
from fusec.frontend.registry import Handler, in_place_packet, register_aten
from fusec.frontend.slice_backward_sums import cat_of_slice_backwards
from fusec.frontend.torch_table import emit, float_constant
from fusec.frontend.value_types import static_dim
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

A = torch.ops.aten

OPAQUE_SUBSTITUTES: dict[Any, Any] = {
    A.view.default: A.reshape.default,
    A._unsafe_view.default: A.reshape.default,
}
"""What an opaque node runs instead of its target. A view with runtime sizes runs
as a reshape: the tensor fusec feeds it may be laid out unlike eager's (a fused
`clone` is not a strided copy), and in functional ATen graphs no write can tell
a view from a copy."""


# ---------------------------------------------------------------------- pointwise

for _cls, _packet in {
    aten.NegOp: A.neg,
    aten.AbsOp: A.abs,
    aten.ReluOp: A.relu,
    aten.ExpOp: A.exp,
    aten.Expm1Op: A.expm1,
    aten.LogOp: A.log,
    aten.Log1pOp: A.log1p,
    aten.SqrtOp: A.sqrt,
    aten.RsqrtOp: A.rsqrt,
    aten.ReciprocalOp: A.reciprocal,
    aten.SigmoidOp: A.sigmoid,
    aten.TanhOp: A.tanh,
    aten.SiluOp: A.silu,
    aten.ErfOp: A.erf,
    aten.SinOp: A.sin,
    aten.CosOp: A.cos,
    aten.LogicalNotOp: A.logical_not,
}.items():
    register_aten(_packet, in_place_packet(_packet))(torch_table.unary_handler(_cls))

_add_alpha = register_aten(in_place_packet(A.add))(torch_table.alpha_handler(aten.AddOp))
register_aten(A.sub, in_place_packet(A.sub))(torch_table.alpha_handler(aten.SubOp))


@register_aten(A.add)
def _add(ctx: Any, a: Any, b: Any, *, alpha: Any = 1) -> SSAValue:
    """`a + alpha * b`; the sum of a `cat`'s two padded gradient parts is the
    `cat` of the parts (`slice_backward_sums`)."""
    cat = cat_of_slice_backwards(ctx, a, b, alpha)
    if cat is not None:
        return cat
    if adds_int_zero(ctx, a, b):
        return ctx.tensor(a)
    return _add_alpha(ctx, a, b, alpha=alpha)


@register_aten(A.rsub)
def _rsub(ctx: Any, a: Any, b: Any, *, alpha: Any = 1) -> SSAValue:
    """rsub(a, b, alpha) = b - alpha * a."""
    alpha = ctx.const(alpha)
    return torch_table.binary(ctx, aten.SubOp, b, a, alpha=None if alpha == 1 else aten.number_attr(alpha))


register_aten(A.div, A.div_)(torch_table.div)
register_aten(A.div, A.div_)(torch_table.div)
register_aten(A.floor_divide)(torch_table.floordiv)

for _cls, _packet in {
    aten.MulOp: A.mul,
    aten.PowOp: A.pow,
    aten.MaximumOp: A.maximum,
    aten.MinimumOp: A.minimum,
    aten.EqOp: A.eq,
    aten.NeOp: A.ne,
    aten.LtOp: A.lt,
    aten.LeOp: A.le,
    aten.GtOp: A.gt,
    aten.GeOp: A.ge,
    aten.LogicalAndOp: A.logical_and,
    aten.LogicalOrOp: A.logical_or,
    aten.LogicalXorOp: A.logical_xor,
}.items():
    register_aten(_packet, in_place_packet(_packet))(
        lambda ctx, a, b, _c=_cls: torch_table.binary(ctx, _c, a, b)
    )


@register_aten(A.pow.Scalar)  # `2 ** x`; the other overloads are binary's
def _pow_scalar(ctx: Any, a: Any, b: Any) -> SSAValue:
    return torch_table.binary(ctx, aten.PowOp, a, b)


register_aten(A.where)(torch_table.where)


# The torch-level handlers: an attention mask fuses into the softmax either way.
register_aten(A.masked_fill)(torch_table.masked_fill)
register_aten(A.bitwise_not)(torch_table.bitwise_not)


register_aten(A.full_like)(torch_table.full_like)
register_aten(A.ones_like)(torch_table.ones_like)
register_aten(A.zeros_like)(torch_table.zeros_like)
register_aten(A.tril)(torch_table.tril)
register_aten(A.triu)(torch_table.triu)

register_aten(A.clamp, A.clamp_)(torch_table.clamp)


@register_aten(A.clamp_min)
def _clamp_min(ctx: Any, x: Any, lo: Any) -> SSAValue:
    return torch_table.clamp(ctx, x, lo, None)


@register_aten(A.clamp_max)
def _clamp_max(ctx: Any, x: Any, hi: Any) -> SSAValue:
    return torch_table.clamp(ctx, x, None, hi)


@register_aten(A.leaky_relu)
def _leaky_relu(ctx: Any, x: Any, negative_slope: Any = 0.01) -> SSAValue:
    return torch_table.leaky_relu(ctx, x, negative_slope)


@register_aten(A.gelu)
def _gelu(ctx: Any, x: Any, *, approximate: Any = "none") -> SSAValue:
    return torch_table.gelu(ctx, x, approximate)


@register_aten(A._to_copy, A.to.dtype)  # the other `to`s may alias or move
def _to_copy(ctx: Any, x: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> SSAValue:
    """A dtype change or a copy is `aten.to`; a layout, device or memory-format change
    is not. (`aten.to.dtype` to the same dtype, copy=False, is no copy.)"""
    kwargs = {k: ctx.const(v) for k, v in kwargs.items()}
    dtype = ctx.const(dtype) if dtype is not None else kwargs.pop("dtype", None)
    real = ctx.real[ctx.node.args[0]]
    device = kwargs.pop("device", None)
    if device is not None and torch.device(device) != real.device:
        raise NotMapped("device change")
    for k in ("layout", "pin_memory", "non_blocking", "copy"):
        if kwargs.pop(k, None) not in (None, False, torch.strided):
            raise NotMapped(f"_to_copy {k}")
    if kwargs.pop("memory_format", None) not in (None, torch.preserve_format, torch.contiguous_format):
        raise NotMapped("memory format")
    if args or kwargs:
        raise NotMapped("_to_copy arguments")
    # A copy is a fresh tensor: even a same-dtype one must not alias its input.
    out = ctx.tensor(x)
    t = out.type
    assert isinstance(t, TensorType)
    element = t.get_element_type() if dtype is None else DTYPES_OF_TORCH[dtype]
    if ctx.node.target is A.to.dtype and element == t.get_element_type():
        return out  # `aten.to.dtype` to the tensor's own dtype is the tensor itself
    return ctx.add_op(aten.ToOp(out, element)).results[0]


@register_aten(A.clone)
def _clone(ctx: Any, x: Any, *, memory_format: Any = None) -> SSAValue:
    return _to_copy(ctx, x, memory_format=memory_format)


@register_aten(A.alias, A.lift_fresh_copy, A.detach)
def _alias(ctx: Any, x: Any) -> SSAValue:
    if ctx.node.target is A.lift_fresh_copy.default:
        return _to_copy(ctx, x)
    return ctx.tensor(x)


@register_aten(A.copy_)
def _copy(ctx: Any, dst: Any, src: Any, non_blocking: Any = False) -> SSAValue:
    """`copy_(dst, src)` (how torch.export writes a mutated buffer back): the value
    written is `src` in `dst`'s dtype; the importer adds the `aten.copy_`."""
    d, v = ctx.tensor(dst), ctx.tensor(src)
    return ctx.add_op(aten.ToOp(v, d.type.get_element_type())).results[0]  # type: ignore[union-attr]


# ------------------------------------------------- backward ops with a pointwise formula


@register_aten(A.sigmoid_backward)
def _sigmoid_backward(ctx: Any, grad: Any, y: Any) -> SSAValue:
    """grad * y * (1 - y), as ATen computes it."""
    g, out = ctx.tensor(grad), ctx.tensor(y)
    one_minus = emit(ctx, aten.SubOp, float_constant(ctx, 1.0), out)
    return emit(ctx, aten.MulOp, g, emit(ctx, aten.MulOp, one_minus, out))


@register_aten(A.tanh_backward)
def _tanh_backward(ctx: Any, grad: Any, y: Any) -> SSAValue:
    """grad * (1 - y * y)."""
    g, out = ctx.tensor(grad), ctx.tensor(y)
    sq = emit(ctx, aten.MulOp, out, out)
    return emit(ctx, aten.MulOp, g, emit(ctx, aten.SubOp, float_constant(ctx, 1.0), sq))


@register_aten(A.threshold_backward)
def _threshold_backward(ctx: Any, grad: Any, x: Any, threshold: Any) -> SSAValue:
    """where(x <= threshold, 0, grad)."""
    g, inp = ctx.tensor(grad), ctx.tensor(x)
    le = emit(ctx, aten.LeOp, inp, ctx.operand(threshold))
    return ctx.add_op(aten.WhereOp(le, ctx.constant(0), g)).results[0]


@register_aten(A.silu_backward)
def _silu_backward(ctx: Any, grad: Any, x: Any) -> SSAValue:
    """grad * s * (1 + x * (1 - s)) with s = sigmoid(x)."""
    g, inp = ctx.tensor(grad), ctx.tensor(x)
    s = emit(ctx, aten.SigmoidOp, inp)
    one_minus = emit(ctx, aten.SubOp, float_constant(ctx, 1.0), s)
    inner = emit(ctx, aten.AddOp, emit(ctx, aten.MulOp, inp, one_minus), float_constant(ctx, 1.0))
    return emit(ctx, aten.MulOp, g, emit(ctx, aten.MulOp, s, inner))


@register_aten(A.gelu_backward)
def _gelu_backward(ctx: Any, grad: Any, x: Any, *, approximate: Any = "none") -> SSAValue:
    """Exact gelu: grad * (cdf + x * pdf), cdf = (1 + erf(x / sqrt 2)) / 2,
    pdf = exp(-x^2 / 2) / sqrt(2 pi); the tanh form runs opaque."""
    if ctx.const(approximate) != "none":
        raise NotMapped("gelu_backward with approximate='tanh'")
    g, inp = ctx.tensor(grad), ctx.tensor(x)
    scaled = emit(ctx, aten.MulOp, inp, float_constant(ctx, math.sqrt(0.5)))
    erf = emit(ctx, aten.ErfOp, scaled)
    cdf = emit(ctx, aten.MulOp, emit(ctx, aten.AddOp, erf, float_constant(ctx, 1.0)), float_constant(ctx, 0.5))
    sq = emit(ctx, aten.MulOp, inp, inp)
    e = emit(ctx, aten.ExpOp, emit(ctx, aten.MulOp, sq, float_constant(ctx, -0.5)))
    pdf = emit(ctx, aten.MulOp, e, float_constant(ctx, 1.0 / math.sqrt(2.0 * math.pi)))
    total = emit(ctx, aten.AddOp, cdf, emit(ctx, aten.MulOp, inp, pdf))
    return emit(ctx, aten.MulOp, g, total)


# ---------------------------------------------------------------------- views and shapes


def _reshape(ctx: Any, x: Any, size: Any) -> SSAValue:
    reshaped = ctx.symbolic_reshape(x)
    if reshaped is not None:
        return reshaped
    shape = list(ctx.const(size))
    if -1 in shape:
        ctx.bakes_size("a -1 size")
    out = ctx.real[ctx.node]
    # `aten.reshape`, not `aten.view`: ATen graphs are functional, so no write
    # observes the difference, and the tensor this program feeds the op may be
    # laid out differently from eager's (a fused `clone` is not a strided copy).
    return ctx.add_op(aten.ReshapeOp(ctx.tensor(x), list(out.shape))).results[0]


register_aten(A.view.default, A._unsafe_view, A.reshape)(_reshape)


@register_aten(A.expand)
def _expand(ctx: Any, x: Any, size: Any, *, implicit: Any = False) -> SSAValue:
    sizes = list(ctx.const(size))
    if -1 in sizes and not ctx.symbolic:
        ctx.bakes_size("a -1 size")
        sizes = list(ctx.real[ctx.node].shape)
    return torch_shapes.expand(ctx, x, sizes)


@register_aten(A.permute)
def _permute(ctx: Any, x: Any, dims: Any) -> SSAValue:
    return torch_shapes.permute_op(ctx, x, list(ctx.const(dims)))


register_aten(A.t)(torch_shapes.t)
register_aten(A.transpose)(torch_shapes.transpose)
register_aten(A.unsqueeze)(torch_shapes.unsqueeze)
register_aten(A.squeeze)(torch_shapes.squeeze)


@register_aten(A.squeeze.dims)
def _squeeze_dims(ctx: Any, x: Any, dims: Any) -> SSAValue:
    """Several dims: one `aten.squeeze` per dim, the highest first so that the
    lower dims keep their index."""
    v = ctx.tensor(x)
    t = v.type
    assert isinstance(t, TensorType)
    rank = t.get_num_dims()
    for d in sorted({inf.normalize_dim(d, rank) for d in ctx.const(dims)}, reverse=True):
        shape = list(v.type.get_shape())  # type: ignore[union-attr]
        if shape and shape[d] == 1:
            del shape[d]
        v = torch_shapes.typed(ctx, aten.SqueezeOp, v, {"dim": IntegerAttr(d, inf.I64)}, shape)
    return v


@register_aten(A.slice)
def _slice(ctx: Any, x: Any, dim: Any = 0, start: Any = None, end: Any = None, step: Any = 1):
    d, s, e, st = (ctx.const(v) for v in (dim, start, end, step))
    v = ctx.tensor(x)
    t = v.type
    assert isinstance(t, TensorType)
    d = inf.normalize_dim(d, t.get_num_dims())
    index = (slice(None),) * d + (slice(s, e, st),)
    return torch_shapes.getitem(ctx, ctx.node.args[0], index)


@register_aten(A.select)
def _select(ctx: Any, x: Any, dim: Any, index: Any) -> SSAValue:
    v = ctx.tensor(x)
    t = v.type
    assert isinstance(t, TensorType)
    d = inf.normalize_dim(ctx.const(dim), t.get_num_dims())
    return torch_shapes.getitem(ctx, ctx.node.args[0], (slice(None),) * d + (ctx.const(index),))


@register_aten(A.narrow)
def _narrow(ctx: Any, x: Any, dim: Any, start: Any, length: Any) -> SSAValue:
    return torch_shapes.narrow(ctx, x, dim, start, length)


def _pieces(ctx: Any, x: Any, sizes: list[int], dim: int) -> tuple[SSAValue, ...]:
    """Equal pieces are `aten.chunk` (which `fuse` reads as views of one tensor);
    others `aten.split`."""
    v = ctx.tensor(x)
    t = v.type
    assert isinstance(t, TensorType)
    total = t.get_shape()[inf.normalize_dim(dim, t.get_num_dims())]
    n = len(sizes)
    equal = n > 0 and all(s == sizes[0] for s in sizes) and sizes[0] * n == total
    props: dict[str, Attribute] = {"dim": IntegerAttr(dim, inf.I64)}
    static = static_dim(ctx.node.args[0], dim)
    if equal and (static or not ctx.symbolic) and math.ceil(total / math.ceil(total / n)) == n:
        if not static:
            # The piece size is the graph's literal, not chunk's rule: another
            # size of this dim would split differently.
            ctx.bakes_size("split sizes read as a chunk count")
        props = {"chunks": IntegerAttr(n, inf.I64), **props}
        cls: type[Operation] = aten.ChunkOp
    else:
        props["sizes"] = torch_shapes.int_array(sizes)
        cls = aten.SplitOp
    op = cls.create(operands=[v], properties=props, result_types=torch_shapes.result_types(ctx))
    return tuple(ctx.add_op(op).results)


@register_aten(A.split_with_sizes)
def _split_with_sizes(ctx: Any, x: Any, sizes: Any, dim: Any = 0) -> tuple[SSAValue, ...]:
    return _pieces(ctx, x, list(ctx.const(sizes)), ctx.const(dim))


@register_aten(A.split)
def _split(ctx: Any, x: Any, split_size: Any, dim: Any = 0) -> tuple[SSAValue, ...]:
    pieces = [p.shape[ctx.const(dim)] for p in ctx.real[ctx.node]]
    if not static_dim(ctx.node.args[0], ctx.const(dim)):
        ctx.bakes_size("split by a piece size")  # the piece count follows the size
    return _pieces(ctx, x, pieces, ctx.const(dim))


register_aten(A.chunk)(torch_shapes.chunk)
register_aten(A.cat)(torch_shapes.cat)


# ---------------------------------------------------------------------- matrix products


def _mm(cls: type[Operation]) -> Handler:
    def handle(ctx: Any, a: Any, b: Any) -> SSAValue:
        return ctx.add_op(cls(ctx.tensor(a), ctx.tensor(b))).results[0]

    return handle


register_aten(A.mm)(_mm(aten.MmOp))
register_aten(A.matmul)(_mm(aten.MatmulOp))


@register_aten(A.bmm)
def _bmm(ctx: Any, a: Any, b: Any) -> SSAValue:
    """Batched matrix products of 3-d tensors are `aten.matmul` (same result there)."""
    lhs, rhs = ctx.tensor(a), ctx.tensor(b)
    if any(v.type.get_num_dims() != 3 for v in (lhs, rhs)):  # type: ignore[union-attr]
        raise NotMapped("bmm of tensors that are not 3-d")
    return ctx.add_op(aten.MatmulOp(lhs, rhs)).results[0]


register_aten(A.addmm)(torch_shapes.addmm)
register_aten(A.linear)(torch_shapes.linear)


# ---------------------------------------------------------------------- reductions


def _reduction(cls: type[Operation]) -> Handler:
    base = torch_shapes.reduction(cls)

    def handle(ctx: Any, x: Any, dim: Any = None, keepdim: Any = False, *, dtype: Any = None):
        d = ctx.const(dim)
        if isinstance(d, list | tuple) and not d:
            d = None  # `sum(x, [])` reduces every dim
        return base(ctx, x, d, keepdim, dtype=dtype)

    return handle


register_aten(A.sum)(_reduction(aten.SumOp))
register_aten(A.mean)(_reduction(aten.MeanOp))

# Reductions and normalizations: the torch-level handlers of
# `import_normalizations` take ATen's argument lists as they are.
register_aten(A.amax)(norm.extremum(aten.AmaxOp))
register_aten(A.amin)(norm.extremum(aten.AminOp))
register_aten(A.var.correction, A.var.dim)(norm.variance(aten.VarOp))
register_aten(A.std.correction, A.std.dim)(norm.variance(aten.StdOp))
register_aten(A._softmax_backward_data)(norm.softmax_backward(False))
register_aten(A._log_softmax_backward_data)(norm.softmax_backward(True))
register_aten(A.native_layer_norm)(norm.native_layer_norm)
register_aten(A.batch_norm)(norm.aten_batch_norm)
register_aten(A._native_batch_norm_legit_no_training)(norm.native_batch_norm_no_training)
register_aten(A.native_layer_norm_backward)(norm.native_layer_norm_backward)


def _softmax(log: bool) -> Handler:
    def handle(ctx: Any, x: Any, dim: Any, half_to_float: Any) -> SSAValue:
        """`aten._softmax(x, dim, half_to_float)`: in f32 if `half_to_float`."""
        dtype = inf.F32 if ctx.const(half_to_float) else None
        built = norm.build_softmax(ctx.tensor(x), int(ctx.const(dim)), dtype, log)
        return norm.emit_built(ctx, built)

    return handle


register_aten(A._softmax)(_softmax(False))
register_aten(A._log_softmax)(_softmax(True))


def _softmax_int(log: bool) -> Handler:
    def handle(ctx: Any, x: Any, dim: Any, dtype: Any = None) -> SSAValue:
        """`aten.softmax.int(x, dim, dtype=None)` (torch.export's training IR)."""
        built = norm.build_softmax(ctx.tensor(x), int(ctx.const(dim)), norm.result_dtype(ctx, dtype), log)
        return norm.emit_built(ctx, built)

    return handle


register_aten(A.softmax)(_softmax_int(False))
register_aten(A.log_softmax)(_softmax_int(True))


@register_aten(A.layer_norm)
def _layer_norm(
    ctx: Any, x: Any, shape: Any, weight: Any = None, bias: Any = None, eps: Any = 1e-5,
    cudnn_enable: Any = True,
) -> SSAValue:  # fmt: skip
    """`aten.layer_norm.default` (torch.export's training IR): as `F.layer_norm`."""
    return norm.layer_norm(ctx, x, shape, weight, bias, eps)


# ---------------------------------------------------------------------- sizes


@register_aten(A.sym_size)
def _sym_size(ctx: Any, x: Any, dim: Any) -> Any:
    """A size read in a graph with symbolic shapes is a runtime value
    (`aten.sym_size`); in a static graph it is a constant like `x.size(d)`."""
    if ctx.symbolic:
        return ctx.add_op(aten.SymSizeOp(ctx.tensor(x), ctx.const(dim))).results[0]
    ctx.bakes_size("a size read from an input")
    return ctx.constant(int(ctx.real[ctx.node]))

