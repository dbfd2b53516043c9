"""Eager PyTorch callables for `aten` ops, from plain data: no IR, no xDSL.

The host program runs every op it does not fuse through one of these. What an op's
callable needs of the IR (its name, its properties, which operands are tensors,
their ranks, its results' dtypes, a reshape's target sizes) is read once into an
`OpInfo` (`fusec.codegen.torch_ops.op_info`); the callable is made from that alone, so a
host program loaded from the warm-start cache makes the same callables from the
same data without importing xDSL:

    %r = aten.add %a, %b alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    OpInfo("aten.add", {"alpha": 2}, (True, True), (1, 1), ("float32",), None)
    step_callable(info)(a, b) == (torch.add(a, b, alpha=2),)

`OpInfo.to_json`/`OpInfo.from_json` are its cache entry form (JSON data).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from fusec.runtime.operands import TORCH_DTYPES

OpFn = Callable[..., tuple[Any, ...]]

DTYPE_BY_NAME: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d for d in TORCH_DTYPES.values()
}
"""The dtypes fusec handles, by torch's name (`float32`): how entries spell them."""


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class OpInfo:
    """What an op's eager callable depends on, as plain data."""

    name: str
    props: dict[str, Any]
    """Its properties as Python values (numbers, bools, strings, int lists)."""
    tensor_operands: tuple[bool, ...]
    operand_ranks: tuple[int | None, ...]
    """Per operand its rank, None for a scalar."""
    result_dtypes: tuple[str | None, ...]
    """Per result its torch dtype name, None for a scalar."""
    reshape: tuple[int, ...] | None = None
    """For view/reshape: the target sizes (`-1` where torch infers one)."""

    def prop(self, name: str, default: Any = None) -> Any:
        value = self.props.get(name)
        return default if value is None else value

    def result_dtype(self, i: int = 0) -> torch.dtype:
        name = self.result_dtypes[i]
        if name is None:
            raise ValueError(f"{self.name} result #{i} is not a tensor")
        return DTYPE_BY_NAME[name]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "props": self.props,
            "tensor_operands": list(self.tensor_operands),
            "operand_ranks": list(self.operand_ranks),
            "result_dtypes": list(self.result_dtypes),
            "reshape": None if self.reshape is None else list(self.reshape),
        }

    @staticmethod
    def from_json(d: dict[str, Any]) -> OpInfo:
        reshape = d["reshape"]
        return OpInfo(
            str(d["name"]),
            dict(d["props"]),
            tuple(bool(t) for t in d["tensor_operands"]),
            tuple(d["operand_ranks"]),
            tuple(d["result_dtypes"]),
            None if reshape is None else tuple(int(s) for s in reshape),
        )


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


def _binary(op: OpInfo) -> OpFn:
    fn = _BINARY[op.name]
    if not op.tensor_operands[0] and op.name in _SWAPPED:
        swapped = _SWAPPED[op.name]
        return lambda a, b: (swapped(b, a),)
    return lambda a, b: (fn(a, b),)


def _alpha(op: OpInfo) -> OpFn:
    fn = torch.add if op.name == "aten.add" else torch.sub
    alpha = op.prop("alpha")
    if alpha is None:
        return lambda a, b: (fn(a, b),)
    return lambda a, b: (fn(a, b, alpha=alpha),)


def _div(op: OpInfo) -> OpFn:
    mode = op.prop("rounding_mode")
    if mode is None:
        return lambda a, b: (torch.div(a, b),)
    return lambda a, b: (torch.div(a, b, rounding_mode=mode),)


def _to(op: OpInfo) -> OpFn:
    dtype = op.result_dtype()
    # A same-dtype `aten.to` is a copy (`contiguous()` of a non-contiguous tensor,
    # ATen's `clone`): `x.to(x.dtype)` would hand back x, and a write to the
    # result would reach x. Row-major, as a kernel writes it: a `view` of the copy
    # (run as `reshape`) must be a view, so that writes through it reach the copy.
    fmt = torch.contiguous_format
    return lambda x: (x.to(dtype, copy=True, memory_format=fmt),)


def _clamp(op: OpInfo) -> OpFn:
    lo, hi = op.prop("min"), op.prop("max")
    return lambda x: (torch.clamp(x, lo, hi),)


def _leaky_relu(op: OpInfo) -> OpFn:
    slope = op.prop("negative_slope", 0.01)
    return lambda x: (F.leaky_relu(x, slope),)


def _gelu(op: OpInfo) -> OpFn:
    approximate = op.prop("approximate", "none")
    return lambda x: (F.gelu(x, approximate=approximate),)


def _expand(op: OpInfo) -> OpFn:
    size = op.prop("size")
    return lambda x: (x.expand(size),)


def _reshape(op: OpInfo) -> OpFn:
    # `view` runs as `reshape`: a view wherever one exists (same aliasing), a copy
    # only where fusec hands over another layout than eager had (a kernel's output
    # is row-major where eager's op kept its input's strides).
    shape = op.reshape
    return lambda x: (x.reshape(shape),)


def _unsqueeze(op: OpInfo) -> OpFn:
    dim = op.prop("dim")
    return lambda x: (x.unsqueeze(dim),)


def _squeeze(op: OpInfo) -> OpFn:
    dim = op.prop("dim")
    if dim is None:
        return lambda x: (x.squeeze(),)
    return lambda x: (x.squeeze(dim),)


def _permute(op: OpInfo) -> OpFn:
    dims = op.prop("dims")
    return lambda x: (x.permute(dims),)


def _transpose(op: OpInfo) -> OpFn:
    a, b = op.prop("dim0"), op.prop("dim1")
    return lambda x: (x.transpose(a, b),)


def _chunk(op: OpInfo) -> OpFn:
    chunks, dim = op.prop("chunks"), op.prop("dim")
    return lambda x: tuple(torch.chunk(x, chunks, dim))


def _split(op: OpInfo) -> OpFn:
    dim = op.prop("dim")
    sizes = op.prop("sizes")
    arg: int | list[int] = sizes if sizes is not None else op.prop("split_size")
    return lambda x: tuple(torch.split(x, arg, dim))


def _cat(op: OpInfo) -> OpFn:
    dim = op.prop("dim")
    return lambda *xs: (torch.cat(xs, dim),)


def _narrow(op: OpInfo) -> OpFn:
    dim, start, length = op.prop("dim"), op.prop("start"), op.prop("length")
    return lambda x: (x.narrow(dim, start, length),)


def _slice(op: OpInfo) -> OpFn:
    rank = op.operand_ranks[0]
    assert rank is not None
    dim = op.prop("dim")
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise ValueError(f"aten.slice: dim {dim} out of range for rank {rank}")
    dim = dim % max(rank, 1)
    index = (slice(None),) * dim + (slice(op.prop("start"), op.prop("end"), op.prop("step")),)
    return lambda x: (x[index],)


def _addmm(op: OpInfo) -> OpFn:
    beta, alpha = op.prop("beta", 1), op.prop("alpha", 1)
    return lambda c, a, b: (torch.addmm(c, a, b, beta=beta, alpha=alpha),)


def _reduction(op: OpInfo) -> OpFn:
    fn = torch.sum if op.name == "aten.sum" else torch.mean
    rank = op.operand_ranks[0] or 0
    dims = op.prop("dims") or list(range(rank))
    keep = bool(op.prop("keepdim", False))
    dtype = op.result_dtype()
    if not dims:
        return lambda x: (fn(x, dtype=dtype),)
    return lambda x: (fn(x, dims, keepdim=keep, dtype=dtype),)


def _extremum(op: OpInfo) -> OpFn:
    fn = torch.amax if op.name == "aten.amax" else torch.amin
    dims = op.prop("dims") or []
    keep = bool(op.prop("keepdim", False))
    return lambda x: (fn(x, dims, keepdim=keep),)


def _variance(op: OpInfo) -> OpFn:
    fn = torch.var if op.name == "aten.var" else torch.std
    dims = op.prop("dims")
    keep = bool(op.prop("keepdim", False))
    correction = op.prop("correction", 1)
    return lambda x: (fn(x, dims, correction=correction, keepdim=keep),)


def _softmax(op: OpInfo) -> OpFn:
    fn = torch.softmax if op.name == "aten.softmax" else torch.log_softmax
    dim = op.prop("dim")
    dtype = op.result_dtype()
    return lambda x: (fn(x, dim, dtype=dtype),)


def _layer_norm(op: OpInfo) -> OpFn:
    shape = op.prop("normalized_shape")
    eps = op.prop("eps")
    has_weight = bool(op.prop("has_weight", True))

    def layer_norm(x: torch.Tensor, *params: torch.Tensor) -> tuple[torch.Tensor]:
        w = params[0] if has_weight and params else None
        b = params[-1] if len(params) == 2 or (params and not has_weight) else None
        return (F.layer_norm(x, shape, w, b, eps),)

    return layer_norm


def _gather(op: OpInfo) -> OpFn:
    dim = op.prop("dim")
    return lambda x, index: (torch.gather(x, dim, index),)


def _copy(op: OpInfo) -> OpFn:
    def copy(dst: torch.Tensor, src: Any) -> tuple[()]:
        if isinstance(src, torch.Tensor):
            dst.copy_(src)
        else:  # a Python scalar: `Tensor.copy_` takes tensors only
            dst.fill_(src)
        return ()

    return copy


def _sym_size(op: OpInfo) -> OpFn:
    dim = op.prop("dim")
    return lambda x: (x.size(dim),)


def _full_like(op: OpInfo) -> OpFn:
    value, dtype = op.prop("value"), op.result_dtype()
    return lambda x: (torch.full_like(x, value, dtype=dtype),)


def _positions(op: OpInfo) -> OpFn:
    dim = op.prop("dim")
    return lambda x: (torch.arange(x.size(dim), dtype=torch.int32, device=x.device),)


def _broadcast_sizes(op: OpInfo) -> OpFn:
    return lambda *sizes: (torch.Size(torch.broadcast_shapes(*sizes)),)


_BUILDERS: dict[str, Callable[[OpInfo], OpFn]] = {
    "aten.add": _alpha,
    "aten.sub": _alpha,
    "aten.div": _div,
    "aten.to": _to,
    "aten.clamp": _clamp,
    "aten.leaky_relu": _leaky_relu,
    "aten.gelu": _gelu,
    "aten.where": lambda op: _one(torch.where),
    "aten.expand": _expand,
    "aten.view": _reshape,
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
    "aten.full_like": _full_like,
    "aten.positions": _positions,
    "fusion.broadcast_sizes": _broadcast_sizes,
    "fusion.zeros_like": lambda op: (
        lambda x: (torch.zeros_like(x, memory_format=torch.contiguous_format),)
    ),
}
for _name, _fn in _UNARY.items():
    _BUILDERS[_name] = lambda op, fn=_fn: _one(fn)
for _name in _BINARY:
    _BUILDERS[_name] = _binary

RESHAPE_OPS = ("aten.view", "aten.reshape")
"""Ops whose `OpInfo.reshape` holds their target sizes."""


def has_step(name: str) -> bool:
    return name in _BUILDERS


def step_callable(op: OpInfo) -> OpFn:
    """An eager callable for the op `op` describes, over its runtime operands,
    returning a tuple; `KeyError` for an op without one."""
    try:
        builder = _BUILDERS[op.name]
    except KeyError:
        raise KeyError(f"no eager PyTorch implementation for {op.name}") from None
    return builder(op)
