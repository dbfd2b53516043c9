"""fusec: a fusion compiler for PyTorch graphs, built MLIR-style on xDSL.

    import fusec
    f = fusec.compile(fn_or_module)          # or torch.compile(model, backend="fusec")
    f(*inputs); f.launches_per_call
    fusec.import_graph(fn, example_inputs)   # the aten-dialect module
    fusec.cache_stats()                      # kernel cache counters

The public names import torch lazily, so `fusec-opt` (which imports this package)
stays fast. `torch.compile(..., backend="fusec")` finds the backend through the
`torch_dynamo_backends` entry point (`fusec.backend:fusec_backend`), so it works
without importing fusec first.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["compile", "import_graph", "cache_stats", "__version__"]


def compile(graph: Any, example_inputs: Any = None, **options: Any) -> Any:
    """Compile a function, `nn.Module` or `torch.fx.GraphModule`; see `fusec.compiled`."""
    from fusec.compiled import compile as _compile

    return _compile(graph, example_inputs, **options)


def import_graph(fn_or_module: Any, example_inputs: Any = None) -> Any:
    """The `aten`-dialect `ModuleOp` of a function, module, GraphModule (torch- or
    ATen-level) or `torch.export.ExportedProgram` on `example_inputs` (for an
    ExportedProgram, its own example inputs by default)."""
    from fusec.exported import import_exported, is_exported_program
    from fusec.importer import import_graph as _import_graph

    if is_exported_program(fn_or_module):
        return import_exported(fn_or_module, example_inputs)

    return _import_graph(fn_or_module, example_inputs)


def cache_stats() -> dict[str, Any]:
    """Kernel cache counters: kernels_compiled, memory_hits, disk_hits, entries, ..."""
    from fusec.runtime.cache import cache_stats as _cache_stats

    return _cache_stats()
