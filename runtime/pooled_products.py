"""Matrix products run through PyTorch, writing a large result into a block of
the output pool (`fusec.runtime.cpu_pool`) rather than fresh pages.

A product's large result (`cpu_pool.MIN_BYTES` or more) comes from glibc's
fresh pages on every call once the heap has trimmed, and on this 2-core VM
their page faults cost more than the product: BERT's `[512, 128] x [128, 512]` feed-forward
product took 2.5 ms in the model against 0.67 ms alone, where Inductor's
`addmm(..., out=buf)` reuses its buffer. fusec's own kernels already take their
large outputs from the pool; these steps do the same for `aten.linear` and
`aten.mm` through ATen's `out=` variants, on 2-d views made without dispatch
(no more ATen calls than `F.linear` and `torch.mm` make):

    linear(x, w, b)   x: [8, 64, 128] contiguous, w: [512, 128], out 1 MiB
    -> out = pool.empty([8, 64, 512]); torch.addmm(b, x as [512, 128], w as
       [128, 512] (its transpose's strides), out=out as [512, 512])

Smaller results, other devices, mixed dtypes, strided inputs, and calls that
autograd records (`out=` does not differentiate) take the plain call; a product
whose static result is small is the plain call from the start (`SMALL_PRODUCT`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from fusec.runtime import cpu_pool
from fusec.runtime.operands import contiguous_strides

_reinterpret: Callable[..., torch.Tensor] | None = cpu_pool._reinterpret


SMALL_PRODUCT = "small"
"""The `OpInfo` property of a product whose result type is static and under
`cpu_pool.MIN_BYTES`: its step is the plain call, with no per-call check."""


def _pooled(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor | None:
    """A contiguous pooled tensor of `shape`, or None when the result is small
    or there is no pool."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < cpu_pool.MIN_BYTES or _reinterpret is None:
        return None
    pool = cpu_pool.pool()
    if pool is None:
        return None
    return pool.empty(shape, contiguous_strides(shape), dtype, nbytes)


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """`F.linear(x, w, b)`, into a pooled block when the result is large."""
    # Cheapest refusals first: this runs on every product of every call.
    if w.ndim != 2 or x.ndim < 2 or not (x.is_cpu and w.is_cpu) or x.dtype != w.dtype:
        return F.linear(x, w, b)
    n, k = w.shape
    if x.shape[-1] != k or k == 0 or not x.is_contiguous():
        return F.linear(x, w, b)  # PyTorch's error, or its strided path
    if b is not None and (b.shape != (n,) or not b.is_cpu or b.dtype != x.dtype):
        return F.linear(x, w, b)
    if torch.is_grad_enabled() and (
        x.requires_grad or w.requires_grad or (b is not None and b.requires_grad)
    ):
        return F.linear(x, w, b)
    out = _pooled((*x.shape[:-1], n), x.dtype)
    if out is None:
        return F.linear(x, w, b)
    assert _reinterpret is not None
    m = x.numel() // k
    rows = _reinterpret(x, (m, k), (k, 1), 0)
    wt = _reinterpret(w, (k, n), (w.stride(1), w.stride(0)), 0)
    flat = _reinterpret(out, (m, n), (n, 1), 0)
    if b is None:
        torch.mm(rows, wt, out=flat)
    else:
        torch.addmm(b, rows, wt, out=flat)
    return out


def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`torch.mm(a, b)`, into a pooled block when the result is large."""
    if a.ndim != 2 or b.ndim != 2 or not (a.is_cpu and b.is_cpu) or a.dtype != b.dtype:
        return torch.mm(a, b)
    if a.shape[1] != b.shape[0] or (
        torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)
    ):
        return torch.mm(a, b)
    out = _pooled((a.shape[0], b.shape[1]), a.dtype)
    if out is None:
        return torch.mm(a, b)
    return torch.mm(a, b, out=out)
