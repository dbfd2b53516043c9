"""The ATen-import and symbolic-shape tests' cases: the small models with
inputs at a (batch, time) shape, a Dynamo backend that records what fusec
compiled, and comparing results with eager's, nested outputs included."""

from __future__ import annotations

from typing import Any

import torch
from fusec.api.backend import compile_graph

from tests.transformer_blocks import MLP, GPT2Block, LlamaBlock, LSTMCell, ViTBlock

MODELS = {
    "gpt2": (GPT2Block, lambda b, t: (torch.randn(b, t, 32),)),
    "llama": (LlamaBlock, lambda b, t: (torch.randn(b, t, 32),)),
    "vit": (ViTBlock, lambda b, t: (torch.randn(b, 3, 4 * t, 8),)),
    "mlp": (MLP, lambda b, t: (torch.randn(b * t, 16),)),
    "lstm": (LSTMCell, lambda b, t: (torch.randn(b, 16), torch.randn(b, 8), torch.randn(b, 8))),
}
"""name -> (model class, inputs at batch b and time t)."""


class Recorder:
    """A Dynamo backend that compiles with fusec and keeps what it made."""

    def __init__(self, **options: Any):
        self.compiled: list[Any] = []
        self.options = options

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
        # What Dynamo calls may be `gm.forward` or a program's run without checks
        # (static shapes): the `CompiledFunction` reporting on it is what is kept.
        call, fn = compile_graph(gm, example_inputs, self.options)
        self.compiled.append(fn if fn is not None else call)
        return call


def assert_same(got: Any, want: Any) -> None:
    """`got` equals `want` (tensors, or tuples/lists of them): same shapes and
    dtypes, values within float32 model tolerances."""
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
        return
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
