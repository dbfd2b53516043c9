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

Handlers take the importer and the node's fx arguments, as the torch-level ones do
(`fusec.frontend.importer`), and reuse them where the signatures agree. An OpOverload with
no entry, or whose entry raises `_NotMapped`, imports as `aten.opaque` and runs
through PyTorch: nothing is dropped. Backward ops with a pointwise formula
(`sigmoid_backward`, `tanh_backward`, `threshold_backward`, `silu_backward`,
`gelu_backward`) import as those pointwise ops, so they fuse.

Entries marked `# h13:` are ops that run opaque until the `aten` dialect has a
reduction or normalization op for them (softmax, layer norm, amax, ...).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend import import_normalizations as norm
from fusec.frontend import importer as imp
from fusec.torch_ops import DTYPES_OF_TORCH
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue

A = torch.ops.aten
Handler = Callable[..., Any]

ATEN_TABLE: dict[Any, Handler] = {}
"""OpOverload -> handler(importer, *node.args, **node.kwargs)."""

OPAQUE_SUBSTITUTES: dict[Any, Any] = {
    A.view.default: A.reshape.default,
    A._unsafe_view.default: A.reshape.default,
}
"""What an opaque node runs instead of its target. A view with runtime sizes runs
as a reshape: the tensor fusec feeds it may be laid out unlike eager's (a fused
`clone` is not a strided copy), and in functional ATen graphs no write can tell
a view from a copy."""


def handler_for(target: Any) -> Handler | None:
    """The table's handler for an OpOverload, or None (the node becomes opaque)."""
    return ATEN_TABLE.get(target)


def _entry(*overloads: Any) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        for o in overloads:
            ATEN_TABLE[o] = fn
        return fn

    return deco


def _overloads(packet: Any, *names: str) -> list[Any]:
    return [getattr(packet, n) for n in names if hasattr(packet, n)]


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
    _name = _packet._qualified_op_name.split("::")[1]
    _entry(_packet.default, *_overloads(getattr(A, _name + "_", None), "default"))(
        imp._unary_handler(_cls)
    )

for _cls, _packet in {aten.AddOp: A.add, aten.SubOp: A.sub}.items():
    _name = _packet._qualified_op_name.split("::")[1]
    _entry(
        *_overloads(_packet, "Tensor", "Scalar"),
        *_overloads(getattr(A, _name + "_"), "Tensor", "Scalar"),
    )(imp._alpha_handler(_cls))


@_entry(A.rsub.Tensor, A.rsub.Scalar)
def _rsub(ctx: Any, a: Any, b: Any, *, alpha: Any = 1) -> SSAValue:
    """rsub(a, b, alpha) = b - alpha * a."""
    alpha = ctx.const(alpha)
    return imp._binary(ctx, aten.SubOp, b, a, alpha=None if alpha == 1 else aten.number_attr(alpha))


_entry(A.div.Tensor, A.div.Scalar, A.div_.Tensor, A.div_.Scalar)(imp._div)
_entry(A.div.Tensor_mode, A.div.Scalar_mode, A.div_.Tensor_mode)(imp._div)
_entry(A.floor_divide.default, A.floor_divide.Scalar)(imp._floordiv)

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
    _name = _packet._qualified_op_name.split("::")[1]
    _in_place = getattr(A, _name + "_", None)
    _entry(
        *_overloads(_packet, "Tensor", "Scalar", "default", "Tensor_Scalar", "Tensor_Tensor"),
        *_overloads(_in_place, "Tensor", "Scalar", "default", "Tensor_Scalar", "Tensor_Tensor"),
    )(lambda ctx, a, b, _c=_cls: imp._binary(ctx, _c, a, b))


@_entry(A.pow.Scalar)
def _pow_scalar(ctx: Any, a: Any, b: Any) -> SSAValue:
    return imp._binary(ctx, aten.PowOp, a, b)


_entry(A.where.self, A.where.ScalarSelf, A.where.ScalarOther, A.where.Scalar)(imp._where)


# The torch-level handlers: an attention mask fuses into the softmax either way.
_entry(A.masked_fill.Scalar)(imp._masked_fill)
_entry(A.bitwise_not.default)(imp._bitwise_not)


_entry(A.full_like.default)(imp._full_like)
_entry(A.ones_like.default)(imp._ones_like)
_entry(A.zeros_like.default)(imp._zeros_like)
_entry(A.tril.default)(imp._tril)
_entry(A.triu.default)(imp._triu)

_entry(A.clamp.default, A.clamp_.default)(imp._clamp)


@_entry(A.clamp_min.default)
def _clamp_min(ctx: Any, x: Any, lo: Any) -> SSAValue:
    return imp._clamp(ctx, x, lo, None)


@_entry(A.clamp_max.default)
def _clamp_max(ctx: Any, x: Any, hi: Any) -> SSAValue:
    return imp._clamp(ctx, x, None, hi)


@_entry(A.leaky_relu.default)
def _leaky_relu(ctx: Any, x: Any, negative_slope: Any = 0.01) -> SSAValue:
    return imp._leaky_relu(ctx, x, negative_slope)


@_entry(A.gelu.default)
def _gelu(ctx: Any, x: Any, *, approximate: Any = "none") -> SSAValue:
    return imp._gelu(ctx, x, approximate)


@_entry(A._to_copy.default, A.to.dtype)
def _to_copy(ctx: Any, x: Any, dtype: Any = None, *args: Any, **kwargs: Any) -> SSAValue:
    """A dtype change or a copy is `aten.to`; a layout, device or memory-format change
    is not. (`aten.to.dtype` to the same dtype, copy=False, is no copy.)"""
    kwargs = {k: ctx.const(v) for k, v in kwargs.items()}
    dtype = ctx.const(dtype) if dtype is not None else kwargs.pop("dtype", None)
    real = ctx.real[ctx.node.args[0]]
    device = kwargs.pop("device", None)
    if device is not None and torch.device(device) != real.device:
        raise imp._NotMapped("device change")
    for k in ("layout", "pin_memory", "non_blocking", "copy"):
        if kwargs.pop(k, None) not in (None, False, torch.strided):
            raise imp._NotMapped(f"_to_copy {k}")
    if kwargs.pop("memory_format", None) not in (None, torch.preserve_format, torch.contiguous_format):
        raise imp._NotMapped("memory format")
    if args or kwargs:
        raise imp._NotMapped("_to_copy arguments")
    # A copy is a fresh tensor: even a same-dtype one must not alias its input.
    out = ctx.tensor(x)
    t = out.type
    assert isinstance(t, TensorType)
    element = t.get_element_type() if dtype is None else DTYPES_OF_TORCH[dtype]
    if ctx.node.target is A.to.dtype and element == t.get_element_type():
        return out  # `aten.to.dtype` to the tensor's own dtype is the tensor itself
    return ctx.add_op(aten.ToOp(out, element)).results[0]


@_entry(A.clone.default)
def _clone(ctx: Any, x: Any, *, memory_format: Any = None) -> SSAValue:
    return _to_copy(ctx, x, memory_format=memory_format)


@_entry(A.alias.default, A.lift_fresh_copy.default, A.detach.default)
def _alias(ctx: Any, x: Any) -> SSAValue:
    if ctx.node.target is A.lift_fresh_copy.default:
        return _to_copy(ctx, x)
    return ctx.tensor(x)


@_entry(A.copy_.default)
def _copy(ctx: Any, dst: Any, src: Any, non_blocking: Any = False) -> SSAValue:
    """`copy_(dst, src)` (how torch.export writes a mutated buffer back): the value
    written is `src` in `dst`'s dtype; the importer adds the `aten.copy_`."""
    d, v = ctx.tensor(dst), ctx.tensor(src)
    return ctx.add_op(aten.ToOp(v, d.type.get_element_type())).results[0]  # type: ignore[union-attr]


# ------------------------------------------------- backward ops with a pointwise formula


def _c(ctx: Any, v: float) -> SSAValue:
    return ctx.constant(float(v))


def _op(ctx: Any, cls: type[Operation], *operands: SSAValue, **props: Any) -> SSAValue:
    return ctx.add_op(cls(*operands, **props)).results[0]


@_entry(A.sigmoid_backward.default)
def _sigmoid_backward(ctx: Any, grad: Any, y: Any) -> SSAValue:
    """grad * y * (1 - y), as ATen computes it."""
    g, out = ctx.tensor(grad), ctx.tensor(y)
    one_minus = _op(ctx, aten.SubOp, _c(ctx, 1.0), out)
    return _op(ctx, aten.MulOp, g, _op(ctx, aten.MulOp, one_minus, out))


@_entry(A.tanh_backward.default)
def _tanh_backward(ctx: Any, grad: Any, y: Any) -> SSAValue:
    """grad * (1 - y * y)."""
    g, out = ctx.tensor(grad), ctx.tensor(y)
    sq = _op(ctx, aten.MulOp, out, out)
    return _op(ctx, aten.MulOp, g, _op(ctx, aten.SubOp, _c(ctx, 1.0), sq))


@_entry(A.threshold_backward.default)
def _threshold_backward(ctx: Any, grad: Any, x: Any, threshold: Any) -> SSAValue:
    """where(x <= threshold, 0, grad)."""
    g, inp = ctx.tensor(grad), ctx.tensor(x)
    le = _op(ctx, aten.LeOp, inp, ctx.operand(threshold))
    return ctx.add_op(aten.WhereOp(le, ctx.constant(0), g)).results[0]


@_entry(A.silu_backward.default)
def _silu_backward(ctx: Any, grad: Any, x: Any) -> SSAValue:
    """grad * s * (1 + x * (1 - s)) with s = sigmoid(x)."""
    g, inp = ctx.tensor(grad), ctx.tensor(x)
    s = _op(ctx, aten.SigmoidOp, inp)
    one_minus = _op(ctx, aten.SubOp, _c(ctx, 1.0), s)
    inner = _op(ctx, aten.AddOp, _op(ctx, aten.MulOp, inp, one_minus), _c(ctx, 1.0))
    return _op(ctx, aten.MulOp, g, _op(ctx, aten.MulOp, s, inner))


@_entry(A.gelu_backward.default)
def _gelu_backward(ctx: Any, grad: Any, x: Any, *, approximate: Any = "none") -> SSAValue:
    """Exact gelu: grad * (cdf + x * pdf), cdf = (1 + erf(x / sqrt 2)) / 2,
    pdf = exp(-x^2 / 2) / sqrt(2 pi); the tanh form runs opaque."""
    if ctx.const(approximate) != "none":
        raise imp._NotMapped("gelu_backward with approximate='tanh'")
    g, inp = ctx.tensor(grad), ctx.tensor(x)
    scaled = _op(ctx, aten.MulOp, inp, _c(ctx, math.sqrt(0.5)))
    erf = _op(ctx, aten.ErfOp, scaled)
    cdf = _op(ctx, aten.MulOp, _op(ctx, aten.AddOp, erf, _c(ctx, 1.0)), _c(ctx, 0.5))
    sq = _op(ctx, aten.MulOp, inp, inp)
    e = _op(ctx, aten.ExpOp, _op(ctx, aten.MulOp, sq, _c(ctx, -0.5)))
    pdf = _op(ctx, aten.MulOp, e, _c(ctx, 1.0 / math.sqrt(2.0 * math.pi)))
    total = _op(ctx, aten.AddOp, cdf, _op(ctx, aten.MulOp, inp, pdf))
    return _op(ctx, aten.MulOp, g, total)


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


_entry(A.view.default, A._unsafe_view.default, A.reshape.default)(_reshape)


@_entry(A.expand.default)
def _expand(ctx: Any, x: Any, size: Any, *, implicit: Any = False) -> SSAValue:
    sizes = list(ctx.const(size))
    if -1 in sizes and not ctx.symbolic:
        ctx.bakes_size("a -1 size")
        sizes = list(ctx.real[ctx.node].shape)
    return imp._expand(ctx, x, sizes)


@_entry(A.permute.default)
def _permute(ctx: Any, x: Any, dims: Any) -> SSAValue:
    return imp._permute_op(ctx, x, list(ctx.const(dims)))


_entry(A.t.default)(imp._t)
_entry(A.transpose.int)(imp._transpose)
_entry(A.unsqueeze.default)(imp._unsqueeze)
_entry(A.squeeze.dim, A.squeeze.default)(imp._squeeze)


@_entry(A.squeeze.dims)
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
        v = imp._typed(ctx, aten.SqueezeOp, v, {"dim": IntegerAttr(d, inf.I64)}, shape)
    return v


@_entry(A.slice.Tensor)
def _slice(ctx: Any, x: Any, dim: Any = 0, start: Any = None, end: Any = None, step: Any = 1):
    d, s, e, st = (ctx.const(v) for v in (dim, start, end, step))
    v = ctx.tensor(x)
    t = v.type
    assert isinstance(t, TensorType)
    d = inf.normalize_dim(d, t.get_num_dims())
    index = (slice(None),) * d + (slice(s, e, st),)
    return imp._getitem(ctx, ctx.node.args[0], index)


@_entry(A.select.int)
def _select(ctx: Any, x: Any, dim: Any, index: Any) -> SSAValue:
    v = ctx.tensor(x)
    t = v.type
    assert isinstance(t, TensorType)
    d = inf.normalize_dim(ctx.const(dim), t.get_num_dims())
    return imp._getitem(ctx, ctx.node.args[0], (slice(None),) * d + (ctx.const(index),))


@_entry(A.narrow.default)
def _narrow(ctx: Any, x: Any, dim: Any, start: Any, length: Any) -> SSAValue:
    return imp._narrow(ctx, x, dim, start, length)


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
    static = _static_dim(ctx, ctx.node.args[0], dim)
    if equal and (static or not ctx.symbolic) and math.ceil(total / math.ceil(total / n)) == n:
        if not static:
            # The piece size is the graph's literal, not chunk's rule: another
            # size of this dim would split differently.
            ctx.bakes_size("split sizes read as a chunk count")
        props = {"chunks": IntegerAttr(n, inf.I64), **props}
        cls: type[Operation] = aten.ChunkOp
    else:
        props["sizes"] = imp._int_array(sizes)
        cls = aten.SplitOp
    op = cls.create(operands=[v], properties=props, result_types=imp._result_types(ctx))
    return tuple(ctx.add_op(op).results)


def _static_dim(ctx: Any, x: Any, dim: int) -> bool:
    return imp.static_dim(x, dim)


@_entry(A.split_with_sizes.default)
def _split_with_sizes(ctx: Any, x: Any, sizes: Any, dim: Any = 0) -> tuple[SSAValue, ...]:
    return _pieces(ctx, x, list(ctx.const(sizes)), ctx.const(dim))


@_entry(A.split.Tensor)
def _split(ctx: Any, x: Any, split_size: Any, dim: Any = 0) -> tuple[SSAValue, ...]:
    pieces = [p.shape[ctx.const(dim)] for p in ctx.real[ctx.node]]
    if not _static_dim(ctx, ctx.node.args[0], ctx.const(dim)):
        ctx.bakes_size("split by a piece size")  # the piece count follows the size
    return _pieces(ctx, x, pieces, ctx.const(dim))


_entry(A.chunk.default)(imp._chunk)
_entry(A.cat.default)(imp._cat)


# ---------------------------------------------------------------------- matrix products


def _mm(cls: type[Operation]) -> Handler:
    def handle(ctx: Any, a: Any, b: Any) -> SSAValue:
        return ctx.add_op(cls(ctx.tensor(a), ctx.tensor(b))).results[0]

    return handle


_entry(A.mm.default)(_mm(aten.MmOp))
_entry(A.matmul.default)(_mm(aten.MatmulOp))


@_entry(A.bmm.default)
def _bmm(ctx: Any, a: Any, b: Any) -> SSAValue:
    """Batched matrix products of 3-d tensors are `aten.matmul` (same result there)."""
    lhs, rhs = ctx.tensor(a), ctx.tensor(b)
    if any(v.type.get_num_dims() != 3 for v in (lhs, rhs)):  # type: ignore[union-attr]
        raise imp._NotMapped("bmm of tensors that are not 3-d")
    return ctx.add_op(aten.MatmulOp(lhs, rhs)).results[0]


_entry(A.addmm.default)(imp._addmm)
_entry(A.linear.default)(imp._linear)


# ---------------------------------------------------------------------- reductions


def _reduction(cls: type[Operation]) -> Handler:
    base = imp._reduction(cls)

    def handle(ctx: Any, x: Any, dim: Any = None, keepdim: Any = False, *, dtype: Any = None):
        d = ctx.const(dim)
        if isinstance(d, list | tuple) and not d:
            d = None  # `sum(x, [])` reduces every dim
        return base(ctx, x, d, keepdim, dtype=dtype)

    return handle


_entry(A.sum.dim_IntList, A.sum.default)(_reduction(aten.SumOp))
_entry(A.mean.dim, A.mean.default)(_reduction(aten.MeanOp))

# Reductions and normalizations: the torch-level handlers of
# `import_normalizations` take ATen's argument lists as they are.
_entry(A.amax.default)(norm._extremum(aten.AmaxOp))
_entry(A.amin.default)(norm._extremum(aten.AminOp))
_entry(A.var.correction, A.var.dim)(norm._variance(aten.VarOp))
_entry(A.std.correction, A.std.dim)(norm._variance(aten.StdOp))
_entry(A._softmax_backward_data.default)(norm._softmax_backward(False))
_entry(A._log_softmax_backward_data.default)(norm._softmax_backward(True))
_entry(A.native_layer_norm.default)(norm._native_layer_norm)
_entry(A.native_layer_norm_backward.default)(norm._native_layer_norm_backward)


def _softmax(log: bool) -> Handler:
    def handle(ctx: Any, x: Any, dim: Any, half_to_float: Any) -> SSAValue:
        """`aten._softmax(x, dim, half_to_float)`: in f32 if `half_to_float`."""
        dtype = inf.F32 if ctx.const(half_to_float) else None
        built = norm.build_softmax(ctx.tensor(x), int(ctx.const(dim)), dtype, log)
        return norm._emit(ctx, built)

    return handle


_entry(A._softmax.default)(_softmax(False))
_entry(A._log_softmax.default)(_softmax(True))


def _softmax_int(log: bool) -> Handler:
    def handle(ctx: Any, x: Any, dim: Any, dtype: Any = None) -> SSAValue:
        """`aten.softmax.int(x, dim, dtype=None)` (torch.export's training IR)."""
        built = norm.build_softmax(ctx.tensor(x), int(ctx.const(dim)), norm._dtype(ctx, dtype), log)
        return norm._emit(ctx, built)

    return handle


_entry(A.softmax.int)(_softmax_int(False))
_entry(A.log_softmax.int)(_softmax_int(True))


@_entry(A.layer_norm.default)
def _layer_norm(
    ctx: Any, x: Any, shape: Any, weight: Any = None, bias: Any = None, eps: Any = 1e-5,
    cudnn_enable: Any = True,
) -> SSAValue:  # fmt: skip
    """`aten.layer_norm.default` (torch.export's training IR): as `F.layer_norm`."""
    return norm._layer_norm(ctx, x, shape, weight, bias, eps)


# ---------------------------------------------------------------------- sizes


@_entry(A.sym_size.int)
def _sym_size(ctx: Any, x: Any, dim: Any) -> Any:
    """A size read in a graph with symbolic shapes is a runtime value
    (`aten.sym_size`); in a static graph it is a constant like `x.size(d)`."""
    if ctx.symbolic:
        return ctx.add_op(aten.SymSizeOp(ctx.tensor(x), ctx.const(dim))).results[0]
    ctx.bakes_size("a size read from an input")
    return ctx.constant(int(ctx.real[ctx.node]))

