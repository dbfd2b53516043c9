"""Device-independent kernel arguments: a group's inputs viewed as the kernel's
operands, their broadcast strides over the index space, and the outputs allocated
for them. The CPU and CUDA executors both call `prepare`:

    operands, space, outs, results = prepare(sig, inputs, device)
    # kernel args: space sizes, then (ptr, broadcast strides) per operand and output
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch
from fusec.runtime.broadcast import ShapesDoNotBroadcast, broadcast_shapes
from fusec.runtime.kernel_signature import KernelSignature

TORCH_DTYPES: dict[str, torch.dtype] = {
    "i1": torch.bool,
    "ui8": torch.uint8,
    "i8": torch.int8,
    "i16": torch.int16,
    "i32": torch.int32,
    "i64": torch.int64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "f32": torch.float32,
    "f64": torch.float64,
}
"""Kernel signatures name dtypes as element type strings (`f32`, `i1`, ...), as
the IR prints fusec's element types (`fusec.codegen.torch_ops.TORCH_DTYPES`; a test
checks that the two agree)."""


def apply_views(t: torch.Tensor, views: Sequence[tuple[object, ...]]) -> torch.Tensor:
    """Replays a group's view chain (chunk/narrow/slice/...) on an input tensor:
    the result is a strided view, never a copy (except `reshape` where needed)."""
    for v in views:
        kind = v[0]
        if kind == "chunk":
            _, index, chunks, dim = v
            t = t.chunk(chunks, dim)[index]  # type: ignore[arg-type]
        elif kind == "narrow":
            _, dim, start, length = v
            t = t.narrow(dim, start, length)  # type: ignore[arg-type]
        elif kind == "slice":
            _, dim, start, end, step = v
            idx = [slice(None)] * t.dim()
            idx[dim] = slice(start, end, step)  # type: ignore[index]
            t = t[tuple(idx)]
        elif kind == "rank":
            t = t.reshape((1,) * (int(v[1]) - t.dim()) + tuple(t.shape))  # type: ignore[operator]
        elif kind == "unsqueeze":
            t = t.unsqueeze(v[1])  # type: ignore[arg-type]
        elif kind == "squeeze":
            t = t.squeeze() if len(v) == 1 else t.squeeze(v[1])  # type: ignore[arg-type]
        elif kind == "permute":
            t = t.permute(*v[1])  # type: ignore[misc]
        elif kind == "transpose":
            t = t.transpose(v[1], v[2])  # type: ignore[arg-type]
        elif kind == "reshape":
            t = t.reshape(v[1])  # type: ignore[arg-type]
        else:
            raise ValueError(f"unknown view step {v}")
    return t


def broadcast_strides(t: torch.Tensor, space: Sequence[int]) -> list[int]:
    """`t.expand(space).stride()` without building the view: broadcast dims get 0."""
    lead = len(space) - t.dim()
    strides = [0] * lead
    for size, stride, full in zip(t.shape, t.stride(), space[lead:], strict=True):
        strides.append(0 if size == 1 and full != 1 else stride)
    return strides


def output_shapes(
    sig: KernelSignature, operands: Sequence[torch.Tensor]
) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """The index space and the output shapes for these (viewed) operands:
    broadcasting of the operands, statically size-1 output dims stay 1."""
    try:
        space = list(broadcast_shapes([o.shape for o in operands]))
    except ShapesDoNotBroadcast as e:
        raise KernelDeclined(str(e)) from None
    space = [1] * (sig.rank - len(space)) + space
    for out in sig.outputs:
        lead = sig.rank - len(out.static_shape)
        for i, s in enumerate(out.static_shape):
            if space[lead + i] == 1 and s > 1:  # a size only an `expand` gives
                space[lead + i] = s
    shapes = []
    for out in sig.outputs:
        lead = sig.rank - len(out.static_shape)
        shapes.append(
            tuple(1 if s == 1 else space[lead + i] for i, s in enumerate(out.static_shape))
        )
    return tuple(space), shapes


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides of a contiguous tensor of `shape` (as `torch.empty` makes it)."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


class KernelDeclined(Exception):
    """The kernel cannot compute this call: its group runs through PyTorch.

    Raised when the index space is empty but an output is not (an output
    broadcast against an empty one, `(a.exp(), a + empty)`): a kernel over no
    elements would leave that output unwritten."""


def prepare(
    sig: KernelSignature,
    inputs: Sequence[torch.Tensor | float | int | bool],
    device: torch.device | str = "cpu",
) -> tuple[list[torch.Tensor], tuple[int, ...], list[torch.Tensor], list[torch.Tensor]]:
    """The kernel's operands (views of `inputs`), its index space, the tensors it
    writes (`outs`, in signature order) and the tensors the group returns (`results`,
    in yield order; the same tensors as `outs` unless outputs are views of one
    buffer)."""
    operands = [apply_views(inputs[s.input], s.views) for s in sig.operands]  # type: ignore[arg-type]
    # Outputs of one group that do not broadcast together: `KernelDeclined`.
    space, shapes = output_shapes(sig, operands)
    if 0 in space and any(0 not in shape for shape in shapes):
        raise KernelDeclined("an output is not empty but the index space is")
    if sig.exits:
        outs, results = _exit_outputs(sig, shapes, device)
        return operands, space, outs, results
    outs = [
        torch.empty(shape, dtype=TORCH_DTYPES[o.dtype], device=device)
        for shape, o in zip(shapes, sig.outputs, strict=True)
    ]
    return operands, space, outs, outs


def _exit_outputs(
    sig: KernelSignature, shapes: Sequence[tuple[int, ...]], device: torch.device | str
) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Outputs and results of a kernel with cat exits: each cat's result is allocated
    once and its parts are `narrow` views of it (the kernel writes the slices in
    place), the other outputs are allocated as usual (`CatExit`)."""
    outs: list[torch.Tensor | None] = [None] * len(sig.outputs)
    exit_results: dict[int, torch.Tensor] = {}
    for ex in sig.exits:
        part = shapes[ex.parts[0]]
        size = part[ex.dim]
        full = (*part[: ex.dim], size * len(ex.parts), *part[ex.dim + 1 :])
        dtype = TORCH_DTYPES[sig.outputs[ex.parts[0]].dtype]
        buf = torch.empty(full, dtype=dtype, device=device)
        for k, p in enumerate(ex.parts):
            outs[p] = buf.narrow(ex.dim, k * size, size)
        exit_results[ex.result] = buf
    plain: list[torch.Tensor] = []
    for i, (shape, o) in enumerate(zip(shapes, sig.outputs, strict=True)):
        if outs[i] is None:
            t = torch.empty(shape, dtype=TORCH_DTYPES[o.dtype], device=device)
            outs[i] = t
            plain.append(t)
    n_results = len(plain) + len(exit_results)
    rest = iter(plain)
    results = [exit_results[r] if r in exit_results else next(rest) for r in range(n_results)]
    return outs, results  # type: ignore[return-value]


MAX_PLANS = 64
"""Launch plans (input layouts) an executor keeps per kernel; past that the
oldest plan is dropped."""


class PlannedCall(NamedTuple):
    """One call's kernel arguments as a launch plan needs them (`planned_call`)."""

    operands: list[torch.Tensor]
    space: tuple[int, ...]
    outs: list[torch.Tensor]
    allocs: list[torch.Tensor]
    """The tensors a call allocates: each output's base, once."""
    results: tuple[int, ...]
    """The group's results, as indices into `allocs`."""
    sources: list[tuple[int, int]]
    """Per operand then output: (source, byte offset into it); source `i >= 0`
    is input `i`, `-1 - j` is allocation `j`."""


def planned_call(
    sig: KernelSignature,
    inputs: Sequence[torch.Tensor | float | int | bool],
    device: torch.device | str = "cpu",
) -> PlannedCall | None:
    """`prepare` for the executors' launch plans: what every call with this
    layout shares is where each operand and output lies relative to an input or
    an allocation. None when an operand is a copy rather than a view of its
    input (a `reshape` view step had to copy): such calls cannot be planned."""
    operands, space, outs, results = prepare(sig, inputs, device)
    for spec, t in zip(sig.operands, operands, strict=True):
        src = inputs[spec.input]
        if t.untyped_storage().data_ptr() != src.untyped_storage().data_ptr():  # type: ignore[union-attr]
            return None
    allocs: list[torch.Tensor] = []
    for t in (*outs, *results):
        base = t if t._base is None else t._base
        if not any(base is a for a in allocs):
            allocs.append(base)
    alloc_of = {id(a): j for j, a in enumerate(allocs)}
    sources: list[tuple[int, int]] = []
    for k, t in enumerate((*operands, *outs)):
        if k < len(operands):
            src = inputs[sig.operands[k].input]
            sources.append((sig.operands[k].input, t.data_ptr() - src.data_ptr()))  # type: ignore[union-attr]
        else:
            base = t if t._base is None else t._base
            sources.append((-1 - alloc_of[id(base)], t.data_ptr() - base.data_ptr()))
    result_index = tuple(alloc_of[id(r)] for r in results)
    return PlannedCall(operands, space, outs, allocs, result_index, sources)


def put_scalars(
    slots: Any, doubles: Any, scalar_slots: Sequence[tuple[int, int, str]], inputs: Sequence[Any]
) -> None:
    """Stores a call's Python-scalar arguments into a kernel's 8-byte argument
    slots: `scalar_slots` is (slot, input index, dtype) per scalar; an f64 goes
    through `doubles` (a `c_double` view of the same buffer, None when the kernel
    has none), an i1 as 0/1, an i64 as its two's complement."""
    for slot, i, dt in scalar_slots:
        v = inputs[i]
        if dt == "f64":
            doubles[slot] = float(v)
        elif dt == "i1":
            slots[slot] = 1 if v else 0
        else:
            slots[slot] = int(v)
