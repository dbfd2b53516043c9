"""Symbolic shapes keep their kernels (issue 33, item 5): the zoo of
`benchmarks/models.py` under `torch.compile(..., dynamic=True)` runs fused at
every shape, a cut by a symbolic size runs with the size's runtime value, and
a program that raises at one shape does not send its graph to eager at the next.

Counts only (kernels launched per call, no eager fallback) and results; no timings.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch
import torch._dynamo

from tests.model_cases import Recorder, assert_same

# models.py puts benchmarks/ and tests/ first on sys.path for itself; put the
# path back afterwards (see tests/test_bench_models.py).
_saved_path = list(sys.path)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import models  # noqa: E402

sys.path[:] = _saved_path


def _launches(calls) -> list[int]:
    """Kernels each compiled graph launched on its last call."""
    return [fn.launches_per_call for fn in calls]


def test_bert_slices_its_position_ids_by_the_symbolic_length_and_stays_fused():
    """BERT's embeddings cut `position_ids[:, :seq]` with `seq` a SymInt: the
    opaque call must get the length's runtime value (a Python slice of the fx
    node raised `TypeError: slice indices must be integers`, and the graph then
    ran eagerly for good)."""
    pytest.importorskip("transformers", reason="the bench extra (transformers) is not installed")
    torch.manual_seed(0)
    model, _, _ = models.build("bert", True)
    model.eval()
    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for seq in (8, 5, 7):
            x = torch.randint(0, 100, (2, seq))
            assert_same(compiled(x), model(x))
            assert backend.compiled and all(n > 0 for n in _launches(backend.compiled))
    (fn,) = backend.compiled
    assert all(s.program is not None for s in fn.specializations.values())


BUF = torch.randn(4, 64)


def cut_slice(y):
    return (
        BUF[:, y.shape[1] - 2 : y.shape[1]].sum(1, keepdim=True) + BUF[:, : y.shape[1]] * y
    ).relu()


def cut_narrow(y):
    return (BUF.narrow(1, y.shape[1] // 2, y.shape[1]) + y).relu()


def cut_index(y):
    return (BUF[:, y.shape[1]].unsqueeze(1) + y).relu()


@pytest.mark.parametrize("fn", [cut_slice, cut_narrow, cut_index])
def test_a_cut_by_a_symbolic_size_runs_with_its_runtime_value(fn, caplog):
    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(fn, backend=backend, dynamic=True)
    for n in (8, 5, 11):
        y = torch.randn(4, n)
        assert_same(compiled(y), fn(y))
        assert _launches(backend.compiled)[-1] > 0
    assert "running eagerly" not in caplog.text
