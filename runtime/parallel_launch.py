"""Native parallel launch: a kernel's work split runs on the OpenMP threads that
PyTorch's CPU build already holds (its `libgomp`), through one ctypes call.

Handing a chunk to a Python thread pool costs tens of microseconds (a future, a
wake-up, the GIL), more than a small kernel's whole run. Here a trampoline
written in LLVM IR, JIT-compiled once per process, calls `GOMP_parallel`; each
OpenMP thread of the team claims chunks from a shared counter (an atomic add),
and for each copies the packed argument array into a buffer on its own stack,
applies the chunk's patches and calls the kernel's `<name>.packed` entry:

    fusec_run_chunks(ptr kernel, i64 nslots, ptr args, ptr table)

`table` is a flat `int64[]` built once per launch plan (`chunk_table`):

    [nchunks, team, m, slot_0 .. slot_{m-1},   deltas of chunk 0 (m values), chunk 1, ...]

chunk `k` runs with `args[slot_j] + delta[k][j]` for every j: the split's
bounds, narrowed sizes and shifted base pointers are all additions to the slots
the plan's template already holds. `team` threads are asked for; chunks are
claimed, not assigned, so a thread that starts late (a busy machine) or a team
smaller than asked for (a nested region, `OMP_THREAD_LIMIT`) leaves its chunks
to the others rather than holding up the call, and there may be more chunks
than threads to balance with.

The threads are ATen's own (the same pool, so no oversubscription); ctypes
releases the GIL for the call. Where no OpenMP runtime is loaded (a PyTorch
built without one, another platform) `launcher()` is None and the executor keeps
its Python thread pool.

They also wait as ATen's do: libgomp spins a few milliseconds before it sleeps
(`OMP_WAIT_POLICY`, read when PyTorch loads it). On a machine whose cores are
all busy with other processes that spinning delays every parallel region, eager
PyTorch's as much as fusec's (calls of 0.2 ms taking 20-50 ms at the 90th
percentile); `OMP_WAIT_POLICY=passive` in the environment removes those tails
for both.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import itertools
import logging
import os
from collections.abc import Callable, Iterator, Sequence

log = logging.getLogger("fusec")

_OPENMP_NAMES = ("libgomp", "libiomp5", "libomp")
"""OpenMP runtimes that export the GNU entry points (`GOMP_parallel`, ...)."""

_GOMP_SYMBOLS = ("GOMP_parallel",)

TRAMPOLINE_IR = r"""
declare void @GOMP_parallel(ptr, ptr, i32, i32)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

define void @fusec_run_chunks(ptr %kernel, i64 %nslots, ptr %args, ptr %table) {
entry:
  %ctx = alloca [5 x ptr]
  %c1 = getelementptr ptr, ptr %ctx, i64 1
  %c2 = getelementptr ptr, ptr %ctx, i64 2
  %c3 = getelementptr ptr, ptr %ctx, i64 3
  %c4 = getelementptr ptr, ptr %ctx, i64 4
  %ns = inttoptr i64 %nslots to ptr
  store ptr %kernel, ptr %ctx
  store ptr %ns, ptr %c1
  store ptr %args, ptr %c2
  store ptr %table, ptr %c3
  store i64 0, ptr %c4
  %tp = getelementptr i64, ptr %table, i64 1
  %team = load i64, ptr %tp
  %team32 = trunc i64 %team to i32
  call void @GOMP_parallel(ptr @fusec_chunk_worker, ptr %ctx, i32 %team32, i32 0)
  ret void
}

define internal void @fusec_chunk_worker(ptr %ctx) {
entry:
  %c1 = getelementptr ptr, ptr %ctx, i64 1
  %c2 = getelementptr ptr, ptr %ctx, i64 2
  %c3 = getelementptr ptr, ptr %ctx, i64 3
  %next = getelementptr ptr, ptr %ctx, i64 4
  %kernel = load ptr, ptr %ctx
  %nsp = load ptr, ptr %c1
  %nslots = ptrtoint ptr %nsp to i64
  %args = load ptr, ptr %c2
  %table = load ptr, ptr %c3
  %nchunks = load i64, ptr %table
  %mp = getelementptr i64, ptr %table, i64 2
  %m = load i64, ptr %mp
  %slots = getelementptr i64, ptr %table, i64 3
  %rows = getelementptr i64, ptr %slots, i64 %m
  %bytes = mul i64 %nslots, 8
  %buf = alloca i64, i64 %nslots, align 16
  br label %chunk

chunk:
  %k = atomicrmw add ptr %next, i64 1 monotonic
  %more = icmp slt i64 %k, %nchunks
  br i1 %more, label %copy, label %done

copy:
  call void @llvm.memcpy.p0.p0.i64(ptr %buf, ptr %args, i64 %bytes, i1 false)
  %rowstart = mul i64 %k, %m
  %row = getelementptr i64, ptr %rows, i64 %rowstart
  br label %patch

patch:
  %j = phi i64 [ 0, %copy ], [ %jnext, %apply ]
  %pmore = icmp slt i64 %j, %m
  br i1 %pmore, label %apply, label %patched

apply:
  %sp = getelementptr i64, ptr %slots, i64 %j
  %slot = load i64, ptr %sp
  %dp = getelementptr i64, ptr %row, i64 %j
  %delta = load i64, ptr %dp
  %vp = getelementptr i64, ptr %buf, i64 %slot
  %v = load i64, ptr %vp
  %nv = add i64 %v, %delta
  store i64 %nv, ptr %vp
  %jnext = add i64 %j, 1
  br label %patch

patched:
  call void %kernel(ptr %buf)
  br label %chunk

done:
  ret void
}
"""


def _loaded_openmp() -> Iterator[ctypes.CDLL]:
    """The OpenMP runtimes this process already has loaded (PyTorch's): found by
    path in the process's mappings, or by soname without loading a second copy
    (`RTLD_NOLOAD`)."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/" in line}
    except OSError:
        paths = set()
    for path in sorted(paths):
        if os.path.basename(path).startswith(_OPENMP_NAMES):
            with contextlib.suppress(OSError):
                yield ctypes.CDLL(path)
    noload = getattr(os, "RTLD_NOLOAD", None)
    if noload is not None:
        for soname in ("libgomp.so.1", "libiomp5.so", "libomp.so"):
            with contextlib.suppress(OSError):
                yield ctypes.CDLL(soname, mode=noload | os.RTLD_LAZY)


def _torch_openmp() -> Iterator[ctypes.CDLL]:
    """The OpenMP runtimes shipped next to PyTorch's libraries (`torch/lib`)."""
    import torch

    lib_dir = os.path.join(os.path.dirname(torch.__file__), "lib")
    for name in _OPENMP_NAMES:
        for path in sorted(glob.glob(os.path.join(lib_dir, name + "*.so*"))):
            with contextlib.suppress(OSError):
                yield ctypes.CDLL(path)


def find_openmp() -> ctypes.CDLL | None:
    """PyTorch's OpenMP runtime with the GNU entry points, or None: one already
    loaded first, so that fusec's threads are ATen's and not a second pool."""
    import torch  # noqa: F401 - loads ATen's OpenMP runtime first

    for lib in itertools.chain(_loaded_openmp(), _torch_openmp()):
        if all(hasattr(lib, s) for s in _GOMP_SYMBOLS):
            return lib
    return None


RunChunks = Callable[[int, int, ctypes.Array[ctypes.c_int64], ctypes.Array[ctypes.c_int64]], None]


@functools.cache
def available() -> bool:
    """Whether a native launch can be had (`launcher`) without compiling it: an
    OpenMP runtime is loaded and `FUSEC_NATIVE_PARALLEL` is not 0. Kernels ask
    this when they are loaded and build the launcher only when a call is first
    split, so a process whose kernels all run on one thread never compiles it."""
    from fusec.runtime import env

    if not env.native_parallel():
        return False
    return find_openmp() is not None


@functools.cache
def launcher() -> RunChunks | None:
    """`fusec_run_chunks(kernel address, nslots, args, table)`, compiled once per
    process; None where no OpenMP runtime is found, `FUSEC_NATIVE_PARALLEL=0`
    or LLVM refused the trampoline (then the executor splits over its Python
    thread pool)."""
    if not available():
        return None
    lib = find_openmp()
    if lib is None:
        return None
    import llvmlite.binding as llvm
    from fusec.backends.llvm_jit import JitModule

    for name in _GOMP_SYMBOLS:
        llvm.add_symbol(name, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
    try:
        jit = JitModule(TRAMPOLINE_IR)
    except (RuntimeError, OSError) as e:  # LLVM refused it: split on the thread pool
        log.warning("fusec: native parallel launch unavailable (%s); using a thread pool", e)
        return None
    proto = ctypes.CFUNCTYPE(
        None,
        ctypes.c_void_p,
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_int64),
    )
    run = proto(jit.address("fusec_run_chunks"))
    run._fusec_jit = jit  # type: ignore[attr-defined]  # the code lives as long as the function
    return run  # type: ignore[return-value]


Chunks = Sequence[tuple[Sequence[tuple[int, int]], Sequence[tuple[int, int]]]]


def chunk_table(template: Sequence[int], chunks: Chunks, team: int) -> ctypes.Array[ctypes.c_int64]:
    """The flat patch table of a work split over `team` threads (see the module
    docstring): each chunk's bounds (slot, value) and pointer shifts (slot, extra
    bytes) become additions to the slots of `template` (the plan's packed
    arguments, where bounds and sizes are already the whole range's)."""
    slots = sorted({s for bounds, shifts in chunks for s, _ in (*bounds, *shifts)})
    rows = []
    for bounds, shifts in chunks:
        delta = dict.fromkeys(slots, 0)
        for s, value in bounds:
            delta[s] += value - template[s]
        for s, extra in shifts:
            delta[s] += extra
        rows.extend(delta[s] for s in slots)
    values = [len(chunks), min(team, len(chunks)), len(slots), *slots, *rows]
    return (ctypes.c_int64 * len(values))(*values)
