"""The steps of compiling a specialization that are not `CompiledFunction`'s
own: running a pass pipeline, the warm-start program cache, kernel lookups
noted for `fusec.explain`, groups' canonical keys for profiler events, and
what compiling must leave as it found (random generators, module buffers, the
cyclic GC).

    with rng_preserved(args), buffers_preserved(gm):
        imported = import_fx(gm, args, name)       # runs the graph once
    run_pipeline(imported.module, compile_pipeline(args))
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from fusec.observability import logs

if TYPE_CHECKING:
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp


def context() -> Context:
    """An xDSL context with every dialect fusec reads (`fusec.codegen.ir_text`)."""
    from fusec.codegen.ir_text import context

    return context()


def available_passes() -> dict[str, Any]:
    from fusec.passes import FUSEC_PASSES
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **FUSEC_PASSES}


def run_pipeline(module: ModuleOp, pipeline: str | None = None) -> ModuleOp:
    """Apply `pipeline` (default `COMPILE_PIPELINE`: fuse, then guard for CPU
    kernels) to `module` in place."""
    if pipeline is None:
        from fusec.codegen.pipelines import COMPILE_PIPELINE

        pipeline = COMPILE_PIPELINE
    if pipeline:
        from xdsl.passes import PassPipeline

        PassPipeline.parse_spec(available_passes(), pipeline).apply(context(), module)
        module.verify()
    return module


def recording(
    provider: Callable[[Any], Any], records: dict[Any, Any], cache: Any
) -> Callable[[Any], Any]:
    """`provider`, noting per group whether its kernel was built, found in the cache
    (memory or disk), or could not be had (`explanation.KernelRecord`)."""
    from fusec.observability.explanation import KernelRecord

    stats = getattr(cache, "stats", None)

    def counters() -> tuple[int, int, int]:
        if stats is None:
            return (0, 0, 0)
        return (stats.kernels_compiled, stats.memory_hits, stats.disk_hits)

    def kernel_for(group: Any) -> Any:
        before = counters()
        start = time.perf_counter()
        kernel = provider(group)
        seconds = time.perf_counter() - start
        built, memory, disk = (a - b for a, b in zip(counters(), before, strict=True))
        target = getattr(kernel, "target", "") or ("cpu" if kernel is not None else "")
        if kernel is None:
            failure = getattr(cache, "failure", None)
            why = None
            try:
                why = failure(group) if failure is not None else None
            except Exception:  # noqa: BLE001 - only a better message is at stake
                why = None
            reason = why or "no kernel provider for these inputs (use_kernels, device or toolchain)"
            record = KernelRecord("none", reason, target, seconds)
        else:
            status = "compiled" if built else "disk cache hit" if disk else "memory cache hit"
            if not (built or memory or disk):
                status = "provided"
            record = KernelRecord(status, "", target, seconds)
        records[group] = record
        if logs.cache.isEnabledFor(logging.INFO):
            logs.cache.info(
                "kernel lookup: %s in %.3fs (cache: %s)", record.status, seconds, _stats_line(cache)
            )
        return kernel

    return kernel_for


def group_key(group: Any) -> str:
    """A group's canonical key, for its kernel's profiler events."""
    from fusec.passes.canonical import canonical_key

    return canonical_key(group).digest


def _stats_line(cache: Any) -> str:
    stats = getattr(cache, "stats", None)
    if stats is None:
        return "no counters"
    return (
        f"{stats.kernels_compiled} compiled, {stats.memory_hits} memory hits, "
        f"{stats.disk_hits} disk hits"
    )


def cached_program(
    gm: torch.fx.GraphModule, args: Sequence[Any], pipeline: str, name: str, imported: Any
) -> ModuleOp | None:
    """The module after `pipeline` from the warm-start cache (a previous process
    compiled this graph for these exact inputs), with `imported.func` pointed at
    its function; None on a miss."""
    from fusec.codegen.ir_text import parse_module
    from fusec.runtime import program_cache
    from xdsl.dialects import func

    key = program_cache.program_key(gm, args, pipeline, name) if program_cache.enabled() else None
    module = None if key is None else program_cache.load_program(key, parse_module)
    if module is None:
        return None
    sym = imported.func.sym_name.data
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == sym:
            if len(op.args) != len(imported.func.args):
                return None
            imported.func = op
            return module
    return None


def store_program(
    gm: torch.fx.GraphModule, args: Sequence[Any], pipeline: str, name: str, text: str
) -> None:
    from fusec.runtime import program_cache

    key = program_cache.program_key(gm, args, pipeline, name) if program_cache.enabled() else None
    if key is not None:
        program_cache.store_program(key, text)


def compile_pipeline_for(args: Sequence[Any], lone_copies: bool = False) -> str:
    """`COMPILE_PIPELINE` with guards for the device the inputs are on (a CUDA
    device by index: its kernels are loaded for that device); `lone_copies`:
    copies that fuse with nothing are kernels (`compile_pipeline`)."""
    from fusec.codegen.pipelines import compile_pipeline

    devices = [a.device for a in args if isinstance(a, torch.Tensor)]
    device = devices[0] if devices else torch.device("cpu")
    return compile_pipeline("cpu" if device.type == "cpu" else str(device), lone_copies)


@contextlib.contextmanager
def rng_preserved(args: Sequence[Any]) -> Iterator[None]:
    """Restores the CPU generator and those of the CUDA devices in `args` after
    the block, so work done for compiling draws no random numbers."""
    devices = sorted(
        {a.device.index or 0 for a in args if isinstance(a, torch.Tensor) and a.is_cuda}
    )
    with torch.random.fork_rng(devices=devices):
        yield


@contextlib.contextmanager
def buffers_preserved(gm: torch.nn.Module) -> Iterator[None]:
    """Restores the buffers of `gm`'s modules in training mode after the block
    (a module in eval mode writes none of its buffers; in-place writes the graph
    itself makes run on clones in the import). The import runs the graph once to
    know its values, and a training-mode BatchNorm run as an opaque op updates
    `running_mean`, `running_var` and `num_batches_tracked`."""
    saved = [
        (b, b.clone())
        for m in gm.modules()
        if m.training
        for b in m.buffers(recurse=False)
        if b is not None and b.layout == torch.strided
    ]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, old in saved:
                b.copy_(old)


GC_PAUSE_MAX_NODES = 256
"""Graphs of at most this many fx nodes compile with Python's cyclic GC paused
(`gc_paused`)."""


@contextlib.contextmanager
def gc_paused(nodes: int) -> Iterator[None]:
    """Python's automatic cyclic GC off while a graph of at most
    `GC_PAUSE_MAX_NODES` nodes compiles, then one collection of the young
    generations. Compiling allocates enough IR objects to set off a full
    collection, which walks everything the process holds (torch's modules and
    tensors: about a quarter of a small graph's cold compile); the compile's own
    garbage is young, so collecting generations 0 and 1 afterwards frees it
    without that walk. Larger graphs compile with the GC as it is: the garbage
    their compile leaves between collections grows with them."""
    if nodes > GC_PAUSE_MAX_NODES or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(1)


def getter(source: tuple[str, Any], root: torch.nn.Module) -> Callable[[Sequence[Any]], Any]:
    kind, where = source
    if kind == "arg":
        return lambda args, i=where: args[i]
    parts = where.split(".")

    def fetch(args: Sequence[Any]) -> Any:
        obj: Any = root
        for p in parts:
            obj = getattr(obj, p)
        return obj

    return fetch
