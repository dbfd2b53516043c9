"""Comparing a compiled model's results with eager's, nested outputs included."""

from __future__ import annotations

from typing import Any

import torch


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
