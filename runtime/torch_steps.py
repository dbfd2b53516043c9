"""Eager PyTorch callables for ops the host runs unfused, from plain data: no
IR, no xDSL, no op names.

What an op's callable needs of the IR (its properties, which operands are
tensors, their ranks, its results' dtypes, a reshape's target sizes) and which
PyTorch call runs it (a `TorchStep`: the shape of the call and the torch
callables, by dotted name) are read once into an `OpInfo` by the compiler
(`fusec.codegen.torch_ops.op_info`, whose `TORCH_STEPS` registry is keyed by
op class);
the callable is made from that alone, so a host program loaded from the
warm-start cache makes the same callables from the same data without importing
xDSL:

    %r = aten.add %a, %b alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    OpInfo("aten.add", {"alpha": 2}, (True, True), (1, 1), ("float32",), None,
           TorchStep("alpha", "torch.add"))
    step_callable(info)(a, b) == (torch.add(a, b, alpha=2),)

`OpInfo.name` is for messages only. `OpInfo.to_json`/`OpInfo.from_json` are its
cache entry form (JSON data).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from fusec.runtime import cpu_pool, pooled_products
from fusec.runtime.operands import TORCH_DTYPES
from fusec.runtime.pooled_products import SMALL_PRODUCT

OpFn = Callable[..., tuple[Any, ...]]

DTYPE_BY_NAME: dict[str, torch.dtype] = {
    str(d).removeprefix("torch."): d for d in TORCH_DTYPES.values()
}
"""The dtypes fusec handles, by torch's name (`float32`): how entries spell them."""


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class TorchStep:
    """Which PyTorch call runs an op, as plain data: `kind` names the shape of
    the call (a key of `_BUILDERS`), `fn` the torch callable it makes it with
    (`"torch.add"`, `"torch.nn.functional.silu"`), and for a binary op whose
    tensor may come second, `swapped` the one called with the operands swapped
    (`torch.lt(2, x)` does not exist: `torch.gt(x, 2)`)."""

    kind: str
    fn: str | None = None
    swapped: str | None = None

    def to_json(self) -> list[str | None]:
        return [self.kind, self.fn, self.swapped]

    @staticmethod
    def from_json(d: list[str | None]) -> TorchStep:
        kind, fn, swapped = d
        assert kind is not None
        return TorchStep(kind, fn, swapped)


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
    step: TorchStep = TorchStep("call")
    """The PyTorch call that runs the op."""

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
            "step": self.step.to_json(),
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
            TorchStep.from_json(d["step"]),
        )


@functools.cache
def torch_function(name: str) -> Callable[..., Any]:
    """The torch callable a dotted name under `torch` names (`"torch.nn.functional.gelu"`)."""
    first, *rest = name.split(".")
    if first != "torch" or not rest:
        raise ValueError(f"not a torch callable: {name!r}")
    fn: Any = torch
    for part in rest:
        fn = getattr(fn, part)
    if not callable(fn):
        raise ValueError(f"not a torch callable: {name!r}")
    return fn


def _fn(op: OpInfo) -> Callable[..., Any]:
    if op.step.fn is None:
        raise ValueError(f"{op.name}: its {op.step.kind!r} step names no torch callable")
    return torch_function(op.step.fn)


def _call(op: OpInfo) -> OpFn:
    fn = _fn(op)
    return lambda *xs: (fn(*xs),)


def _binary(op: OpInfo) -> OpFn:
    # torch's comparisons and logical ops take a tensor first; a Python scalar on
    # the left swaps sides (mirroring the comparison).
    if not op.tensor_operands[0] and op.step.swapped is not None:
        swapped = torch_function(op.step.swapped)
        return lambda a, b: (swapped(b, a),)
    fn = _fn(op)
    return lambda a, b: (fn(a, b),)


def _alpha(op: OpInfo) -> OpFn:
    fn = _fn(op)
    alpha = op.prop("alpha")
    if alpha is None:
        return lambda a, b: (fn(a, b),)
    return lambda a, b: (fn(a, b, alpha=alpha),)


def _rounding(op: OpInfo) -> OpFn:
    fn = _fn(op)
    mode = op.prop("rounding_mode")
    if mode is None:
        return lambda a, b: (fn(a, b),)
    return lambda a, b: (fn(a, b, rounding_mode=mode),)


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


def _dispatched_reinterpret(
    x: torch.Tensor, size: Sequence[int], stride: Sequence[int], offset: int
) -> torch.Tensor:
    return x.as_strided(size, stride, x.storage_offset() + offset)


reinterpret: Callable[[torch.Tensor, Sequence[int], Sequence[int], int], torch.Tensor] = (
    cpu_pool._reinterpret or _dispatched_reinterpret
)
"""`reinterpret(x, size, stride, offset)`: a view of `x`'s storage with these
sizes and strides, `offset` elements past `x`'s storage offset. Torch's own entry
for generated code (Inductor's `reinterpret_tensor`): no argument parser, no
dispatch, no ATen call (0.7 us where `view` takes 1-1.5 us); falls back to
`as_strided` on a torch without it. Like Inductor's, the view has no `_base`
and no autograd history: the compiler uses it only where neither is seen."""


def _reinterpret(op: OpInfo) -> OpFn:
    # A chain of views over one root, computed when the program was built
    # (`fusec.codegen.view_layouts`): one step per op, each result made from the root.
    views = [(tuple(size), tuple(stride), int(offset)) for size, stride, offset in op.prop("views")]
    if len(views) == 1:
        ((size, stride, offset),) = views
        return lambda x: (reinterpret(x, size, stride, offset),)
    return lambda x: tuple(reinterpret(x, size, stride, offset) for size, stride, offset in views)


def _narrow(op: OpInfo) -> OpFn:
    dim, start, length = op.prop("dim"), op.prop("start"), op.prop("length")
    return lambda x: (x.narrow(dim, start, length),)


def _slice(op: OpInfo) -> OpFn:
    rank = op.operand_ranks[0]
    assert rank is not None
    dim = op.prop("dim")
    if not -max(rank, 1) <= dim < max(rank, 1):
        raise ValueError(f"{op.name}: dim {dim} out of range for rank {rank}")
    dim = dim % max(rank, 1)
    index = (slice(None),) * dim + (slice(op.prop("start"), op.prop("end"), op.prop("step")),)
    return lambda x: (x[index],)


def _addmm(op: OpInfo) -> OpFn:
    beta, alpha = op.prop("beta", 1), op.prop("alpha", 1)
    return lambda c, a, b: (torch.addmm(c, a, b, beta=beta, alpha=alpha),)


def _reduction(op: OpInfo) -> OpFn:
    fn = _fn(op)
    rank = op.operand_ranks[0] or 0
    dims = op.prop("dims") or list(range(rank))
    keep = bool(op.prop("keepdim", False))
    dtype = op.result_dtype()
    if not dims:
        return lambda x: (fn(x, dtype=dtype),)
    return lambda x: (fn(x, dims, keepdim=keep, dtype=dtype),)


def _extremum(op: OpInfo) -> OpFn:
    fn = _fn(op)
    dims = op.prop("dims") or []
    keep = bool(op.prop("keepdim", False))
    return lambda x: (fn(x, dims, keepdim=keep),)


def _variance(op: OpInfo) -> OpFn:
    fn = _fn(op)
    dims = op.prop("dims")
    keep = bool(op.prop("keepdim", False))
    correction = op.prop("correction", 1)
    return lambda x: (fn(x, dims, correction=correction, keepdim=keep),)


def _softmax(op: OpInfo) -> OpFn:
    fn = _fn(op)
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


def _attention(op: OpInfo) -> OpFn:
    scale = op.prop("scale")
    causal = bool(op.prop("is_causal", False))

    def attention(
        q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *mask: torch.Tensor
    ) -> tuple[torch.Tensor]:
        m = mask[0] if mask else None
        return (F.scaled_dot_product_attention(q, k, v, m, is_causal=causal, scale=scale),)

    return attention


def _gather(op: OpInfo) -> OpFn:
    dim = op.prop("dim")
    return lambda x, index: (torch.gather(x, dim, index),)


def _embedding(op: OpInfo) -> OpFn:
    return lambda weight, indices: (torch.embedding(weight, indices),)


def _product(plain: Callable[..., Any], pooled: Callable[..., Any]) -> Callable[[OpInfo], OpFn]:
    """A matrix product's builder: the plain call where the op's static result is
    small (`SMALL_PRODUCT`), else the call that writes a large result into the
    output pool (`fusec.runtime.pooled_products`)."""

    def build(op: OpInfo) -> OpFn:
        fn = plain if op.props.get(SMALL_PRODUCT) else pooled
        return lambda *xs: (fn(*xs),)

    return build


def _foreach_copy(op: OpInfo) -> OpFn:
    n = len(op.tensor_operands) // 2

    def copy(*tensors: torch.Tensor) -> tuple[()]:
        torch._foreach_copy_(list(tensors[:n]), list(tensors[n:]))
        return ()

    return copy


def _foreach_add(op: OpInfo) -> OpFn:
    value = op.prop("value")

    def add(*tensors: torch.Tensor) -> tuple[()]:
        torch._foreach_add_(list(tensors), value)
        return ()

    return add


def _embedding_dense_backward(op: OpInfo) -> OpFn:
    rows, padding = op.prop("num_weights"), op.prop("padding_idx")
    backward = torch.ops.aten.embedding_dense_backward.default
    return lambda grad, indices: (backward(grad, indices, rows, padding, False),)


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


def reused_result(fn: Callable[..., Sequence[Any]]) -> Callable[..., Sequence[Any]]:
    """`fn`, a call of constant arguments whose results only reads see (an
    `arange` of static bounds read by kernels): its first results serve every
    later call (one pair per inference-mode state: an inference tensor cannot
    be saved for a backward)."""
    held: list[tuple[bool, Sequence[Any]]] = []

    def run(*args: Any) -> Sequence[Any]:
        key = torch.is_inference_mode_enabled()
        if held and held[0][0] == key:
            return held[0][1]
        out = fn(*args)
        held[:] = [(key, out)]
        return out

    return run


REUSED_ZEROS = "reused"
"""The `OpInfo` property of a `zeros_like` whose result is only read by what
follows (kernels, guards, pointwise ops): one tensor serves every call."""


def _zeros_like(op: OpInfo) -> OpFn:
    if not op.props.get(REUSED_ZEROS):
        return lambda x: (torch.zeros_like(x, memory_format=torch.contiguous_format),)
    # A shared kernel fed zeros (`share-group-kernels`) would otherwise pay an
    # ATen call and a fill of the whole tensor every call.
    held: list[tuple[Any, torch.Tensor]] = []

    def run(x: torch.Tensor) -> tuple[Any, ...]:
        key = (x.shape, x.dtype, x.device, torch.is_inference_mode_enabled())
        if held and held[-1][0] == key:
            return (held[-1][1],)
        zeros = torch.zeros_like(x, memory_format=torch.contiguous_format)
        held[:] = [(key, zeros)]
        return (zeros,)

    return run


_BUILDERS: dict[str, Callable[[OpInfo], OpFn]] = {
    "call": _call,
    "binary": _binary,
    "alpha": _alpha,
    "rounding": _rounding,
    "to": _to,
    "clamp": _clamp,
    "leaky_relu": _leaky_relu,
    "gelu": _gelu,
    "attention": _attention,
    "expand": _expand,
    "reshape": _reshape,
    "unsqueeze": _unsqueeze,
    "squeeze": _squeeze,
    "permute": _permute,
    "transpose": _transpose,
    "chunk": _chunk,
    "split": _split,
    "cat": _cat,
    "narrow": _narrow,
    "slice": _slice,
    "reinterpret": _reinterpret,
    "contiguous": lambda op: lambda *xs: tuple(x.contiguous() for x in xs),
    "addmm": _addmm,
    "reduction": _reduction,
    "extremum": _extremum,
    "variance": _variance,
    "softmax": _softmax,
    "layer_norm": _layer_norm,
    "gather": _gather,
    "embedding": _embedding,
    "embedding_dense_backward": _embedding_dense_backward,
    "copy": _copy,
    "foreach_copy": _foreach_copy,
    "linear": _product(F.linear, pooled_products.linear),
    "mm": _product(torch.mm, pooled_products.mm),
    "foreach_add": _foreach_add,
    "size": lambda op: lambda x: (x.shape,),
    "sym_size": _sym_size,
    "full_like": _full_like,
    "positions": _positions,
    "broadcast_sizes": _broadcast_sizes,
    "zeros_like": _zeros_like,
}
"""`TorchStep.kind` -> the builder of a callable from an `OpInfo`."""

STEP_KINDS = frozenset(_BUILDERS)


def step_callable(op: OpInfo) -> OpFn:
    """An eager callable for the op `op` describes, over its runtime operands,
    returning a tuple; `KeyError` for a step kind without a builder."""
    try:
        builder = _BUILDERS[op.step.kind]
    except KeyError:
        raise KeyError(f"{op.name}: no eager PyTorch step of kind {op.step.kind!r}") from None
    fn = builder(op)
    return learned(fn) if op.props.get(LEARN_VIEW) else fn


LEARN_VIEW = "learn_view"
"""The `OpInfo` property that makes a view op's step `learned`."""


def learned(fn: OpFn) -> OpFn:
    """A view op's step over an input of fixed sizes (a program specialized on
    exact shapes) whose strides are not known when it is built: the first call
    runs `fn` and records the views it made (sizes, strides, offset from the
    input's); later calls with the same input strides make them with
    `reinterpret`, without a PyTorch call. An op that copied (a `reshape` no view
    can make) keeps running `fn`.

        step = learned(lambda x: (x.transpose(1, 2),))
        step(a)   # x.transpose: learns ((2, 4, 8), (32, 1, 4), 0)
        step(b)   # same strides as a: reinterpret(b, (2, 4, 8), (32, 1, 4), 0)
    """
    seen: tuple[Any, Any] = ((), None)
    """The input strides learned from, and the views (None: `fn` copied)."""

    def run(x: torch.Tensor) -> tuple[Any, ...]:
        nonlocal seen
        strides, views = seen
        if x.stride() == strides:
            if views is None:
                return fn(x)
            return tuple(reinterpret(x, size, stride, offset) for size, stride, offset in views)
        outs = fn(x)
        base, start = x.untyped_storage().data_ptr(), x.storage_offset()
        if all(o.untyped_storage().data_ptr() == base for o in outs):
            views = tuple((o.shape, o.stride(), o.storage_offset() - start) for o in outs)
        else:
            views = None
        seen = (x.stride(), views)
        return outs

    return run
