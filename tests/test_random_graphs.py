"""Randomized differential test: random pointwise graphs (`random_graphs.py`)
compiled with `fusec.compile` and called several times (two calls at the
example shape, then other shapes of the same rank), each call's outputs AND the
inputs it writes compared with eager PyTorch on copies of the same inputs; when
eager raises, fusec must raise an error of the same type.

A fixed set of seeds runs by default; `pytest tests/test_random_graphs.py
--random-graphs=2000` (or `FUSEC_RANDOM_GRAPHS=2000`) runs more, and
`--random-graphs-start=N` moves the first seed. A failure prints the graph's
source and the call that mismatched."""

from __future__ import annotations

import warnings

import fusec
import pytest
import torch
from random_graphs import compare, generate


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "seed" in metafunc.fixturenames:
        count = metafunc.config.getoption("random_graphs")
        start = metafunc.config.getoption("random_graphs_start")
        metafunc.parametrize("seed", range(start, start + count))


def _copy(t: torch.Tensor) -> torch.Tensor:
    """A copy with `t`'s sizes and strides (stride-0 dims included) over a copy
    of its storage."""
    storage = t.untyped_storage().clone()
    return torch.empty(0, dtype=t.dtype).set_(storage, t.storage_offset(), t.size(), t.stride())


def _run(fn, inputs):
    try:
        return fn(*inputs), None
    except Exception as e:  # noqa: BLE001 - compared with the other side's error
        return None, e


def test_random_graph_matches_eager(seed: int) -> None:
    graph = generate(seed)
    compiled = fusec.compile(graph.fn)
    for call in range(len(graph.shapes)):
        inputs = graph.inputs(call)
        eager_inputs = [_copy(t) for t in inputs]
        fusec_inputs = [_copy(t) for t in inputs]
        where = f"graph {seed}, call {call}, shapes {[tuple(t.shape) for t in inputs]}:\n{graph.source}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, want_error = _run(graph.fn, eager_inputs)
            got, got_error = _run(compiled, fusec_inputs)
        if want_error is not None:
            assert got_error is not None, f"eager raised {want_error!r}, fusec did not; {where}"
            assert type(got_error) is type(want_error), (
                f"eager raised {want_error!r}, fusec {got_error!r}; {where}"
            )
            continue
        assert got_error is None, f"fusec raised {got_error!r}; {where}"
        try:
            compare(got, want, "output", graph.half)
            compare(fusec_inputs, eager_inputs, "input after the call", graph.half)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{where}") from None
