"""Matrix products run through PyTorch, writing a large result into a block of
the output pool (`fusec.runtime.cpu_pool`) rather than fresh pages.

A product's result of a megabyte or more comes from glibc's fresh pages on
every call once the heap has trimmed, and on this 2-core VM their page faults
cost more than the product: BERT's `[512, 128] x [128, 512]` feed-forward
product took 2.5 ms in the model against 0.67 ms alone, where Inductor's
`addmm(..., out=buf)` reuses its buffer. fusec's own kernels already take their
large outputs from the pool; these steps do the same for `aten.linear` and
`aten.mm` through ATen's `out=` variants, on 2-d views made without dispatch
(no more ATen calls than `F.linear` and `torch.mm` make):

    linear(x, w, b)   x: [8, 64, 128] contiguous, w: [512, 128], out 1 MiB
    -> out = pool.empty([8, 64, 512]); torch.addmm(b, x as [512, 128], w as
       [128, 512] (its transpose's strides), out=out as [512, 512])

Smaller results, other devices, mixed dtypes, strided inputs, and calls that
autograd records (`out=` does not differentiate) take the plain call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from fusec.runtime import cpu_pool
from fusec.runtime.operands import contiguous_strides

_reinterpret: Callable[..., torch.Tensor] | None = cpu_pool._reinterpret


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


def _plain_operands(*ts: Any) -> bool:
    """CPU tensors of one dtype that autograd does not record."""
    first = ts[0]
    if not all(isinstance(t, torch.Tensor) and t.device.type == "cpu" for t in ts):
        return False
    if any(t.dtype != first.dtype for t in ts):
        return False
    return not (torch.is_grad_enabled() and any(t.requires_grad for t in ts))


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """`F.linear(x, w, b)`, into a pooled block when the result is large."""
    operands = (x, w) if b is None else (x, w, b)
    if x.dim() < 2 or w.dim() != 2 or not _plain_operands(*operands) or not x.is_contiguous():
        return F.linear(x, w, b)
    k, n = w.shape[1], w.shape[0]
    if x.shape[-1] != k or (b is not None and tuple(b.shape) != (n,)):
        return F.linear(x, w, b)  # PyTorch's error
    out = _pooled((*x.shape[:-1], n), x.dtype)
    if out is None:
        return F.linear(x, w, b)
    assert _reinterpret is not None
    m = x.numel() // max(k, 1)
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
    if a.dim() != 2 or b.dim() != 2 or not _plain_operands(a, b) or a.shape[1] != b.shape[0]:
        return torch.mm(a, b)
    out = _pooled((a.shape[0], b.shape[1]), a.dtype)
    if out is None:
        return torch.mm(a, b)
    return torch.mm(a, b, out=out)
