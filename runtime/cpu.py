"""CPU executor: JIT a `KernelArtifact` once and call it through ctypes over all
cores (ctypes releases the GIL, so threads run the kernel in parallel over
[begin, end) ranges of the outermost index)."""

from __future__ import annotations

import ctypes
import functools
import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import torch
from fusec.codegen import KernelArtifact, KernelSignature
from fusec.dialects.inference import broadcast_shapes
from fusec.llvm_jit import JitModule
from fusec.torch_ops import TORCH_DTYPES as ELEMENT_TO_TORCH

TORCH_DTYPES: dict[str, torch.dtype] = {str(k): v for k, v in ELEMENT_TO_TORCH.items()}
"""Kernel signatures name dtypes as element type strings (`f32`, `i1`, ...)."""
_SCALAR_CTYPES = {"f64": ctypes.c_double, "i64": ctypes.c_int64, "i1": ctypes.c_bool}
_MIN_PARALLEL_ELEMENTS = 1 << 15

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


@functools.cache
def num_threads() -> int:
    """Threads the CPU executor splits kernels over (`FUSEC_NUM_THREADS` or all cores),
    read once: it sits on the per-call path."""
    return int(os.environ.get("FUSEC_NUM_THREADS", 0)) or (os.cpu_count() or 1)


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=num_threads(), thread_name_prefix="fusec-cpu")
        return _pool


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
    # The dialect's pure-Python broadcast is several times cheaper than torch's here.
    space = list(broadcast_shapes(*(o.shape for o in operands)))
    space = [1] * (sig.rank - len(space)) + space
    for out in sig.outputs:
        lead = sig.rank - len(out.static_shape)
        for i, s in enumerate(out.static_shape):
            if space[lead + i] == 1 and s > 1:  # a size only an `expand` gives
                space[lead + i] = s
    shapes = []
    for out in sig.outputs:
        lead = sig.rank - len(out.static_shape)
        shapes.append(tuple(1 if s == 1 else space[lead + i] for i, s in enumerate(out.static_shape)))
    return tuple(space), shapes


class CpuKernel:
    """A JIT-compiled host kernel; call it with the group's inputs."""

    def __init__(self, artifact: KernelArtifact):
        self.artifact = artifact
        self.signature = sig = artifact.signature
        self._jit = JitModule(artifact.code.decode())
        lrank = sig.loop_rank
        argtypes: list[type] = [ctypes.c_int64] * (2 + lrank)
        for _ in range(len(sig.operands) + len(sig.outputs)):
            argtypes += [ctypes.c_void_p] + [ctypes.c_int64] * lrank
        argtypes += [_SCALAR_CTYPES[dt] for _, dt in sig.scalars]
        proto = ctypes.CFUNCTYPE(None, *argtypes)
        self._fn = proto(self._jit.address(artifact.name))

    def __call__(self, inputs: Sequence[torch.Tensor | float | int | bool]) -> list[torch.Tensor]:
        sig = self.signature
        operands = [apply_views(inputs[s.input], s.views) for s in sig.operands]  # type: ignore[arg-type]
        space, shapes = output_shapes(sig, operands)
        outs = [
            torch.empty(shape, dtype=TORCH_DTYPES[o.dtype])
            for shape, o in zip(shapes, sig.outputs, strict=True)
        ]
        if math.prod(space) == 0:
            return outs
        loop_space = space if space else (1,)
        mid: list[object] = list(loop_space)
        for t in (*operands, *outs):
            mid.append(t.data_ptr())
            mid += broadcast_strides(t, space) if space else [0]
        tail = [inputs[i] for i, _ in sig.scalars]
        n0 = loop_space[0]
        chunks = min(num_threads(), n0)
        if chunks <= 1 or math.prod(loop_space) < _MIN_PARALLEL_ELEMENTS:
            self._fn(0, n0, *mid, *tail)
            return outs
        bounds = [n0 * k // chunks for k in range(chunks + 1)]
        futures = [
            _thread_pool().submit(self._fn, bounds[k], bounds[k + 1], *mid, *tail)
            for k in range(1, chunks)
        ]
        self._fn(bounds[0], bounds[1], *mid, *tail)
        for f in futures:
            f.result()
        return outs


_loaded: dict[KernelArtifact, CpuKernel] = {}
_loaded_lock = threading.Lock()


def load_kernel(artifact: KernelArtifact) -> CpuKernel:
    """The callable host kernel of `artifact`, JIT-compiled once per artifact."""
    with _loaded_lock:
        k = _loaded.get(artifact)
        if k is None:
            k = _loaded[artifact] = CpuKernel(artifact)
        return k
