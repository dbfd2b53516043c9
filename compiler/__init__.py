"""fusec: a fusion compiler for PyTorch graphs, built MLIR-style on xDSL.

    import fusec
    f = fusec.compile(fn_or_module)          # or torch.compile(model, backend="fusec")
    f(*inputs); f.launches_per_call
    fusec.import_graph(fn, example_inputs)   # the aten-dialect module
    fusec.cache_stats()                      # kernel cache counters

The public names import torch lazily, so `fusec-opt` (which imports this package)
stays fast.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Any

__version__ = "0.1.0"

__all__ = ["compile", "import_graph", "cache_stats", "__version__"]


def compile(graph: Any, example_inputs: Any = None, **options: Any) -> Any:
    """Compile a function, `nn.Module` or `torch.fx.GraphModule`; see `fusec.compiled`."""
    from fusec.compiled import compile as _compile

    return _compile(graph, example_inputs, **options)


def import_graph(fn_or_module: Any, example_inputs: Any) -> Any:
    """The `aten`-dialect `ModuleOp` of a function or module on `example_inputs`."""
    from fusec.importer import import_graph as _import_graph

    return _import_graph(fn_or_module, example_inputs)


def cache_stats() -> dict[str, Any]:
    """Kernel cache counters: kernels_compiled, memory_hits, disk_hits, entries, ..."""
    from fusec.runtime.cache import cache_stats as _cache_stats

    return _cache_stats()


def _dynamo_backend(gm: Any, example_inputs: Any, **options: Any) -> Any:
    """The "fusec" Dynamo backend (a thin wrapper so registering it is cheap)."""
    from fusec.backend import fusec_backend

    return fusec_backend(gm, example_inputs, **options)


def _register_into(registry: Any) -> None:
    if "fusec" not in registry._COMPILER_FNS:
        registry.register_backend(name="fusec")(_dynamo_backend)


_REGISTRY = "torch._dynamo.backends.registry"


class _RegisterOnImport(importlib.abc.MetaPathFinder):
    """Registers the backend when Dynamo's registry is first imported, so
    `import fusec` does not pay for importing Dynamo."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _REGISTRY:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_and_register(module: Any) -> None:
            exec_module(module)
            _register_into(module)

        loader.exec_module = exec_and_register  # type: ignore[method-assign]
        return spec


def _install_backend_hook() -> None:
    registry = sys.modules.get(_REGISTRY)
    if registry is not None:
        _register_into(registry)
    elif not any(isinstance(f, _RegisterOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegisterOnImport())


_install_backend_hook()
