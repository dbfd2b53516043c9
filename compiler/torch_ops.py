"""Eager PyTorch for every `aten` op: how the host program runs what is not fused.

`torch_callable(op)` reads an op's properties and operand types once and returns a
plain Python callable over the op's runtime operands that returns its results as a
tuple, so the per-call path does no IR inspection at all:

    %r = aten.add %a, %b alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    torch_callable(op)(a, b) == (torch.add(a, b, alpha=2),)

Ops this table does not know (`KeyError`) have no eager meaning; `aten.opaque` is
run by the program itself, which keeps the original PyTorch target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from fusec.dialects import inference as inf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation

TORCH_DTYPES: dict[Attribute, torch.dtype] = {
    inf.BOOL: torch.bool,
    inf.U8: torch.uint8,
    inf.I8: torch.int8,
    inf.I16: torch.int16,
    inf.I32: torch.int32,
    inf.I64: torch.int64,
    inf.F16: torch.float16,
    inf.BF16: torch.bfloat16,
    inf.F32: torch.float32,
    inf.F64: torch.float64,
}
"""fusec element type -> torch dtype."""

DTYPES_OF_TORCH: dict[torch.dtype, Attribute] = {v: k for k, v in TORCH_DTYPES.items()}
"""torch dtype -> fusec element type."""

OpFn = Callable[..., tuple[Any, ...]]


def torch_dtype(t: Attribute) -> torch.dtype:
    """The torch dtype of a tensor type or element type."""
    return TORCH_DTYPES[inf.element_type(t)]


def _prop(op: Operation, name: str, default: Any = None) -> Any:
    attr = op.properties.get(name)
    if attr is None:
        return default
    if isinstance(attr, FloatAttr | IntegerAttr):
        value = attr.value.data
        if isinstance(attr, IntegerAttr) and attr.type == inf.BOOL:
            return bool(value)
        return value
    if hasattr(attr, "data"):
        return attr.data
    return attr


def _ints(op: Operation, name: str) -> list[int] | None:
    attr = op.properties.get(name)
    return None if attr is None else list(attr.get_values())  # type: ignore[union-attr]


def _shape(t: Attribute) -> tuple[int, ...]:
    """A reshape's target sizes (a dynamic dim, at most one as the verifier
    requires, is torch's `-1`)."""
    assert isinstance(t, TensorType)
    return inf.reshape_sizes(t.get_shape())


def _one(fn: Callable[..., Any]) -> OpFn:
    return lambda *xs: (fn(*xs),)


_UNARY: dict[str, Callable[[Any], Any]] = {
    "aten.neg": torch.neg,
    "aten.abs": torch.abs,
    "aten.relu": torch.relu,
    "aten.exp": torch.exp,
    "aten.expm1": torch.expm1,
    "aten.log": torch.log,
    "aten.log1p": torch.log1p,
    "aten.sqrt": torch.sqrt,
    "aten.rsqrt": torch.rsqrt,
    "aten.reciprocal": torch.reciprocal,
    "aten.sigmoid": torch.sigmoid,
    "aten.tanh": torch.tanh,
    "aten.silu": F.silu,
    "aten.erf": torch.erf,
    "aten.sin": torch.sin,
    "aten.cos": torch.cos,
    "aten.logical_not": torch.logical_not,
}

_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "aten.mul": torch.mul,
    "aten.pow": torch.pow,
    "aten.maximum": torch.maximum,
    "aten.minimum": torch.minimum,
    "aten.eq": torch.eq,
    "aten.ne": torch.ne,
    "aten.lt": torch.lt,
    "aten.le": torch.le,
    "aten.gt": torch.gt,
    "aten.ge": torch.ge,
    "aten.logical_and": torch.logical_and,
    "aten.logical_or": torch.logical_or,
    "aten.logical_xor": torch.logical_xor,
}

# torch's comparisons and logical ops take a tensor first; a Python scalar on the
# left swaps sides (mirroring the comparison).
_SWAPPED: dict[str, Callable[[Any, Any], Any]] = {
    "aten.eq": torch.eq,
    "aten.ne": torch.ne,
    "aten.lt": torch.gt,
    "aten.le": torch.ge,
    "aten.gt": torch.lt,
    "aten.ge": torch.le,
    "aten.logical_and": torch.logical_and,
    "aten.logical_or": torch.logical_or,
    "aten.logical_xor": torch.logical_xor,
}


def _binary(op: Operation) -> OpFn:
    fn = _BINARY[op.name]
    if not isinstance(op.operands[0].type, TensorType) and op.name in _SWAPPED:
        swapped = _SWAPPED[op.name]
        return lambda a, b: (swapped(b, a),)
    return lambda a, b: (fn(a, b),)


def _alpha(op: Operation) -> OpFn:
    fn = torch.add if op.name == "aten.add" else torch.sub
    alpha = _prop(op, "alpha")
    if alpha is None:
        return lambda a, b: (fn(a, b),)
    return lambda a, b: (fn(a, b, alpha=alpha),)


def _div(op: Operation) -> OpFn:
    mode = _prop(op, "rounding_mode")
    if mode is None:
        return lambda a, b: (torch.div(a, b),)
    return lambda a, b: (torch.div(a, b, rounding_mode=mode),)


def _to(op: Operation) -> OpFn:
    dtype = torch_dtype(op.results[0].type)
    return lambda x: (x.to(dtype),)


def _clamp(op: Operation) -> OpFn:
    lo, hi = _prop(op, "min"), _prop(op, "max")
    return lambda x: (torch.clamp(x, lo, hi),)


def _leaky_relu(op: Operation) -> OpFn:
    slope = _prop(op, "negative_slope", 0.01)
    return lambda x: (F.leaky_relu(x, slope),)


def _gelu(op: Operation) -> OpFn:
    approximate = _prop(op, "approximate", "none")
    return lambda x: (F.gelu(x, approximate=approximate),)


def _expand(op: Operation) -> OpFn:
    size = _ints(op, "size")
    return lambda x: (x.expand(size),)


def _view(op: Operation) -> OpFn:
    # `reshape` is `view` wherever a view exists (same aliasing) and copies only
    # where fusec hands over another layout than eager had: `contiguous()` imports
    # as the value itself, and a same-dtype `aten.to` (ATen's
    # `clone(memory_format=contiguous)`) runs as a no-op.
    shape = _shape(op.results[0].type)
    return lambda x: (x.reshape(shape),)


def _reshape(op: Operation) -> OpFn:
    shape = _shape(op.results[0].type)
    return lambda x: (x.reshape(shape),)


def _unsqueeze(op: Operation) -> OpFn:
    dim = _prop(op, "dim")
    return lambda x: (x.unsqueeze(dim),)


def _squeeze(op: Operation) -> OpFn:
    dim = _prop(op, "dim")
    if dim is None:
        return lambda x: (x.squeeze(),)
    return lambda x: (x.squeeze(dim),)


def _permute(op: Operation) -> OpFn:
    dims = _ints(op, "dims")
    return lambda x: (x.permute(dims),)


def _transpose(op: Operation) -> OpFn:
    a, b = _prop(op, "dim0"), _prop(op, "dim1")
    return lambda x: (x.transpose(a, b),)


def _chunk(op: Operation) -> OpFn:
    chunks, dim = _prop(op, "chunks"), _prop(op, "dim")
    return lambda x: tuple(torch.chunk(x, chunks, dim))


def _split(op: Operation) -> OpFn:
    dim = _prop(op, "dim")
    sizes = _ints(op, "sizes")
    arg: int | list[int] = sizes if sizes is not None else _prop(op, "split_size")
    return lambda x: tuple(torch.split(x, arg, dim))


def _cat(op: Operation) -> OpFn:
    dim = _prop(op, "dim")
    return lambda *xs: (torch.cat(xs, dim),)


def _narrow(op: Operation) -> OpFn:
    dim, start, length = _prop(op, "dim"), _prop(op, "start"), _prop(op, "length")
    return lambda x: (x.narrow(dim, start, length),)


def _slice(op: Operation) -> OpFn:
    t = op.operands[0].type
    assert isinstance(t, TensorType)
    dim = inf.normalize_dim(_prop(op, "dim"), t.get_num_dims())
    index = (slice(None),) * dim + (slice(_prop(op, "start"), _prop(op, "end"), _prop(op, "step")),)
    return lambda x: (x[index],)


def _addmm(op: Operation) -> OpFn:
    beta, alpha = _prop(op, "beta", 1), _prop(op, "alpha", 1)
    return lambda c, a, b: (torch.addmm(c, a, b, beta=beta, alpha=alpha),)


def _reduction(op: Operation) -> OpFn:
    fn = torch.sum if op.name == "aten.sum" else torch.mean
    t = op.operands[0].type
    assert isinstance(t, TensorType)
    dims = _ints(op, "dims") or list(range(t.get_num_dims()))
    keep = bool(_prop(op, "keepdim", False))
    dtype = torch_dtype(op.results[0].type)
    if not dims:
        return lambda x: (fn(x, dtype=dtype),)
    return lambda x: (fn(x, dims, keepdim=keep, dtype=dtype),)


def _extremum(op: Operation) -> OpFn:
    fn = torch.amax if op.name == "aten.amax" else torch.amin
    dims = _ints(op, "dims") or []
    keep = bool(_prop(op, "keepdim", False))
    return lambda x: (fn(x, dims, keepdim=keep),)


def _variance(op: Operation) -> OpFn:
    fn = torch.var if op.name == "aten.var" else torch.std
    dims = _ints(op, "dims")
    keep = bool(_prop(op, "keepdim", False))
    correction = _prop(op, "correction", 1)
    return lambda x: (fn(x, dims, correction=correction, keepdim=keep),)


def _softmax(op: Operation) -> OpFn:
    fn = torch.softmax if op.name == "aten.softmax" else torch.log_softmax
    dim = _prop(op, "dim")
    dtype = torch_dtype(op.results[0].type)
    return lambda x: (fn(x, dim, dtype=dtype),)


def _layer_norm(op: Operation) -> OpFn:
    shape = _ints(op, "normalized_shape")
    eps = _prop(op, "eps")
    has_weight = bool(_prop(op, "has_weight", True))

    def layer_norm(x: torch.Tensor, *params: torch.Tensor) -> tuple[torch.Tensor]:
        w = params[0] if has_weight and params else None
        b = params[-1] if len(params) == 2 or (params and not has_weight) else None
        return (F.layer_norm(x, shape, w, b, eps),)

    return layer_norm


def _gather(op: Operation) -> OpFn:
    dim = _prop(op, "dim")
    return lambda x, index: (torch.gather(x, dim, index),)


def _copy(op: Operation) -> OpFn:
    def copy(dst: torch.Tensor, src: Any) -> tuple[()]:
        if isinstance(src, torch.Tensor):
            dst.copy_(src)
        else:  # a Python scalar: `Tensor.copy_` takes tensors only
            dst.fill_(src)
        return ()

    return copy


def _sym_size(op: Operation) -> OpFn:
    dim = _prop(op, "dim")
    return lambda x: (x.size(dim),)


def _broadcast_sizes(op: Operation) -> OpFn:
    return lambda *sizes: (torch.Size(torch.broadcast_shapes(*sizes)),)


_BUILDERS: dict[str, Callable[[Operation], OpFn]] = {
    "aten.add": _alpha,
    "aten.sub": _alpha,
    "aten.div": _div,
    "aten.to": _to,
    "aten.clamp": _clamp,
    "aten.leaky_relu": _leaky_relu,
    "aten.gelu": _gelu,
    "aten.where": lambda op: _one(torch.where),
    "aten.expand": _expand,
    "aten.view": _view,
    "aten.reshape": _reshape,
    "aten.unsqueeze": _unsqueeze,
    "aten.squeeze": _squeeze,
    "aten.permute": _permute,
    "aten.transpose": _transpose,
    "aten.chunk": _chunk,
    "aten.split": _split,
    "aten.cat": _cat,
    "aten.narrow": _narrow,
    "aten.slice": _slice,
    "aten.matmul": lambda op: _one(torch.matmul),
    "aten.mm": lambda op: _one(torch.mm),
    "aten.addmm": _addmm,
    "aten.linear": lambda op: _one(F.linear),
    "aten.sum": _reduction,
    "aten.mean": _reduction,
    "aten.amax": _extremum,
    "aten.amin": _extremum,
    "aten.var": _variance,
    "aten.std": _variance,
    "aten.softmax": _softmax,
    "aten.log_softmax": _softmax,
    "aten.layer_norm": _layer_norm,
    "aten.gather": _gather,
    "aten.copy_": _copy,
    "aten.size": lambda op: lambda x: (x.shape,),
    "aten.sym_size": _sym_size,
    "fusion.broadcast_sizes": _broadcast_sizes,
    "fusion.zeros_like": lambda op: (
        lambda x: (torch.zeros_like(x, memory_format=torch.contiguous_format),)
    ),
}
for _name, _fn in _UNARY.items():
    _BUILDERS[_name] = lambda op, fn=_fn: _one(fn)
for _name in _BINARY:
    _BUILDERS[_name] = _binary


def has_torch_callable(op: Operation) -> bool:
    return op.name in _BUILDERS


def torch_callable(op: Operation) -> OpFn:
    """An eager callable for `op` over its runtime operands, returning a tuple."""
    try:
        builder = _BUILDERS[op.name]
    except KeyError:
        raise KeyError(f"no eager PyTorch implementation for {op.name}") from None
    return builder(op)


SHAPE_BAKING_OPS: Sequence[str] = ("aten.view", "aten.reshape", "aten.expand", "aten.split")
"""Ops whose eager form carries sizes from the example inputs: a program with one
of them is specialized on exact input shapes, not just their broadcast pattern."""
