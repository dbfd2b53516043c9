"""fusec: a fusion compiler for PyTorch graphs, built MLIR-style on xDSL.

    import fusec
    f = fusec.compile(fn_or_module)          # or torch.compile(model, backend="fusec")
    f(*inputs); f.launches_per_call
    fusec.import_graph(fn, example_inputs)   # the aten-dialect module
    fusec.cache_stats()                      # kernel cache counters
    print(fusec.explain(fn, *inputs))        # what fused, what did not and why
    fusec.set_logs(fusion=True)              # or FUSEC_LOGS=fusion,guards,...

The public names import torch lazily, so `fusec-opt` (which imports this package)
stays fast. `torch.compile(..., backend="fusec")` finds the backend through the
`torch_dynamo_backends` entry point (`fusec.api.backend:fusec_backend`), so it works
without importing fusec first.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = [
    "compile",
    "explain",
    "set_logs",
    "dynamo_graphs",
    "import_graph",
    "cache_stats",
    "FusionError",
    "__version__",
]


def compile(graph: Any, example_inputs: Any = None, **options: Any) -> Any:
    """Compile a function, an `nn.Module` or a `torch.fx.GraphModule` with fusec.

    fast = fusec.compile(fn_or_module, example_inputs=None, **options)
    out = fast(*inputs)          # same results as fn_or_module(*inputs)

    The first call with new kinds of inputs (dtype, device, rank, size-1 dims,
    contiguity, autograd) compiles a specialization; later calls only launch.
    `example_inputs`, when given, compiles their specialization right away.

    Options (the fields of `fusec.api.compiled.CompileOptions`):

    max_specializations: int = 8
        How many input specializations to compile; past that, a guarded program
        is reused (groups whose guard fails run their ops unfused) or the call
        runs eagerly, with one warning.
    pipeline: str | None = None
        The pass pipeline to run after import (a `fusec-opt -p` string); None is
        `fusec.codegen.pipelines.compile_pipeline(device)`: the `--fuse` pipeline, then
        `guard` for the inputs' device. E.g. "...,fuse{arg-limit=32},...".
    target: str = "cpu"
        Kernel target for CPU inputs ("cpu"); an "sm_XX" value asks for GPU
        kernels of that architecture for CUDA inputs (CPU inputs still get CPU ones).
    use_kernels: bool = True
        False runs every fused group through PyTorch (debugging, tests).
    cache: KernelCache | None = None
        The kernel cache to use; None is the process-wide one
        (`$FUSEC_CACHE_DIR`, default the user cache dir).
    cuda_graphs: bool = False
        Capture each specialization's launches in a CUDA graph and replay it.
    strict: bool = False
        Raise `fusec.FusionError`, naming the op and its source line, when an op
        that could have fused did not (argument limit, a write that may alias, a
        group without a kernel) or the graph would run eagerly, or past
        `max_specializations` (where guards may fail and ops run unfused).
    program_cache: bool = True
        Reuse the whole compiled program (IR after the pipeline) from the on-disk
        warm-start cache when a previous process compiled this graph for the same
        inputs; off under `strict` and in `fusec.explain`. `FUSEC_PROGRAM_CACHE=0`
        turns it off everywhere.

    The result is a `CompiledFunction`: `launches_per_call` (kernels the last call
    launched), `ir()` (the IR after the pipeline), `explain()` (a `fusec.explain`
    report without a new call), `specializations`. See `fusec.explain` and
    `fusec.set_logs` / `FUSEC_LOGS` for what fused and why. What torch.fx cannot
    trace (Python reading sizes, loops over sizes, Hugging Face models, modules
    with hooks) is captured through Dynamo with the same options instead: a
    `fusec.api.captured.CapturedFunction` with the same `launches_per_call`,
    `ir()` and `explain()`, over every graph Dynamo hands over.
    """
    from fusec.api.entry import compile as _compile

    return _compile(graph, example_inputs, **options)


def explain(
    fn_or_module: Any,
    *example_inputs: Any,
    backend: str = "fusec",
    profile: bool = False,
    **options: Any,
) -> Any:
    """Compile `fn_or_module`, run it once on `example_inputs`, and return a report
    of what fused: groups (ops, kernel key, built or cached), each op left outside a
    group with the fuse pass's reason, the specializations and why each was made.
    `print(report)`; `report.save_html("fusion.html")` draws the fusion graph.
    `backend="torch.compile"` reports every graph Dynamo hands over; `options` are
    `fusec.compile`'s. `profile=True` adds the time of each kernel and each op
    run through PyTorch (`report.profiles`). See `fusec.api.explain.explain`."""
    from fusec.api.explain import explain as _explain

    return _explain(fn_or_module, *example_inputs, backend=backend, profile=profile, **options)


def set_logs(spec: str | None = None, **channels: Any) -> None:
    """Turn log channels on: `fusec.set_logs(fusion=True, guards=True)` or
    `fusec.set_logs("fusion,kernels")`, as `FUSEC_LOGS=...`. Channels: fusion,
    guards, recompiles, kernels, cache (or all), and host_code (the generated
    host code's source, which all leaves out). See `fusec.observability.logs`."""
    from fusec.observability.logs import set_logs as _set_logs

    _set_logs(spec, **channels)


def dynamo_graphs() -> list[Any]:
    """The `CompiledFunction`s of the graphs `torch.compile(..., backend="fusec")`
    handed over (still alive), oldest first; each has `launches_per_call`."""
    from fusec.api.backend import dynamo_graphs as _dynamo_graphs

    return _dynamo_graphs()


def __getattr__(name: str) -> Any:
    if name == "FusionError":
        from fusec.api.compiled import FusionError

        return FusionError
    raise AttributeError(f"module 'fusec' has no attribute {name!r}")


def import_graph(fn_or_module: Any, example_inputs: Any = None) -> Any:
    """The `aten`-dialect `ModuleOp` of a function, module, GraphModule (torch- or
    ATen-level) or `torch.export.ExportedProgram` on `example_inputs` (for an
    ExportedProgram, its own example inputs by default)."""
    from fusec.api.exported import import_exported, is_exported_program
    from fusec.frontend.importer import import_graph as _import_graph

    if is_exported_program(fn_or_module):
        return import_exported(fn_or_module, example_inputs)

    return _import_graph(fn_or_module, example_inputs)


def cache_stats() -> dict[str, Any]:
    """Kernel cache counters: kernels_compiled, memory_hits, disk_hits, entries, ..."""
    from fusec.runtime.cache import cache_stats as _cache_stats

    return _cache_stats()
