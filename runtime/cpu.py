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
from fusec.codegen import KernelArtifact
from fusec.llvm_jit import JitModule
from fusec.runtime.operands import broadcast_strides, prepare

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
        if sig.zero_division_flag:
            argtypes.append(ctypes.c_void_p)
        proto = ctypes.CFUNCTYPE(None, *argtypes)
        self._fn = proto(self._jit.address(artifact.name))

    def __call__(self, inputs: Sequence[torch.Tensor | float | int | bool]) -> list[torch.Tensor]:
        sig = self.signature
        operands, space, outs, results = prepare(sig, inputs)
        if math.prod(space) == 0:
            return results
        loop_space = space if space else (1,)
        mid: list[object] = list(loop_space)
        for t in (*operands, *outs):
            mid.append(t.data_ptr())
            mid += broadcast_strides(t, space) if space else [0]
        tail: list[object] = [inputs[i] for i, _ in sig.scalars]
        flag = None
        if sig.zero_division_flag:
            flag = ctypes.c_int8(0)
            tail.append(ctypes.addressof(flag))
        n0 = loop_space[0]
        chunks = min(num_threads(), n0)
        if chunks <= 1 or math.prod(loop_space) < _MIN_PARALLEL_ELEMENTS:
            self._fn(0, n0, *mid, *tail)
            _check_zero_division(flag)
            return results
        bounds = [n0 * k // chunks for k in range(chunks + 1)]
        futures = [
            _thread_pool().submit(self._fn, bounds[k], bounds[k + 1], *mid, *tail)
            for k in range(1, chunks)
        ]
        self._fn(bounds[0], bounds[1], *mid, *tail)
        for f in futures:
            f.result()
        _check_zero_division(flag)
        return results


def _check_zero_division(flag: ctypes.c_int8 | None) -> None:
    """Eager's error for an integer division by zero the kernel saw."""
    if flag is not None and flag.value:
        raise RuntimeError("ZeroDivisionError")


_loaded: dict[KernelArtifact, CpuKernel] = {}
_loaded_lock = threading.Lock()


def load_kernel(artifact: KernelArtifact) -> CpuKernel:
    """The callable host kernel of `artifact`, JIT-compiled once per artifact."""
    with _loaded_lock:
        k = _loaded.get(artifact)
        if k is None:
            k = _loaded[artifact] = CpuKernel(artifact)
        return k
