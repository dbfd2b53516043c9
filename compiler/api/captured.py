"""`fusec.compile` of what torch.fx cannot trace: captured through Dynamo.

`torch.fx.symbolic_trace` fails on Python that reads sizes (`B, T, C = x.shape`
then `torch.ones(T, T)`), loops over a size (`for t in range(xs.size(0))`),
branches on data, or calls what fx does not know (Hugging Face models). Such a
function or module is captured as `torch.compile(original, backend=...)` does,
with fusec's backend and the same `CompileOptions`, so it gets exactly the
kernels `torch.compile(backend="fusec")` gives it:

    f = fusec.compile(gpt2)          # INFO fusec: torch.fx cannot trace GPT2...; captured with Dynamo
    logits = f(tokens)
    f.launches_per_call              # fused kernels of every graph the call ran
    print(f.explain()); print(f.ir())

Dynamo guards each graph and recompiles for what changes (shapes, modes,
dtypes, None arguments); a graph break runs the Python between graphs eagerly,
as under `torch.compile`. Calls that autograd records go through AOTAutograd, and
fusec compiles the forward and backward graphs (`compiled_graphs`).

`strict=True` captures with `fullgraph=True`: a graph break raises `FusionError`,
as does any op the backend would leave unfused.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import types
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
from fusec.api.options import CompileOptions, FusionError
from fusec.frontend.tracing import graph_name

if TYPE_CHECKING:
    from fusec.api.compiled import CompiledFunction
    from fusec.api.specialization import Specialization
    from fusec.api.training import CompiledGraph
    from fusec.observability.explanation import Report

log = logging.getLogger("fusec")


class CapturedFunction:
    """The callable `fusec.compile` returns for a function or module torch.fx
    cannot trace: `torch.compile(original)` with fusec's backend and `options`.

    `names`: call the original with its arguments by these names (a variant of a
    traced function for None arguments, called in placeholder order)."""

    gm = None
    """No graph of its own: Dynamo's graphs are `graphs`."""

    def __init__(
        self,
        original: Any,
        options: CompileOptions,
        why: str,
        names: Sequence[str] | None = None,
    ):
        self.original = original
        self.options = options
        self.untraceable_by_fx = why
        """Why torch.fx could not trace `original` (so Dynamo captured it)."""
        self.names = tuple(names) if names is not None else None
        self.launches_per_call = 0
        self._graphs: list[weakref.ref[CompiledFunction]] = []
        opts = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
        target = _module_caller(original) if isinstance(original, torch.nn.Module) else original
        self._compiled = torch.compile(
            target, backend=functools.partial(self._backend, opts), fullgraph=options.strict
        )

    def _backend(
        self, opts: dict[str, Any], gm: torch.fx.GraphModule, example_inputs: Sequence[Any]
    ) -> Any:
        from fusec.api.backend import compile_graph

        return compile_graph(gm, example_inputs, opts, remember=self._remember)[0]

    def _remember(self, fn: CompiledFunction) -> CompiledFunction:
        from fusec.api.backend import remember_graph

        self._graphs.append(weakref.ref(fn))
        return remember_graph(fn)

    @property
    def graphs(self) -> list[CompiledFunction]:
        """The graphs Dynamo handed to fusec for this function that are still
        alive, oldest first (for calls autograd records, AOTAutograd's forward
        and backward graphs of each)."""
        live = [f for r in self._graphs if (f := r()) is not None]
        if len(live) != len(self._graphs):
            self._graphs = [weakref.ref(f) for f in live]
        return live

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        graphs = self.graphs
        for g in graphs:  # each call sets its own; a graph this call skips counts 0
            g.launches_per_call = 0
        if self.names is not None:
            kwargs = {**dict(zip(self.names, args, strict=False)), **kwargs}
            args = ()
        try:
            result = self._compiled(*args, **kwargs)
        except torch._dynamo.exc.BackendCompilerFailed as e:
            inner = getattr(e, "inner_exception", None)
            if isinstance(inner, FusionError):
                raise inner from None
            raise
        except torch._dynamo.exc.Unsupported as e:
            if not self.options.strict:
                raise
            raise FusionError(
                f"fusec (strict): {graph_name(self.original)} would run partly eagerly: Dynamo cannot "
                f"capture it in one graph: {str(e).splitlines()[0]}"
            ) from e
        self.launches_per_call = sum(g.launches_per_call for g in self.graphs)
        return result

    # ------------------------------------------------------------------ inspection

    @property
    def last(self) -> Specialization | None:
        """The specialization the newest graph ran last (None before a call)."""
        for g in reversed(self.graphs):
            if g.last is not None:
                return g.last
        return None

    @property
    def compiled_graphs(self) -> list[CompiledGraph]:
        """The forward/backward graphs AOTAutograd handed over for this function's
        calls that autograd records (`fusec.api.training.CompiledGraph`)."""
        from fusec.api.training import compiled_graphs

        mine = {id(g) for g in self.graphs}
        return [g for g in compiled_graphs() if id(g.function) in mine]

    def ir(self) -> str:
        """The IR of each graph (after the pipeline), in the order Dynamo handed
        them over, each under a comment naming it."""
        graphs = [g for g in self.graphs if g.last is not None]
        return "\n".join(
            f"// graph {i} of {len(graphs)} (captured by Dynamo)\n{g.ir()}"
            for i, g in enumerate(graphs, 1)
        )

    def explain(self) -> Report:
        """`fusec.explain` of every graph as it stands (no call is made)."""
        from fusec.observability.explanation import Report, graph_report

        return Report([graph_report(g) for g in self.graphs])


def _module_caller(module: torch.nn.Module) -> Callable[..., Any]:
    """A function that calls `module`, for Dynamo to capture from its frame:
    `module.__call__` itself is PyTorch's code, whose frames Dynamo leaves (it
    picks up `forward`'s, which it skips for `torch.nn`'s own modules), and an
    `OptimizedModule` around it would fire global module hooks once more."""

    def call(*args: Any, **kwargs: Any) -> Any:
        return module(*args, **kwargs)

    # Dynamo caches per code object and stops recompiling one past a limit:
    # each capture gets its own, so captures of other modules never count.
    return types.FunctionType(
        call.__code__.replace(), call.__globals__, call.__name__, None, call.__closure__
    )


def capture(original: Any, options: CompileOptions, why: str) -> CapturedFunction:
    """The `CapturedFunction` of `original`, which torch.fx could not trace because `why`."""
    log.info("fusec: %s; capturing it with Dynamo", why)
    return CapturedFunction(original, options, why)


def capture_variant(
    original: Any, options: CompileOptions, why: str, names: Sequence[str]
) -> CapturedFunction:
    """The capture of a traced function for calls with None arguments, which it
    gets in placeholder order (`fusec.api.compiled.Capture`)."""
    return CapturedFunction(original, options, why, names)
