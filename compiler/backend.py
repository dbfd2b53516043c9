"""`torch.compile(model, backend="fusec")`: fusec as a TorchDynamo backend.

Dynamo hands over a `GraphModule` of the captured region and its example inputs;
fusec compiles it like any graph (specializing on the first real call):

    model = torch.compile(model, backend="fusec")

When autograd records the region (grad mode on and an input or parameter that
requires grad), the graph goes through AOTAutograd instead, and fusec compiles
its forward and backward ATen graphs (`fusec.training`).

`import fusec` registers the backend under the name "fusec" (when Dynamo's
registry is imported, so importing fusec stays cheap); the `torch_dynamo_backends`
entry point `fusec = "fusec.backend:fusec_backend"` does the same without the import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch.fx
from fusec.compiled import CompileOptions, compile


def fusec_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **options: Any
) -> Callable[..., Any]:
    """The Dynamo backend function: compile `gm` with fusec (through AOTAutograd
    when autograd would record it)."""
    from fusec.training import dynamo_backend, needs_autograd

    if needs_autograd(example_inputs, gm):
        return dynamo_backend(gm, example_inputs, CompileOptions(**options))
    return compile(gm, example_inputs, **options)
