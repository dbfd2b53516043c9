"""Smoke test of benchmarks/models.py: one tiny model through the script's
functions (not its fresh-process first-call times, which take minutes)."""

from __future__ import annotations

import os
import sys

import pytest

# models.py puts benchmarks/ and tests/ first on sys.path for itself; put the path
# back afterwards, or pytest imports later test modules as top-level modules and
# `from tests.cache_cases import ...` no longer resolves.
_saved_path = list(sys.path)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import models  # noqa: E402

sys.path[:] = _saved_path


def test_aten_calls_counts_top_level_only() -> None:
    import torch

    x = torch.randn(4, 8)
    w = torch.randn(3, 8)
    # aten::linear calls aten::t and aten::addmm/matmul inside: one top-level call.
    assert models.aten_calls(lambda: torch.nn.functional.linear(x, w)) == 1
    assert models.aten_calls(lambda: (x + 1).relu()) == 2


def test_quick_gpt2_counts_and_matches_eager() -> None:
    pytest.importorskip("transformers", reason="the bench extra (transformers) is not installed")
    rows = models.measure("gpt2", ("eager", "fusec"), rounds=1, quick=True)
    assert [r.backend for r in rows] == ["eager", "fusec"]
    for r in rows:
        assert r.check == "ok", r.check
        assert r.kernels is not None and r.aten is not None
        assert r.train_s > 0 and r.infer_s > 0
    eager, fused = rows
    assert eager.kernels == (0, 0, 0) and min(eager.aten) > 0
    assert fused.kernels[0] > 0 and fused.kernels[2] > 0
    assert "| fusec |" in models.table("gpt2", rows)
