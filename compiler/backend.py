"""`torch.compile(model, backend="fusec")`: fusec as a TorchDynamo backend.

Dynamo hands over a `GraphModule` of the captured region and its example inputs;
fusec compiles it like any graph (specializing on the first real call):

    model = torch.compile(model, backend="fusec")

`import fusec` registers the backend under the name "fusec" (when Dynamo's
registry is imported, so importing fusec stays cheap); the `torch_dynamo_backends`
entry point `fusec = "fusec.backend:fusec_backend"` does the same without the import.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Sequence
from typing import Any

import torch.fx
from fusec.compiled import CompiledFunction, compile

_GRAPHS: list[weakref.ref[CompiledFunction]] = []
_GRAPHS_LOCK = threading.Lock()


def fusec_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **options: Any
) -> CompiledFunction:
    """The Dynamo backend function: compile `gm` with fusec (and remember it for
    `dynamo_graphs`)."""
    fn = compile(gm, example_inputs, **options)
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
