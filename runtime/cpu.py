"""CPU executor: JIT a `KernelArtifact` once and call it through ctypes over all
cores: a call whose work pays for it is split into chunks that run on ATen's
OpenMP threads through one native launch (`fusec.runtime.parallel_launch`; a
Python thread pool where PyTorch has no OpenMP runtime).

The per-call path is a dictionary lookup and a few pointer stores. Everything
that follows from the inputs' sizes and strides is worked out once per layout
and kept in a `LaunchPlan`: the views' byte offsets, the index space (adjacent
dims merged where every tensor allows it, so a contiguous tensor is one long
vectorized row), the broadcast strides, the output shapes and the work split
over threads. A call then fills one packed argument array (`int64[]`, the
kernel's arguments in order) and calls the kernel's `<name>.packed(ptr)` entry,
which unpacks it: one ctypes argument instead of dozens.

    kernel = load_kernel(artifact)
    outs = kernel([x, y])     # first call with these sizes/strides makes the plan
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
import os
import threading
import weakref
from collections.abc import Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch
from fusec.backends.llvm_jit import JitModule
from fusec.runtime import cpu_pool, host_code, parallel_launch
from fusec.runtime.kernel_signature import KernelArtifact, KernelSignature
from fusec.runtime.operands import (
    MAX_PLANS,
    broadcast_strides,
    contiguous_strides,
    planned_call,
    prepare,
    put_scalars,
)

NATIVE_LAUNCH_NS = 3_000.0
"""What a parallel launch on the OpenMP threads costs, in ns: 1.4-2.2 us
measured by `benchmarks/kernel_cost.py` on a shared 2-core VM with the threads
still spinning from the last launch, as they are in a model's stream of calls
(2-11 us on busier runs); each chunk of a split must hold at least twice this
much work."""
POOL_LAUNCH_NS = 50_000.0
"""The same for the Python thread pool (a future per chunk, the GIL hand-over:
35-80 us measured)."""
CHUNKS_PER_THREAD = 4
"""Chunks per thread of a native split: its threads claim chunks as they come,
so one that starts late (a busy machine) or runs slow leaves its share to the
others instead of holding up the call."""
TILED_COST = 0.45
"""Nanoseconds per element, at least, of a launch that runs the tiled nest (what
the work split is sized by): a transposed operand's tile copy and its re-read
from the buffer come on top of the kernel's own ops. Measured: relu(a.t() + b)
at 2^16, one thread, 29 us; with the plain estimate (0.24 ns) that launch ran
on one thread."""


def _dispatched_empty_strided(
    size: Sequence[int], stride: Sequence[int], dtype: torch.dtype
) -> torch.Tensor:
    return torch.empty_strided(size, stride, dtype=dtype, device="cpu")


empty_strided_cpu: Any = cpu_pool._empty_strided or _dispatched_empty_strided
"""`empty_strided_cpu(size, stride, dtype)`: an uninitialized CPU tensor. Torch's
own allocation entry for generated code (Inductor's wrappers call it), which
skips the Python argument parser and the dispatcher: about 0.7 us per output
where `torch.empty_strided` takes 1.5-2 us, and on a 64-element kernel the
allocations were most of the call. Falls back to `torch.empty_strided` on a torch
without it. (A kernel's outputs always live on the CPU, whatever default device
a `torch.device` context sets.)"""


def _allocator(shape: Sequence[int], dtype: torch.dtype) -> Callable[..., torch.Tensor]:
    """How a plan allocates a contiguous output of `shape`: `empty_strided_cpu`,
    or for one of `cpu_pool.MIN_BYTES` and more the output pool (`runtime/cpu_pool.py`:
    recycled blocks, no page faults on the kernel's first write)."""
    nbytes = math.prod(shape) * dtype.itemsize
    out_pool = cpu_pool.pool() if nbytes >= cpu_pool.MIN_BYTES else None
    if out_pool is None:
        return empty_strided_cpu
    return functools.partial(out_pool.empty, nbytes=nbytes)


_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


@functools.cache
def _fixed_threads() -> int:
    """`FUSEC_NUM_THREADS` (0: unset), read once."""
    from fusec.runtime import env

    return env.num_threads()


def num_threads() -> int:
    """Threads the CPU executor splits a kernel over: `FUSEC_NUM_THREADS`, else
    the threads PyTorch uses (`torch.set_num_threads`), as a user of PyTorch
    expects of everything that runs on its CPU threads. Read when a layout is
    planned, not per call (as Inductor reads it when it compiles a kernel):
    a plan keeps its split."""
    return _fixed_threads() or torch.get_num_threads()


def _thread_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            workers = max(num_threads(), os.cpu_count() or 1)
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fusec-cpu")
        return _pool


_LLVM_SCALAR = {"f64": "double", "i64": "i64", "i1": "i1"}


def packed_entry_ir(name: str, sig: KernelSignature) -> str:
    """LLVM IR of `<name>.packed(ptr %args)`: loads each argument of `name` from
    an array of 8-byte slots (pointers, i64, f64 bit patterns, i1 as i64) and
    calls it, unless `<name>.tiled` holds the packed entry of the kernel's tiled
    variant (`CpuKernel.use_tiles`), which it then calls instead.

        @"k.tiled" = global ptr null
        define void @"k.packed"(ptr %a) {
          %t = load ptr, ptr @"k.tiled"
          ...                                   ; not null: call %t(%a), return
          %p0 = getelementptr i64, ptr %a, i64 0
          %v0 = load i64, ptr %p0
          ...
          call void @"k"(i64 %v0, ..., ptr %v4, ...)
          ret void
        }
    """
    lrank = sig.loop_rank
    types = ["i64"] * (2 + lrank)
    for _ in range(len(sig.operands) + len(sig.outputs)):
        types += ["ptr"] + ["i64"] * lrank
    types += [_LLVM_SCALAR[dt] for _, dt in sig.scalars]
    if sig.zero_division_flag:
        types.append("ptr")
    lines = [
        f'@"{name}.tiled" = global ptr null',
        f'define void @"{name}.packed"(ptr %a) {{',
        f'  %t = load ptr, ptr @"{name}.tiled"',
        "  %tiled = icmp ne ptr %t, null",
        "  br i1 %tiled, label %variant, label %own",
        "variant:",
        "  call void %t(ptr %a)",
        "  ret void",
        "own:",
    ]
    args = []
    for k, t in enumerate(types):
        lines.append(f"  %p{k} = getelementptr i64, ptr %a, i64 {k}")
        if t == "i1":
            lines.append(f"  %w{k} = load i64, ptr %p{k}")
            lines.append(f"  %v{k} = trunc i64 %w{k} to i1")
        else:
            lines.append(f"  %v{k} = load {t}, ptr %p{k}")
        args.append(f"{t} %v{k}")
    lines.append(f'  call void @"{name}"({", ".join(args)})')
    lines.append("  ret void")
    lines.append("}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class LaunchPlan:
    """What one layout of a kernel's inputs (sizes and strides) needs per call.

    `allocs` are the tensors a call allocates (shape, dtype); `results` index
    them in the group's result order. `pointers` are the packed-array slots that
    get a data pointer: (slot, source, byte offset) where source `i >= 0` is
    input `i` and `-1 - j` is allocation `j`. `template` holds every other slot.
    `chunks` is the work split: per thread, (slot, value) patches (bounds of the
    split dim) and (pointer slot, extra byte offset) patches. `launch` is what
    the kernel's parallel launch takes for them: the native launcher's flat
    patch table (`parallel_launch.chunk_table`), or `chunks` itself for the
    thread pool; None when there is one chunk."""

    allocs: tuple[tuple[tuple[int, ...], torch.dtype], ...]
    results: tuple[int, ...]
    pointers: tuple[tuple[int, int, int], ...]
    template: Any
    chunks: tuple[tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]], ...]
    empty: bool
    launch: Any = None


class CpuKernel:
    """A JIT-compiled host kernel; call it with the group's inputs."""

    def __init__(self, artifact: KernelArtifact):
        self.artifact = artifact
        self.signature = sig = artifact.signature
        code = artifact.code.decode()
        self._jit = JitModule(code + "\n" + packed_entry_ir(artifact.name, sig))
        proto = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
        address = self._jit.address(artifact.name + ".packed")
        self._fn = proto(address)
        lrank = sig.loop_rank
        self._n_mems = len(sig.operands) + len(sig.outputs)
        self._n_slots = 2 + lrank + self._n_mems * (1 + lrank) + len(sig.scalars)
        self._flag_slot: int | None = None
        """The slot of the zero-division flag's address (`zero_division_flag`)."""
        if sig.zero_division_flag:
            self._flag_slot = self._n_slots
            self._n_slots += 1
        self._array = ctypes.c_int64 * self._n_slots
        self._address = address
        self._native = parallel_launch.available()
        self._launch_ns = NATIVE_LAUNCH_NS if self._native else POOL_LAUNCH_NS
        self._run_chunks: Callable[[Any, Any], None] | None = None
        """The native launcher bound to this kernel, from the first plan that
        splits (`_native_launch`): compiling it is ~15 ms a process need not
        spend when no call is ever split."""
        self._doubles = ctypes.c_double * self._n_slots
        first_scalar = 2 + lrank + self._n_mems * (1 + lrank)
        self._scalar_slots = tuple(
            (first_scalar + k, i, dt) for k, (i, dt) in enumerate(sig.scalars)
        )
        self._has_f64 = any(dt == "f64" for _, dt in sig.scalars)
        self._keyed = tuple(sorted({s.input for s in sig.operands}))
        self._plans: dict[tuple[Any, ...], LaunchPlan] = {}
        self._packed: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        """The plans as flat tuples, for the generated fast path."""
        self._generated = False
        self.tiled_variant: Callable[[], CpuKernel | None] | None = None
        """Gets the kernel's tiled variant (`fusec.codegen.kernel.TILED_CPU`, through the
        kernel cache, which sets this); None: there is none to get."""
        self._tiled: CpuKernel | None = None
        self._tiles_lock = threading.Lock()

    def __call__(self, inputs: Sequence[torch.Tensor | float | int | bool]) -> list[torch.Tensor]:
        return self.call(inputs)

    def call(self, inputs: Sequence[Any]) -> list[torch.Tensor]:
        """The kernel's fastest entry (the host program calls it directly):
        replaced by the generated fast path once the first plan exists."""
        return self._call_planned(inputs)

    def _call_planned(self, inputs: Sequence[Any]) -> list[torch.Tensor]:
        """A call through its layout's plan, made first if need be (the generated
        fast path lands here on a layout it has not seen)."""
        key = []
        for i in self._keyed:
            t = inputs[i]
            key.append(t.shape)  # type: ignore[union-attr]
            key.append(t.stride())  # type: ignore[union-attr]
        k = tuple(key)
        plan = self._plans.get(k)
        if plan is None:
            plan = self._plan(inputs, k)
            if plan is None:
                return self._call_unplanned(inputs)
        allocs = [
            _allocator(shape, dtype)(shape, contiguous_strides(shape), dtype)
            for shape, dtype in plan.allocs
        ]
        results = [allocs[j] for j in plan.results]
        if plan.empty:
            return results
        args = self._array.from_buffer_copy(plan.template)
        for slot, src, offset in plan.pointers:
            t = inputs[src] if src >= 0 else allocs[-1 - src]
            args[slot] = t.data_ptr() + offset  # type: ignore[union-attr]
        if self._scalar_slots:
            self._put_scalars(args, inputs)
        flag = self._flag(args)
        if plan.launch is None:
            self._fn(args)
        else:
            self._parallel(args, plan.launch)
        _check_zero_division(flag)
        return results

    def _flag(self, args: Any) -> ctypes.c_int8 | None:
        """A zeroed byte for the kernel's zero-division flag, its address in `args`."""
        if self._flag_slot is None:
            return None
        flag = ctypes.c_int8(0)
        args[self._flag_slot] = ctypes.addressof(flag)
        return flag

    def _parallel(self, args: Any, launch: Any) -> None:
        """Runs a split call: a plan's `launch` is a native chunk table while
        `_native` holds (then `_run_chunks` is bound: `_native_launch`), else
        its chunks for the Python thread pool."""
        if self._run_chunks is not None:
            self._run_chunks(args, launch)
        else:
            self._pool_parallel(args, launch)

    def _native_launch(self) -> bool:
        """Binds the native launcher (compiling it on the process's first split
        call); False, and the kernel splits on the thread pool from now on, when
        LLVM refused it."""
        if self._run_chunks is None and self._native:
            run_chunks = parallel_launch.launcher()
            if run_chunks is None:
                self._native = False
                self._launch_ns = POOL_LAUNCH_NS
            else:
                self._run_chunks = functools.partial(run_chunks, self._address, self._n_slots)
        return self._native

    def _pool_parallel(self, args: Any, chunks: Sequence[Any]) -> None:
        """A split call over the Python thread pool (no OpenMP runtime found)."""
        calls = []
        for bounds, shifts in chunks:
            a = self._array.from_buffer_copy(args)
            for slot, value in bounds:
                a[slot] = value
            for slot, extra in shifts:
                a[slot] += extra
            calls.append(a)
        pool = _thread_pool()
        futures = [pool.submit(self._fn, a) for a in calls[1:]]
        self._fn(calls[0])
        for f in futures:
            f.result()

    def _generate_fast(self, plan: LaunchPlan) -> None:
        """Installs the fast path: the plan lookup, allocations, pointer stores and
        the call written out for this kernel's operands (the slots, sources and
        allocation dtypes are the same in every plan of a kernel; sizes, offsets
        and the template are per plan, in `self._packed`).

            def fast(inputs):
                t0 = inputs[0]
                p = get((t0.shape, t0.stride()))
                if p is None:
                    return planned(inputs)
                sh0, st0, al0, o0, o1, template, chunks = p
                a0 = al0(sh0, st0, D0)         # empty_strided_cpu, or the pool's
                args = copy(template)
                ptr_t0 = t0.data_ptr()
                ptr_a0 = a0.data_ptr()
                args[3] = ptr_t0 + o0
                args[5] = ptr_a0 + o1
                fn(args) if chunks is None else parallel(args, chunks)
                return [a0]

        Each tensor's `data_ptr()` is read once, however many of its views
        (chunks, slices) the kernel takes.
        """
        env: dict[str, Any] = {
            "get": self._packed.get,
            "planned": self._call_planned,
            "copy": self._array.from_buffer_copy,
            "doubles": self._doubles.from_buffer,
            "fn": self._fn,
            "parallel": self._run_chunks or self._parallel,
        }
        lines = ["def fast(inputs):"]
        for i in self._keyed:
            lines.append(f"    t{i} = inputs[{i}]")
        key = "".join(f"t{i}.shape, t{i}.stride(), " for i in self._keyed)
        lines.append(f"    p = get(({key}))")
        lines.append("    if p is None:")
        lines.append("        return planned(inputs)")
        names = [f"{n}{j}" for j in range(len(plan.allocs)) for n in ("sh", "st", "al")]
        names += [f"o{k}" for k in range(len(plan.pointers))]
        lines.append(f"    {', '.join(names)}, template, chunks = p")
        for j, (_, dtype) in enumerate(plan.allocs):
            env[f"D{j}"] = dtype
            lines.append(f"    a{j} = al{j}(sh{j}, st{j}, D{j})")
        lines.append("    args = copy(template)")
        for src in dict.fromkeys(src for _, src, _ in plan.pointers):
            t = f"t{src}" if src >= 0 else f"a{-1 - src}"
            lines.append(f"    ptr_{t} = {t}.data_ptr()")
        for k, (slot, src, _) in enumerate(plan.pointers):
            t = f"t{src}" if src >= 0 else f"a{-1 - src}"
            lines.append(f"    args[{slot}] = ptr_{t} + o{k}")
        if self._has_f64:
            lines.append("    d = doubles(args)")
        for slot, i, dt in self._scalar_slots:
            if dt == "f64":
                lines.append(f"    d[{slot}] = inputs[{i}]")
            elif dt == "i1":
                lines.append(f"    args[{slot}] = 1 if inputs[{i}] else 0")
            else:
                lines.append(f"    args[{slot}] = int(inputs[{i}])")
        if self._flag_slot is not None:
            env["c_int8"], env["addressof"] = ctypes.c_int8, ctypes.addressof
            env["check_zero_division"] = _check_zero_division
            lines.append("    flag = c_int8(0)")
            lines.append(f"    args[{self._flag_slot}] = addressof(flag)")
        lines.append("    if chunks is None:")
        lines.append("        fn(args)")
        lines.append("    else:")
        lines.append("        parallel(args, chunks)")
        if self._flag_slot is not None:
            lines.append("    check_zero_division(flag)")
        lines.append("    return [" + ", ".join(f"a{j}" for j in plan.results) + "]")
        self.call = host_code.define("\n".join(lines), env, "fast", "cpu_call")  # type: ignore[method-assign]

    def _call_unplanned(self, inputs: Sequence[Any]) -> list[torch.Tensor]:
        """A call whose operands are not all views of the inputs (a `reshape` view
        step had to copy): everything is worked out for this call alone."""
        sig = self.signature
        operands, space, outs, results = prepare(sig, inputs)
        if math.prod(space) == 0:
            return results
        args = self._array()
        sizes = list(space) if space else [1]
        args[1] = sig.parallel_extent(sizes)
        lrank = sig.loop_rank
        for d in range(lrank):
            args[2 + d] = sizes[d]
        slot = 2 + lrank
        for t in (*operands, *outs):
            args[slot] = t.data_ptr()
            for d, st in enumerate(
                _normalized(broadcast_strides(t, space) if space else [0], sizes)
            ):
                args[slot + 1 + d] = st
            slot += 1 + lrank
        self._put_scalars(args, inputs)
        flag = self._flag(args)
        self._fn(args)
        _check_zero_division(flag)
        return results

    def _put_scalars(self, args: Any, inputs: Sequence[Any]) -> None:
        doubles = self._doubles.from_buffer(args) if self._has_f64 else None
        put_scalars(args, doubles, self._scalar_slots, inputs)

    # ------------------------------------------------------------------ plans

    def _plan(self, inputs: Sequence[Any], key: tuple[Any, ...]) -> LaunchPlan | None:
        """Works out a `LaunchPlan` from one call's inputs (through `prepare`, the
        executors' shared reference for views, shapes and exits); None when an
        operand is a copy rather than a view of its input."""
        sig = self.signature
        planned = planned_call(sig, inputs)
        if planned is None:
            return None
        operands, space, outs, allocs, result_index, sources = planned
        alloc_specs = tuple((tuple(a.shape), a.dtype) for a in allocs)
        empty = math.prod(space) == 0
        plan_template = self._array()
        if empty:
            plan = LaunchPlan(alloc_specs, result_index, (), plan_template, (), True)
            self._remember(key, plan)
            return plan
        lrank = sig.loop_rank
        sizes = list(space) if space else [1]
        tensors = [*operands, *outs]
        strides = [
            _normalized(broadcast_strides(t, space) if space else [0], sizes) for t in tensors
        ]
        # A reduction kernel knows its reduced dims by position: they keep their order.
        reducing = bool(sig.reduce_dims)
        cost = sig.cost
        if not reducing:
            fixed = [_size_one_dims(t, lrank) for t in operands]
            sizes, strides, order = _memory_order(sizes, strides, fixed)
            _coalesce(sizes, strides)
            inner_fixed = [order[-1] in dims for dims in fixed]
            if _wants_tiles(sizes, strides[: len(operands)], inner_fixed):
                self.use_tiles()
                cost = max(cost, TILED_COST)
        plan_template[0] = 0
        plan_template[1] = sig.parallel_extent(sizes)
        for d in range(lrank):
            plan_template[2 + d] = sizes[d]
        pointers = []
        slot = 2 + lrank
        item = [t.element_size() for t in tensors]
        for k in range(len(tensors)):
            pointers.append((slot, *sources[k]))
            for d in range(lrank):
                plan_template[slot + 1 + d] = strides[k][d]
            slot += 1 + lrank
        threads = _chunk_count(math.prod(sizes), cost, self._launch_ns)
        native = threads > 1 and self._native
        want = threads * CHUNKS_PER_THREAD if native else threads
        if reducing:  # [begin, end) ranges over the first kept dim
            chunks = _split_range(sig.parallel_extent(sizes), want)
        else:
            chunks = _split(sizes, strides, item, [p[0] for p in pointers], want)
        launch: Any = chunks if len(chunks) > 1 else None
        # A launcher LLVM refused leaves these chunks to the thread pool.
        if launch is not None and native and self._native_launch():
            launch = parallel_launch.chunk_table(plan_template, chunks, threads)
        plan = LaunchPlan(
            alloc_specs, result_index, tuple(pointers), plan_template, chunks, False, launch
        )
        self._remember(key, plan)
        return plan

    def use_tiles(self) -> None:
        """Makes every later call run the kernel's tiled variant (built now, once):
        the same results, plus a tiled nest for launches with a transposed or an
        expanded operand (`fusec.passes.lowering.cpu_loop_nest`); other launches run its
        plain nest, the same code as this kernel's. A variant that cannot be had
        leaves this kernel as it is."""
        with self._tiles_lock:
            if self._tiled is not None or self.tiled_variant is None:
                return
            variant = self.tiled_variant()
            self.tiled_variant = None  # one try
            # The variant's cost counts its tile copies and both nests; the split
            # keeps this kernel's per-element estimate.
            if variant is None or variant.signature != dataclasses.replace(
                self.signature, cost=variant.signature.cost
            ):
                return
            self._tiled = variant  # keeps its code alive
            entry = variant._jit.address(variant.artifact.name + ".packed")
            slot = self._jit.global_address(self.artifact.name + ".tiled")
            ctypes.c_void_p.from_address(slot).value = entry

    def _remember(self, key: tuple[Any, ...], plan: LaunchPlan) -> None:
        if len(self._plans) >= MAX_PLANS:
            old = next(iter(self._plans))
            self._plans.pop(old)
            self._packed.pop(old, None)
        self._plans[key] = plan
        if plan.empty:
            return  # zero-size layouts take the planned path
        self._packed[key] = (
            # Contiguous strides: the outputs are what `torch.empty` would make.
            *(
                x
                for shape, dtype in plan.allocs
                for x in (shape, contiguous_strides(shape), _allocator(shape, dtype))
            ),
            *(offset for _, _, offset in plan.pointers),
            plan.template,
            plan.launch,
        )
        if not self._generated:
            self._generated = True
            self._generate_fast(plan)


def _normalized(strides: Sequence[int], sizes: Sequence[int]) -> list[int]:
    """Strides with 0 on size-1 dims: the index there is always 0, and a 0 is
    what the kernel assumes on dims it knows to be 1 (so merging stays right)."""
    return [0 if n == 1 else s for s, n in zip(strides, sizes, strict=True)]


def _size_one_dims(t: torch.Tensor, rank: int) -> set[int]:
    """Dims of the index space where operand `t` is 1 (or absent): the kernel may
    hold a constant 0 stride there (its type says 1)."""
    lead = rank - t.dim()
    return set(range(lead)) | {lead + d for d, n in enumerate(t.shape) if n == 1}


def _memory_order(
    sizes: list[int], strides: list[list[int]], fixed: Sequence[set[int]]
) -> tuple[list[int], list[list[int]], list[int]]:
    """The loop order: the dim along which most tensors are contiguous (stride 1)
    becomes the innermost one, so a transposed input is read along its memory
    rather than across it; the other dims keep their order.

        a.t() + b.t() -> out:  a, b strides (1, n), out (n, 1)  ->  loop dim 0 innermost

    Tensors that are still strided on that dim (operands that disagree on their
    fastest dim) get theirs second innermost, where the kernel tiles the two
    (`fusec.passes.lowering.cpu_loop_nest`), so their cache lines are reused:

        a.t() + b -> out:  a strides (1, n), b and out (n, 1)  ->  dims (0, 1), tiled

    Dims are only moved where the kernel's constant 0 strides stay right: an
    operand's size-1 dim (`fixed`) must receive a dim it has stride 0 along.
    Returns the reordered sizes and strides and the order (original dims)."""
    rank = len(sizes)
    identity = list(range(rank))
    if rank < 2:
        return sizes, strides, identity
    unit = [sum(1 for s in strides if s[d] == 1) for d in range(rank)]
    best = max(range(rank), key=lambda d: (unit[d], d))
    if unit[best] <= unit[rank - 1] or sizes[best] == 1:
        best = rank - 1
    across = [sum(1 for s in strides if s[d] == 1 and s[best] > 1) for d in range(rank)]
    tile = max((d for d in range(rank) if d != best), key=lambda d: (across[d], d))
    orders = [[d for d in range(rank) if d != best] + [best]]
    if across[tile] and sizes[tile] > 1:
        orders.insert(0, [d for d in range(rank) if d not in (tile, best)] + [tile, best])
    for order in orders:
        if order == identity:
            break
        if all(s[order[j]] == 0 for s, dims in zip(strides, fixed, strict=False) for j in dims):
            return [sizes[d] for d in order], [[s[d] for d in order] for s in strides], order
    return sizes, strides, identity


def _wants_tiles(
    sizes: Sequence[int], strides: Sequence[Sequence[int]], inner_fixed: Sequence[bool]
) -> bool:
    """Whether a launch in this loop order runs faster in the tiled variant's
    tiled nest, the condition that kernel checks (`fusec.passes.lowering.cpu_loop_nest`):
    an operand contiguous along the second innermost dim and strided along the
    innermost one (transposed), or one with a 0 stride along the innermost dim
    that its type does not make a constant (`inner_fixed`: expanded at runtime),
    which LLVM's stride-1 versioning runs as a scalar loop.

        relu(a.t() + b):   a strides (1, n), b (n, 1)    ->  True (a is transposed)
        x + c[:, None].expand(r, n):  c strides (1, 0)   ->  True (c is expanded)
        x + c[:, None]:    c is [r, 1]: a constant 0     ->  False
    """
    if len(sizes) < 2 or sizes[-1] < 2:
        return False
    return any(
        (s[-2] == 1 and s[-1] > 1) or (s[-1] == 0 and not fixed)
        for s, fixed in zip(strides, inner_fixed, strict=True)
    )


def _coalesce(sizes: list[int], strides: list[list[int]]) -> None:
    """Merges each dim into the next inner one where every tensor allows it
    (stride[outer] == stride[inner] * size[inner]), in place: the merged dim
    takes the inner position and the outer one becomes size 1. Size-1 dims are
    skipped. The kernel's static zero strides stay right: a tensor with a 0 at
    the inner position has 0 at the outer one too, or the dims do not merge."""
    inner = len(sizes) - 1
    for d in range(len(sizes) - 2, -1, -1):
        if sizes[d] == 1:
            continue
        if sizes[inner] == 1 or any(s[d] != s[inner] * sizes[inner] for s in strides):
            inner = d
            continue
        sizes[inner] *= sizes[d]
        sizes[d] = 1
        for s in strides:
            s[d] = 0


Chunks = tuple[tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]], ...]

_ONE_CHUNK: Chunks = (((), ()),)

_ALIGN = 16
"""Elements a split of the innermost dim keeps its bounds a multiple of: whole
16-lane vectors for the kernel's vector loop (no scalar remainder in the middle
of a row) and, for 4-byte and wider elements, no cache line of the output
written by two threads."""


def _chunk_count(elements: int, cost: float, launch_ns: float) -> int:
    """How many threads a call's work is worth: its estimated time on one core
    (`elements` x the kernel's `cost` per element) at least twice what a launch
    costs per thread, so that splitting pays for itself; at most `num_threads()`.

        2^12 elements x 0.54 ns (bias + GELU) = 2.2 us, native launch 3 us -> 1 thread
        2^14 elements x 0.54 ns               = 8.8 us                    -> 2 threads
        2^20 elements x 0.54 ns               = 566 us                    -> all threads
    """
    return max(1, min(num_threads(), int(elements * cost // (2 * launch_ns))))


def _split_range(n: int, want: int) -> Chunks:
    """The work split over threads through the kernel's [begin, end) arguments
    alone, over a range of `n` (a reduction kernel's first kept dim)."""
    chunks = min(want, n)
    if chunks <= 1:
        return _ONE_CHUNK
    bounds = [n * k // chunks for k in range(chunks + 1)]
    return tuple((((0, bounds[k]), (1, bounds[k + 1])), ()) for k in range(chunks))


def _split_dim(sizes: Sequence[int], want: int) -> int:
    """The dim a split of `want` chunks narrows: the outermost one that divides
    into `want` near-equal parts (its size a multiple of `want`, or at least
    8 x `want`, so no chunk is more than 1/8 bigger than another), else the
    largest one. Any dim will do: the kernel loops over the others in full, so
    the chunks are blocks of the index space whatever their position."""
    for d, n in enumerate(sizes):
        if n > 1 and (n % want == 0 or n >= 8 * want):
            return d
    return max(range(len(sizes)), key=lambda d: (sizes[d], -d))


def _split(
    sizes: Sequence[int],
    strides: Sequence[Sequence[int]],
    item: Sequence[int],
    ptr_slots: list[int],
    want: int,
) -> Chunks:
    """The work split over `want` threads (fewer if the chosen dim is smaller),
    along the dim `_split_dim` picks: dim 0 through the kernel's [begin, end)
    arguments, a deeper dim by narrowing its size and moving every tensor's base
    pointer. A split of the innermost dim keeps bounds on `_ALIGN` elements.

        [1, 2^20] (merged), 2 threads  -> dim 1: sizes 2^19 each, pointers + 2^19 x stride
        [2, 2^20] (sliced), 2 threads  -> dim 0: [0, 1) and [1, 2)
        [3, 2^20], 2 threads           -> dim 1 (3 rows would split 2 : 1)
    """
    if want <= 1 or math.prod(sizes) <= 1:
        return _ONE_CHUNK
    d = _split_dim(sizes, want)
    n = sizes[d]
    chunks = min(want, n)
    if chunks <= 1:
        return _ONE_CHUNK
    align = _ALIGN if d == len(sizes) - 1 and n >= _ALIGN * chunks else 1
    bounds = [min(n, (n * k // chunks + align - 1) // align * align) for k in range(chunks)]
    bounds.append(n)
    out = []
    for k in range(chunks):
        lo, hi = bounds[k], bounds[k + 1]
        if d == 0:
            out.append((((0, lo), (1, hi)), ()))
        else:
            size_slot = (2 + d, hi - lo)
            shifts = tuple(
                (slot, lo * s[d] * it)
                for slot, s, it in zip(ptr_slots, strides, item, strict=True)
                if s[d]
            )
            out.append(((size_slot,), shifts))
    return tuple(out)


def _check_zero_division(flag: ctypes.c_int8 | None) -> None:
    """Eager's error for what the kernel flagged: 1, an integer division by
    zero; 2, an embedding index out of the table's range
    (`fusec.passes.lowering.gather`)."""
    if flag is not None and flag.value:
        if flag.value == 2:
            raise IndexError("index out of range in self")
        raise RuntimeError("ZeroDivisionError")


_loaded: MutableMapping[KernelArtifact, CpuKernel] = weakref.WeakValueDictionary()
"""Loaded kernels by artifact, weakly: each goes (its MCJIT engine freed) with
the last program that holds it (`fusec.runtime.kernel_table`)."""
_loaded_lock = threading.Lock()


def load_kernel(artifact: KernelArtifact) -> CpuKernel:
    """The callable host kernel of `artifact`, JIT-compiled once per artifact."""
    with _loaded_lock:
        k = _loaded.get(artifact)
        if k is None:
            k = _loaded[artifact] = CpuKernel(artifact)
        return k
