"""Small graphs compile with Python's cyclic GC paused (`compiled._gc_paused`):
the process's GC state is what it was before, and the result equals eager."""

from __future__ import annotations

import gc

import fusec
import torch
from fusec import compiled


def test_the_pause_covers_small_graphs_only_and_restores_the_gc():
    assert gc.isenabled()
    with compiled._gc_paused(compiled.GC_PAUSE_MAX_NODES):
        assert not gc.isenabled()
    assert gc.isenabled()
    with compiled._gc_paused(compiled.GC_PAUSE_MAX_NODES + 1):
        assert gc.isenabled()
    gc.disable()
    try:
        with compiled._gc_paused(1):
            assert not gc.isenabled()
        assert not gc.isenabled()  # the caller's choice stays
    finally:
        gc.enable()


def test_a_small_graph_compiles_with_the_gc_paused_and_leaves_it_on(monkeypatch):
    states = []
    real = compiled.CompiledFunction._build

    def build(self, args):
        states.append(gc.isenabled())
        return real(self, args)

    monkeypatch.setattr(compiled.CompiledFunction, "_build", build)

    def cell(gates: torch.Tensor, cx: torch.Tensor) -> torch.Tensor:
        i, f = gates.chunk(2, 1)
        return torch.sigmoid(i) * cx + torch.tanh(f)

    x, cx = torch.randn(4, 16), torch.randn(4, 8)
    f = fusec.compile(cell)
    torch.testing.assert_close(f(x, cx), cell(x, cx))
    assert states == [False] and gc.isenabled()
