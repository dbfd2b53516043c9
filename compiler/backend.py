"""`torch.compile(model, backend="fusec")`: fusec as a TorchDynamo backend.

Dynamo hands over a `GraphModule` of the captured region and its example inputs;
fusec compiles it like any graph (specializing on the first real call):

    model = torch.compile(model, backend="fusec")
    model = torch.compile(model, backend="fusec", options={"max_specializations": 4})

`options` are the fields of `fusec.compiled.CompileOptions`. With `dynamic=True`
(or Dynamo's automatic dynamic shapes) the graph's symbolic sizes are SymInt
inputs, runtime values of the program, so one program serves every size.

The backend never raises where eager would not: an unknown option, or any failure
while compiling, logs why and hands Dynamo the graph to run eagerly.

When autograd records the region (grad mode on and an input or parameter that
requires grad), the graph goes through AOTAutograd instead, and fusec compiles
its forward and backward ATen graphs (`fusec.training`).

`import fusec` registers the backend under the name "fusec" (when Dynamo's
registry is imported, so importing fusec stays cheap); the `torch_dynamo_backends`
entry point `fusec = "fusec.backend:fusec_backend"` does the same without the import.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch.fx
from fusec.compiled import CompiledFunction, CompileOptions, compile

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
    opts = {**(options or {}), **kwargs}
    known = {f.name for f in dataclasses.fields(CompileOptions)}
    unknown = sorted(set(opts) - known)
    if unknown:
        log.warning(
            "fusec: ignoring unknown options %s (known: %s)", unknown, ", ".join(sorted(known))
        )
        opts = {k: v for k, v in opts.items() if k in known}
    try:
        from fusec.training import dynamo_backend, needs_autograd

        if needs_autograd(example_inputs, gm):
            # AOTAutograd: fusec compiles the forward and backward ATen graphs.
            return dynamo_backend(gm, example_inputs, CompileOptions(**opts))
        fn = compile(gm, example_inputs, **opts)
    except _DYNAMO_CONTROL_FLOW:
        raise  # Dynamo's own signals (restart the analysis), not failures
    except Exception:  # noqa: BLE001 - Dynamo must get a runnable graph whatever happens
        log.warning("fusec: backend failed; the graph runs eagerly", exc_info=True)
        return gm.forward
    with _GRAPHS_LOCK:
        _GRAPHS[:] = [r for r in _GRAPHS if r() is not None]
        _GRAPHS.append(weakref.ref(fn))
    return fn


def dynamo_graphs() -> list[CompiledFunction]:
    """The graphs Dynamo handed to fusec that are still alive, oldest first. Each is
    a `CompiledFunction`: `launches_per_call` is the kernels its last call launched,
    `ir()` its IR, and `fusec.explain(fusec.dynamo_graphs())` explains them all:

        model = torch.compile(model, backend="fusec"); model(x)
        sum(g.launches_per_call for g in fusec.dynamo_graphs())   # kernels per step
    """
    with _GRAPHS_LOCK:
        return [f for r in _GRAPHS if (f := r()) is not None]
