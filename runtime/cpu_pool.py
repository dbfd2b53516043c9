"""Recycled CPU output buffers for large kernel outputs.

PyTorch's CPU allocator hands every large tensor fresh pages from the OS: glibc
maps allocations of 32 MiB and more (and smaller ones once it trims its heap)
and unmaps them when freed, so each call's outputs pay a page fault per 4 KiB
on first write. On a 2-core VM a 2^24-element f32 output cost 19 ms of faults
against 3 ms of writing (`torch.empty(n).fill_` fresh vs reused), and a fused
kernel at 2^24 ran at half its speed. Like PyTorch's CUDA caching allocator,
the pool keeps the storage of an output after the caller drops it and hands it
out again for an output of the same byte size:

    size, stride, nbytes = (4096, 4096), (4096, 1), 4096 * 4096 * 4
    out = pool().empty(size, stride, torch.float32, nbytes)   # a new block
    del out                              # the pool's reference is the last one
    out = pool().empty(size, stride, torch.float32, nbytes)   # the same block

Outputs are made over a block's storage by torch's `_reinterpret_tensor` from a
base tensor the block keeps per dtype, so taking one costs no ATen call. A block
is free when the pool and those bases hold its storage's only references (views,
saved-for-backward tensors and NumPy arrays of an output all hold one) and the
only reference to its Python storage object: `y.untyped_storage()` and
`y.storage()` return that same object (PyTorch keeps one per storage), which
holds the storage through the pool's own count, so a caller that kept only
`s = f(x).untyped_storage()` is seen by its Python reference count; a block
moved to shared memory (`share_memory_()`, as sending a tensor to another
process does) is never handed out again.
Outputs under `MIN_BYTES` come from the allocator as before. The pool keeps at
most `FUSEC_CPU_POOL_MB` MiB of blocks (default: an eighth of physical memory,
at most 1 GiB; 0 turns it off); past that, free blocks of any size are dropped
and an output that still does not fit is allocated unpooled.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

MIN_BYTES = 1 << 17
"""Outputs this large and larger are pooled: glibc's default threshold for
serving an allocation with its own mapping (`M_MMAP_THRESHOLD`, 128 KiB), below
which its heap usually recycles memory itself. At 1 MiB, ViT-tiny's 450 KiB
GELU outputs came from fresh pages as the heap trimmed: its twelve GELU
kernels took 0.09 ms in the first layers and up to 0.29 ms in the last, and
inference ran at 1.23x Inductor's time; pooled, 0.10 ms each and 1.00x. A
pooled output costs about 1 us more than `torch.empty_strided`."""


def _default_cap() -> int:
    from fusec.runtime import env

    mb = env.cpu_pool_mb()
    if mb is not None:
        return mb << 20
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 8 << 30
    return min(1 << 30, physical // 8)


_use_count: Callable[[Any], int] | None = getattr(torch._C, "_storage_Use_Count", None)


class OutputPool:
    """Blocks (untyped storages) by byte size; see the module docstring."""

    def __init__(self, cap_bytes: int):
        self.cap_bytes = cap_bytes
        self.held = 0
        """Bytes of all blocks the pool keeps, in use or free."""
        self.reused = 0
        """Outputs served by a block that was free (for tests and benchmarks)."""
        self._blocks: dict[int, list[_Block]] = {}
        self._lock = threading.Lock()

    def empty(
        self, size: Sequence[int], stride: Sequence[int], dtype: torch.dtype, nbytes: int
    ) -> torch.Tensor:
        """An uninitialized tensor of `size` and `stride` whose storage spans
        exactly `nbytes` (contiguous strides), from a free block when there is one."""
        assert _use_count is not None
        use_count, refs = _use_count, sys.getrefcount
        with self._lock:
            blocks = self._blocks.get(nbytes)
            if blocks is None:
                blocks = self._blocks[nbytes] = []
            # `_is_free` written out: a training step's forward passes every block
            # its saved activations hold (Llama: 13 checks an output, 1,150 a step).
            for i, block in enumerate(blocks):
                if (
                    use_count(block.cdata) == block.free_uses
                    and refs(block.storage) == block.free_refs
                ):
                    # A caller shrank it (`storage.resize_`), or moved it to shared
                    # memory, which another process may still read: not reused.
                    if block.storage.nbytes() < nbytes or block.storage.is_shared():
                        del blocks[i]
                        self.held -= nbytes
                        break
                    self.reused += 1
                    return block.tensor(size, stride, dtype)
            if not self._make_room(nbytes):
                return torch.empty_strided(size, stride, dtype=dtype, device="cpu")
            block = _new_block(nbytes, dtype)
            blocks.append(block)
            self.held += nbytes
            return block.tensor(size, stride, dtype)

    def _make_room(self, nbytes: int) -> bool:
        """Drops free blocks (any size) until `nbytes` more fit."""
        if self.held + nbytes <= self.cap_bytes:
            return True
        for size, blocks in list(self._blocks.items()):
            for i in reversed(range(len(blocks))):
                if self.held + nbytes <= self.cap_bytes:
                    return True
                if _is_free(blocks[i]):
                    del blocks[i]
                    self.held -= size
        return self.held + nbytes <= self.cap_bytes

    def clear(self) -> None:
        """Forgets every block (those in use stay alive with their tensors)."""
        with self._lock:
            self._blocks.clear()
            self.held = 0


_generated_code_entries = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
"""Where torch keeps its entries for Inductor's generated code (None on a torch
without them); the runtime's other modules take theirs from here."""

_reinterpret: Callable[..., torch.Tensor] | None = getattr(
    _generated_code_entries, "_reinterpret_tensor", None
)
"""A tensor over `x`'s storage with other sizes and strides, made without
dispatch, so an output costs no ATen call (`torch.empty(0).set_(...)` costs
two, counted by the profiler as the model's)."""

_empty_strided: Callable[..., torch.Tensor] | None = getattr(
    _generated_code_entries, "_empty_strided_cpu", None
)
"""`_empty_strided(size, stride, dtype)`: an uninitialized CPU tensor, made
without the argument parser or the dispatcher."""


class _Block:
    """A pooled storage and, per dtype and inference mode, a tensor over it that
    outputs are made from (`_reinterpret` keeps its base's dtype and dispatch
    keys, and an inference tensor's keys differ from a normal one's)."""

    __slots__ = ("bases", "cdata", "free_refs", "free_uses", "storage")

    def __init__(self, storage: torch.UntypedStorage):
        self.storage = storage
        self.cdata: int = storage._cdata
        """The C++ storage's address: constant while the block holds it."""
        self.bases: dict[tuple[torch.dtype, bool], torch.Tensor] = {}
        self.free_uses = 1
        """The storage's use count when it is free: the block's and its bases'."""
        self.free_refs = _POOL_ONLY_REFS[0] if _POOL_ONLY_REFS else 0
        """`_python_refs` when it is free."""

    def add_base(self, key: tuple[torch.dtype, bool], base: torch.Tensor) -> None:
        self.bases[key] = base
        self.free_uses = 1 + len(self.bases)
        self.free_refs = _POOL_ONLY_REFS[1] if _POOL_ONLY_REFS else 0

    def tensor(
        self, size: Sequence[int], stride: Sequence[int], dtype: torch.dtype
    ) -> torch.Tensor:
        if _reinterpret is None:
            return torch.empty(0, dtype=dtype).set_(self.storage, 0, size, stride)
        key = (dtype, torch.is_inference_mode_enabled())
        base = self.bases.get(key)
        if base is None:
            base = torch.empty(0, dtype=dtype).set_(self.storage)
            self.add_base(key, base)
        return _reinterpret(base, size, stride, 0)


def _new_block(nbytes: int, dtype: torch.dtype) -> _Block:
    """A block of `nbytes` whose first output is of `dtype`: allocated as a
    tensor of that dtype by torch's entry for generated code (no dispatch), which
    becomes the block's base for it, so a new block costs no ATen call either
    (`torch.empty(...)` and a base's `set_` made three: an output kept by its
    caller, as `.grad` keeps a first gradient, showed them in the next step)."""
    if _empty_strided is None or _reinterpret is None or nbytes % dtype.itemsize:
        return _Block(torch.empty(nbytes, dtype=torch.uint8).untyped_storage())
    base = _empty_strided((nbytes // dtype.itemsize,), (1,), dtype)
    block = _Block(base.untyped_storage())
    block.add_base((dtype, torch.is_inference_mode_enabled()), base)
    return block


def _python_refs(block: _Block) -> int:
    """References to `block`'s Python storage object, counting the block's slot and
    `getrefcount`'s argument."""
    return sys.getrefcount(block.storage)


def _measured_refs(with_base: bool) -> int:
    """`_python_refs` of a block no tensor but its own base uses. The interpreter
    decides what `getrefcount` counts, and torch keeps a storage's Python object
    alive from C++ while some tensor also holds the storage (one more reference)."""
    block = _Block(torch.UntypedStorage(0))
    if with_base:
        block.tensor((0,), (1,), torch.float32)
    return _python_refs(block)


_POOL_ONLY_REFS: tuple[int, ...] = ()  # while measuring them
_POOL_ONLY_REFS = (_measured_refs(False), _measured_refs(_reinterpret is not None))
"""`_python_refs` of a free block without, and with, bases."""


def _is_free(block: _Block) -> bool:
    """No tensor or view holds `block`'s storage but the block's own bases, and no
    one but the block holds its Python object (`s = y.untyped_storage()`, or a
    `y.storage()` wrapping it). (`OutputPool.empty` writes it out.)"""
    assert _use_count is not None
    return _use_count(block.cdata) == block.free_uses and _python_refs(block) == block.free_refs


_POOL: OutputPool | None = None
_POOL_LOCK = threading.Lock()


def pool() -> OutputPool | None:
    """The process's pool, or None where it is off (a cap of 0, or a torch that
    cannot count a storage's references)."""
    global _POOL
    if _POOL is None:
        with _POOL_LOCK:
            if _POOL is None:
                cap = _default_cap() if _use_count is not None else 0
                _POOL = OutputPool(cap)
    return _POOL if _POOL.cap_bytes > 0 else None
