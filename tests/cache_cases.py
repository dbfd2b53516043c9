"""The program-cache and warm-start tests' case: inputs of the LSTM cell's
pointwise tail (`reference_models.lstm_tail`) and comparing its outputs with
eager's."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def tail_args() -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(4, 32, generator=gen), torch.randn(4, 8, generator=gen)]


def check_outputs(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor]) -> None:
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
