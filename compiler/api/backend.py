"""`torch.compile(model, backend="fusec")`: fusec as a TorchDynamo backend.

Dynamo hands over a `GraphModule` of the captured region and its example inputs;
fusec compiles it like any graph (specializing on the first real call):

    model = torch.compile(model, backend="fusec")
    model = torch.compile(model, backend="fusec", options={"max_specializations": 4})

`options` are the fields of `fusec.api.compiled.CompileOptions`. With `dynamic=True`
(or Dynamo's automatic dynamic shapes) the graph's symbolic sizes are SymInt
inputs, runtime values of the program, so one program serves every size.

The backend never raises where eager would not: an unknown option, or any failure
while compiling, logs why and hands Dynamo the graph to run eagerly.

Dynamo's guards already specialize a graph of static shapes: every call has
the dtypes, devices, sizes, strides and grad mode of the example inputs, so
fusec compiles their specialization right away and its checks are left out. A
graph whose specialization has no kernels (everything left to ATen, none of it
fused by PyTorch: `HostProgram.improves_on_original`) is handed back as
`gm.forward`, costing what eager costs; one with kernels runs its host program
without checking the key (`fast_call.fast_path(..., trusted=True)`).
Both stay in `dynamo_graphs()`, so explain, reports and logs still count their
kernels and give the reasons. With symbolic sizes a call's size-1 dims,
contiguity and how a chunk cuts its sizes still decide the program, so such a
graph keeps fusec's checks.

When autograd records the region (grad mode on and an input or parameter that
requires grad), the graph goes through AOTAutograd instead, and fusec compiles
its forward and backward ATen graphs (`fusec.api.training`; both are listed in
`dynamo_graphs()`, each as AOTAutograd hands it over). So does a region that
runs a functorch transform (`torch.vmap`, `torch.func.grad`/`jvp`): its ops see
wrapped tensors (batched, dual, grad-tracking) that only the transform knows how
to run, and AOTAutograd traces through it to plain ATen ops, as for Inductor.

Under DDP, Dynamo's DDP optimizer calls the backend once per bucket-sized part
of the graph; under FSDP2, once per `fully_shard`ed module (its hooks are graph
breaks). `docs/usage.md` has both patterns; `tests/test_distributed.py` runs them.

`import fusec` registers the backend under the name "fusec" (when Dynamo's
registry is imported, so importing fusec stays cheap); the `torch_dynamo_backends`
entry point `fusec = "fusec.api.backend:fusec_backend"` does the same without the import.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch.fx
from fusec.api.compiled import (
    CompiledFunction,
    CompileOptions,
    all_real,
    compile_traced,
    graph_function,
)
from fusec.api.fast_call import fast_path
from fusec.api.options import FusionError

log = logging.getLogger("fusec")

_GRAPHS: list[weakref.ref[CompiledFunction]] = []
_GRAPHS_LOCK = threading.Lock()
_DYNAMO_CONTROL_FLOW: tuple[type[BaseException], ...] = ()
try:  # AOTAutograd raises it for Dynamo to re-trace with float inputs as tensors
    from torch._dynamo.exc import TensorifyScalarRestartAnalysis

    _DYNAMO_CONTROL_FLOW = (TensorifyScalarRestartAnalysis,)
except ImportError:  # older torch
    pass


def fusec_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    options: dict[str, Any] | None = None,
    **kwargs: Any,
) -> Callable[..., Any]:
    """The Dynamo backend function: compile `gm` with fusec (through AOTAutograd
    when autograd would record it), and remember it for `dynamo_graphs`.

    `torch.compile(..., options={...})` passes `options` as one dict; keyword
    options (`fusec_backend(gm, inputs, max_specializations=2)`) work too."""
    return compile_graph(gm, example_inputs, {**(options or {}), **kwargs})[0]


def compile_graph(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    opts: dict[str, Any],
    remember: Callable[[CompiledFunction], CompiledFunction] | None = None,
) -> tuple[Callable[..., Any], CompiledFunction | None]:
    """What `fusec_backend` hands Dynamo for `gm`, and the `CompiledFunction` that
    reports on it (None where the graph runs eagerly because fusec failed, or
    through AOTAutograd: the callable's `fusec_graphs` then has its forward and
    backward graphs, and `dynamo_graphs()` lists them). `remember` records each
    `CompiledFunction` made (default: `remember_graph`, for `dynamo_graphs()`).

    Under `strict`, a `FusionError` propagates (Dynamo wraps it in
    `BackendCompilerFailed`); any other failure runs the graph eagerly."""
    remember = remember or remember_graph
    known = {f.name for f in dataclasses.fields(CompileOptions)}
    unknown = sorted(set(opts) - known)
    if unknown:
        log.warning(
            "fusec: ignoring unknown options %s (known: %s)", unknown, ", ".join(sorted(known))
        )
        opts = {k: v for k, v in opts.items() if k in known}
    try:
        from fusec.api.training import dynamo_backend, needs_autograd

        options = CompileOptions(**opts)
        if needs_autograd(example_inputs, gm) or runs_transform(gm):
            # AOTAutograd: fusec compiles the forward and backward ATen graphs,
            # each listed in `dynamo_graphs()` as AOTAutograd hands it over.
            make = functools.partial(graph_function, options=options)
            static = _static(gm, example_inputs)
            compiled = dynamo_backend(
                gm, example_inputs, lambda g: remember(make(g)), options, static
            )
            return compiled, None
        fn = compile_traced(gm, gm, options, example_inputs)
        # Specializations compiled at a later call still file their structured
        # trace artifacts (`fusec.observability.structured_trace`) under this graph's compile.
        fn.compile_id = torch._guards.CompileContext.current_compile_id()
    except _DYNAMO_CONTROL_FLOW:
        raise  # Dynamo's own signals (restart the analysis), not failures
    except FusionError:
        raise  # strict mode: the user asked for this error
    except Exception:  # noqa: BLE001 - Dynamo must get a runnable graph whatever happens
        log.warning("fusec: backend failed; the graph runs eagerly", exc_info=True)
        return gm.forward, None
    remember(fn)
    return _static_call(gm, example_inputs, fn), fn


def remember_graph(fn: CompiledFunction) -> CompiledFunction:
    """List `fn` in `dynamo_graphs()` for as long as something else keeps it alive."""
    with _GRAPHS_LOCK:
        _GRAPHS[:] = [r for r in _GRAPHS if r() is not None]
        _GRAPHS.append(weakref.ref(fn))
    return fn


_TRANSFORM_MODULES = ("torch._functorch.", "torch._C._functorch")


def runs_transform(gm: torch.fx.GraphModule) -> bool:
    """Whether `gm` runs a functorch transform: Dynamo keeps a `vmap`'s
    `_add_batch_dim`/`_vmap_increment_nesting` (a `grad`'s, `jvp`'s alike)
    as calls in the graph, between which tensors are wrapped."""
    return any(
        node.op == "call_function"
        and str(getattr(node.target, "__module__", None)).startswith(_TRANSFORM_MODULES)
        for node in gm.graph.nodes
    )


def _static_call(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], fn: CompiledFunction
) -> Callable[..., Any]:
    """The callable for a graph of static shapes whose specialization compiled:
    `gm.forward` where it has no kernels, its program run without checks where
    it has; `fn` itself for symbolic sizes (its fast path then checks only what
    varies with sizes: `CompiledFunction.guarded_by_dynamo`), or where its key
    has parts no fast path covers."""
    fn.guarded_by_dynamo = True
    if not _static(gm, example_inputs):
        return fn
    args = list(example_inputs)
    key = fn.key(args)
    spec = fn.specializations.get(key)
    if spec is None or spec.training is not None:
        return fn
    # `fn` lives as long as what Dynamo calls does (`dynamo_graphs` holds weak refs).
    gm.fusec_graph = fn
    if spec.program is None or (
        not spec.program.improves_on_original()
        and fn.options.use_kernels
        and not fn.options.cuda_graphs
    ):
        fn.last, fn.launches_per_call = spec, 0
        return gm.forward
    fast = fast_path(fn, key, spec, args, trusted=True)
    if fast is None:
        return fn
    return fast


def _static(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> bool:
    """Whether Dynamo guards every call of `gm` to the example inputs' exact
    sizes and strides: no symbolic size among the inputs or the placeholders."""
    if not all_real(example_inputs):
        return False
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
            return False
        if isinstance(value, torch.Tensor) and any(
            isinstance(d, torch.SymInt) for d in (*value.shape, *value.stride())
        ):
            return False
    return True


def dynamo_graphs() -> list[CompiledFunction]:
    """The graphs Dynamo handed to fusec that are still alive, oldest first; for a
    region autograd records, the forward and backward graphs AOTAutograd made of it
    (`fusec.api.training.compiled_graphs()` says which is which). Each is a
    `CompiledFunction`: `launches_per_call` is the kernels its last call launched,
    `ir()` its IR, and `fusec.explain(fusec.dynamo_graphs())` explains them all:

        model = torch.compile(model, backend="fusec"); model(x)
        sum(g.launches_per_call for g in fusec.dynamo_graphs())   # kernels per step
    """
    with _GRAPHS_LOCK:
        return [f for r in _GRAPHS if (f := r()) is not None]
