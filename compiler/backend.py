"""`torch.compile(model, backend="fusec")`: fusec as a TorchDynamo backend.

Dynamo hands over a `GraphModule` of the captured region and its example inputs;
fusec compiles it like any graph (specializing on the first real call):

    model = torch.compile(model, backend="fusec")

`import fusec` registers the backend under the name "fusec" (when Dynamo's
registry is imported, so importing fusec stays cheap); the `torch_dynamo_backends`
entry point `fusec = "fusec.backend:fusec_backend"` does the same without the import.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch.fx
from fusec.compiled import CompiledFunction, compile


def fusec_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **options: Any
) -> CompiledFunction:
    """The Dynamo backend function: compile `gm` with fusec."""
    return compile(gm, example_inputs, **options)
