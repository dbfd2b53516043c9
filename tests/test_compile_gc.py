"""Small graphs compile with Python's cyclic GC paused (`compile_steps.gc_paused`):
the process's GC state is what it was before, and the result equals eager."""

from __future__ import annotations

import gc

import fusec
import torch
from fusec.api import compile_steps, compiled


def test_the_pause_covers_small_graphs_only_and_restores_the_gc():
    assert gc.isenabled()
    with compile_steps.gc_paused(compile_steps.GC_PAUSE_MAX_NODES):
        assert not gc.isenabled()
    assert gc.isenabled()
    with compile_steps.gc_paused(compile_steps.GC_PAUSE_MAX_NODES + 1):
        assert gc.isenabled()
    gc.disable()
    try:
        with compile_steps.gc_paused(1):
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


def _scaled(c: float):
    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x * c) + y * (c + 1)

    return f


def _new_kernels(before: set) -> list:
    from fusec.runtime import cpu

    return [k for a, k in list(cpu._loaded.items()) if a not in before]


def test_a_dropped_compiled_function_gives_back_its_kernels():
    """Each compiled function's kernels (an MCJIT engine each, ~2 MiB native)
    and IR go with it: after dropping 8 distinct functions, none of their
    functions, kernels or JIT modules is alive and the in-memory kernel table
    is as it was."""
    import weakref

    from fusec.runtime import cache as cache_mod
    from fusec.runtime import cpu

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    table = cache_mod.default_cache()._memory
    entries, before = len(table), set(cpu._loaded)
    refs = []
    for i in range(8):
        fn = _scaled(i + 0.5)
        g = fusec.compile(fn)
        for _ in range(2):  # the second call takes the fast path
            torch.testing.assert_close(g(x, y), fn(x, y))
        assert g.launches_per_call == 1
        kernels = _new_kernels(before)
        assert kernels
        refs += [weakref.ref(g), *(weakref.ref(k) for k in kernels)]
        refs += [weakref.ref(k._jit) for k in kernels]
        before |= set(cpu._loaded)
        del g, kernels
    gc.collect()
    assert [r for r in refs if r() is not None] == []
    assert len(table) == entries


def test_a_kernel_shared_by_live_functions_stays_until_the_last_goes():
    import weakref

    from fusec.runtime import cpu

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    fn = _scaled(3.0)
    before = set(cpu._loaded)
    a, b = fusec.compile(fn), fusec.compile(fn)
    torch.testing.assert_close(a(x, y), fn(x, y))
    torch.testing.assert_close(b(x, y), fn(x, y))
    assert fusec.cache_stats()["memory_hits"] >= 1  # b found a's kernel
    (kernel,) = _new_kernels(before)
    ref = weakref.ref(kernel)
    del a, kernel
    gc.collect()
    assert ref() is not None
    x2 = torch.randn(4, 8)
    torch.testing.assert_close(b(x2, y), fn(x2, y))
    assert b.launches_per_call == 1
    del b
    gc.collect()
    assert ref() is None
