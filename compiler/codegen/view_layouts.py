"""Views the host program makes from sizes and strides, with no PyTorch call.

A view op the host runs (view, reshape, transpose, permute, squeeze, unsqueeze,
expand, slice, narrow, split, chunk) is a PyTorch call per view: 1-1.5 us of
argument parsing and dispatch each, and GPT-2's forward has dozens. Where the
layout of the tensor it reads is known when the program is built, the layout of
the view is too, and the host makes it as Inductor's wrappers do, from sizes,
strides and an offset into the storage of the tensor the chain of views starts
from (its root), with no dispatch (`fusec.runtime.torch_steps`'s `reinterpret`
step):

    %mm = aten.mm %a, %w : ... -> tensor<16x96xf32>       root: (16, 96) (96, 1) +0
    %v = aten.view %mm : ... -> tensor<2x8x96xf32>           (2, 8, 96) (768, 96, 1) +0
    %q, %k, %u = aten.split %v split_size = 32 dim = 2     +0, +32, +64 of %mm
    %h = aten.view %k : ... -> tensor<2x8x4x8xf32>           (2, 8, 4, 8) (768, 96, 8, 1) +32
    %t = aten.transpose %h dim0 = 1 dim1 = 2                 (2, 4, 8, 8) (768, 8, 96, 1) +32

    step reinterpret %mm (2, 4, 8, 8) (768, 8, 96, 1) +32 -> %t   (the views between
                                                                   are dropped when unused)

A root is a tensor whose layout is fixed by how it is made: a kernel's output
(allocated contiguous, shapes static and not empty, so the kernel never declines),
a matrix product's result (`mm`, `addmm`, `linear`, `matmul`: ATen allocates it
contiguous, or views a contiguous `mm` result whole), a copy (`aten.to`, made
contiguous), or a program argument the specialization key says
is contiguous. Layouts are computed only for programs specialized on exact
shapes: a program its guards serve at other sizes cannot bake strides. A
`reshape` whose strides do not allow a view stays a PyTorch call (it copies).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.fusion import GroupOp
from fusec.runtime.operands import contiguous_strides
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue


@dataclass(frozen=True)
class Layout:
    """A tensor as a view of `root`'s storage: `offset` elements past the root's
    own storage offset."""

    root: SSAValue
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int


VIEW_OPS: tuple[type[Operation], ...] = (
    aten.ViewOp,
    aten.ReshapeOp,
    aten.TransposeOp,
    aten.PermuteOp,
    aten.SqueezeOp,
    aten.UnsqueezeOp,
    aten.ExpandOp,
    aten.SliceOp,
    aten.NarrowOp,
    aten.SplitOp,
    aten.ChunkOp,
)
"""Ops whose results are views of their input (a `reshape` only where it can be)."""


def static_shape(t: object) -> tuple[int, ...] | None:
    """The sizes of a tensor type with no dynamic dim and no zero dim, else None."""
    if not isinstance(t, TensorType):
        return None
    shape = tuple(t.get_shape())
    if any(s == inf.DYNAMIC or s <= 0 for s in shape):
        return None
    return shape


def root_layout(v: SSAValue) -> Layout | None:
    """`v` as its own root (contiguous), if its type is static."""
    shape = static_shape(v.type)
    if shape is None:
        return None
    return Layout(v, shape, contiguous_strides(shape), 0)


def makes_root(op: Operation, kind: str) -> bool:
    """Whether `op`, run as a step of `kind`, gives contiguous results of static
    shapes every call."""
    if isinstance(op, GroupOp):
        # An empty index space makes the kernel decline (its body then runs
        # through PyTorch, in whatever layout): static non-empty shapes rule it out.
        return kind == "kernel" and all(
            static_shape(v.type) is not None for v in (*op.operands, *op.results)
        )
    if isinstance(op, aten.MmOp | aten.AddmmOp | aten.LinearOp | aten.MatmulOp | aten.ToOp):
        return kind == "torch"
    return False


def view_strides(
    sizes: Sequence[int], strides: Sequence[int], new: Sequence[int]
) -> tuple[int, ...] | None:
    """The strides `view(new)` gives a tensor of `sizes` and `strides`, or None
    where no view exists (`reshape` copies): ATen's `computeStride`, for
    non-empty tensors."""
    if not sizes:
        return tuple(1 for _ in new)
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_base = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for d in range(len(sizes) - 1, -1, -1):
        tensor_numel *= sizes[d]
        if d == 0 or (sizes[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * chunk_base
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(out)


def _narrowed(x: Layout, dim: int, start: int, length: int, step: int = 1) -> Layout:
    sizes, strides = list(x.sizes), list(x.strides)
    offset = x.offset + start * strides[dim]
    sizes[dim] = length
    strides[dim] *= step
    return Layout(x.root, tuple(sizes), tuple(strides), offset)


def _picked(x: Layout, dims: Sequence[int]) -> Layout:
    """`x`'s dims `dims`, in that order (a permutation, or the dims a squeeze keeps)."""
    return Layout(
        x.root, tuple(x.sizes[d] for d in dims), tuple(x.strides[d] for d in dims), x.offset
    )


def _pieces(x: Layout, dim: int, lengths: Sequence[int]) -> list[Layout]:
    out, start = [], 0
    for n in lengths:
        out.append(_narrowed(x, dim, start, n))
        start += n
    return out


def _dim(op: Operation, name: str, rank: int) -> int:
    return inf.normalize_dim(op.properties[name].value.data, rank)  # type: ignore[attr-defined]


def _prop(op: Operation, name: str) -> int:
    return op.properties[name].value.data  # type: ignore[attr-defined]


def _expanded(x: Layout, target: Sequence[int]) -> Layout:
    """ATen's `inferExpandGeometry`."""
    sizes: list[int] = [0] * len(target)
    strides: list[int] = [0] * len(target)
    lead = len(target) - len(x.sizes)
    for i in range(len(target) - 1, -1, -1):
        d = i - lead
        size = x.sizes[d] if d >= 0 else 1
        stride = x.strides[d] if d >= 0 else sizes[i + 1] * strides[i + 1]
        want = size if target[i] == -1 else target[i]
        if size != want:
            size, stride = want, 0
        sizes[i], strides[i] = size, stride
    return Layout(x.root, tuple(sizes), tuple(strides), x.offset)


def view_layouts(op: Operation, x: Layout) -> list[Layout] | None:
    """The layouts of `op`'s results (a view op of `VIEW_OPS`) from its input's
    layout `x`, or None where they are not views or not static."""
    shapes = [static_shape(r.type) for r in op.results]
    if not x.sizes or any(s is None for s in shapes):
        return None  # a 0-d input has no stride to carry; a dynamic size none to bake
    rank = len(x.sizes)
    if isinstance(op, aten.ViewOp | aten.ReshapeOp):
        new = shapes[0]
        assert new is not None
        strides = view_strides(x.sizes, x.strides, new)
        return None if strides is None else [Layout(x.root, new, strides, x.offset)]
    if isinstance(op, aten.TransposeOp):
        a, b = _dim(op, "dim0", rank), _dim(op, "dim1", rank)
        dims = list(range(rank))
        dims[a], dims[b] = b, a
        return [_picked(x, dims)]
    if isinstance(op, aten.PermuteOp):
        return [_picked(x, [inf.normalize_dim(d, rank) for d in op.dims.get_values()])]
    if isinstance(op, aten.UnsqueezeOp):
        d = inf.normalize_dim(_prop(op, "dim"), rank + 1)
        stride = 1 if d >= rank else x.sizes[d] * x.strides[d]
        return [
            Layout(
                x.root,
                (*x.sizes[:d], 1, *x.sizes[d:]),
                (*x.strides[:d], stride, *x.strides[d:]),
                x.offset,
            )
        ]
    if isinstance(op, aten.SqueezeOp):
        if op.dim is None:
            return [_picked(x, [i for i, s in enumerate(x.sizes) if s != 1])]
        d = inf.normalize_dim(op.dim.value.data, rank)
        return [_picked(x, [i for i in range(rank) if i != d or x.sizes[i] != 1])]
    if isinstance(op, aten.ExpandOp):
        return [_expanded(x, list(op.size.get_values()))]
    if isinstance(op, aten.SliceOp | aten.NarrowOp):
        d = _dim(op, "dim", rank)
        new = shapes[0]
        assert new is not None
        start = _prop(op, "start")
        start = start + x.sizes[d] if start < 0 else start
        start = max(0, min(x.sizes[d], start))
        step = _prop(op, "step") if isinstance(op, aten.SliceOp) else 1
        return [_narrowed(x, d, start, new[d], step)]
    if isinstance(op, aten.SplitOp | aten.ChunkOp):
        d = _dim(op, "dim", rank)
        lengths = [s[d] for s in shapes if s is not None]
        if sum(lengths) != x.sizes[d]:
            return None
        return _pieces(x, d, lengths)
    return None
