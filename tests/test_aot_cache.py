"""AOTAutograd's cache for fusec's training graphs (`fusec.api.aot_cache`): a
second compile of a model (another process, or after `torch._dynamo.reset()`)
loads the forward and backward graphs AOTAutograd made, without tracing, and
fusec's warm start then finds their programs; entries of other options, of
Inductor, of symbolic sizes are never loaded; gradients always equal eager's."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import fusec
import fusec.api.partition
import pytest
import torch
from fusec.api import aot_cache
from fusec.api.compiled import graph_function
from fusec.api.options import CompileOptions
from fusec.api.training import compiled_graphs
from fusec.runtime import cache as cache_mod
from torch import nn

from tests.cache_cases import CompileCounts


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))


def _step(model: nn.Module, f: Any, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    loss = f(x).square().mean()
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def _eager(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    ref = copy.deepcopy(model)
    return _step(ref, ref, x)


def _check(got: Any, want: Any) -> None:
    torch.testing.assert_close(got[0], want[0])
    for g, w in zip(got[1], want[1], strict=True):
        torch.testing.assert_close(g, w)


def _counters() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return dict(counters["aot_autograd"])


def _compile_afresh(model: nn.Module, backend: str = "fusec", **options: Any) -> Any:
    """`torch.compile` as a new process would: Dynamo's and fusec's in-memory
    state gone, the disk caches kept."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    cache_mod.reset()
    if backend != "fusec":
        return torch.compile(model, backend=backend)
    return torch.compile(model, backend="fusec", options=options or None)


def _entries() -> list[Path]:
    root = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"]) / "aotautograd"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def test_a_second_compile_loads_both_graphs_without_tracing_or_compiling(monkeypatch):
    model, x = _model(), torch.randn(5, 8)
    want = _eager(model, x)
    _check(_step(model, _compile_afresh(model), x), want)
    assert _counters().get("autograd_cache_saved") == 1
    assert len(_entries()) == 1

    counts = CompileCounts(monkeypatch)
    traced: list[str] = []
    real_partition = fusec.api.partition.fusec_partition

    def partition(*a: Any, **k: Any) -> Any:
        traced.append("partition")
        return real_partition(*a, **k)

    monkeypatch.setattr(fusec.api.partition, "fusec_partition", partition)
    before = len(compiled_graphs())
    f = _compile_afresh(model)
    _check(_step(model, f, x), want)
    assert _counters().get("autograd_cache_hit") == 1
    assert "autograd_cache_miss" not in _counters()
    assert traced == []  # AOTAutograd neither traced nor partitioned
    # fusec's warm start found the programs of the loaded graphs: on a miss
    # fusec compiled the graphs as a load renames them.
    assert (counts.imports, counts.pipelines) == (0, 0)
    loaded = compiled_graphs()[before:]
    assert sorted(g.kind for g in loaded) == ["backward", "forward"]
    assert all(g.launches_per_call > 0 for g in loaded)
    _check(_step(model, f, x), want)  # and again, on the loaded programs


def test_entries_of_other_options_and_of_inductor_are_not_loaded():
    model, x = _model(), torch.randn(5, 8)
    want = _eager(model, x)
    import torch._functorch.config as functorch_config

    # Inductor writing the same kind of entry (bundled, backward compiled
    # eagerly): only fusec's key part keeps it from being fusec's.
    with functorch_config.patch(bundled_autograd_cache=True, force_non_lazy_backward_lowering=True):
        _check(_step(model, _compile_afresh(model, backend="inductor"), x), want)
    assert _counters().get("autograd_cache_saved") == 1

    _check(_step(model, _compile_afresh(model), x), want)
    assert _counters().get("autograd_cache_miss") == 1
    _check(_step(model, _compile_afresh(model, max_specializations=3), x), want)
    assert _counters().get("autograd_cache_miss") == 1
    _check(_step(model, _compile_afresh(model), x), want)
    assert _counters().get("autograd_cache_hit") == 1
    assert len(_entries()) == 3


def test_symbolic_sizes_and_the_program_cache_off_write_no_entry(monkeypatch):
    model = _model()
    for x in (torch.randn(5, 8), torch.randn(7, 8)):
        want = _eager(model, x)
        torch._dynamo.reset()
        f = torch.compile(model, backend="fusec", dynamic=True)
        _check(_step(model, f, x), want)
    assert _entries() == []
    monkeypatch.setenv("FUSEC_PROGRAM_CACHE", "0")
    x = torch.randn(5, 8)
    _check(_step(model, _compile_afresh(model), x), _eager(model, x))
    assert _entries() == []


def test_the_output_code_pickles_as_its_graph_and_compiles_again():
    scale = torch.arange(8.0)

    # No annotations: under `from __future__ import annotations` they are
    # strings, which fx would record as the placeholders' types.
    def f(x, w):  # type: ignore[no-untyped-def]
        noise = torch.rand(8) * 0  # an argument-free op: must stay an op
        return torch.nn.functional.gelu(x @ w).sigmoid() * scale + noise

    x, w = torch.randn(4, 8), torch.randn(8, 8)
    gm = torch.fx.experimental.proxy_tensor.make_fx(f)(x, w)
    for node in gm.graph.nodes:
        node.meta["stack_trace"] = f'File "model.py", line 3, in f\n    {node.name}'
    options = CompileOptions()
    code = aot_cache.FusecOutputCode("forward", gm, options, None)
    # AOTAutograd copies and pickles the entry under its fake mode.
    with torch._subclasses.fake_tensor.FakeTensorMode():
        back = pickle.loads(pickle.dumps(copy.copy(code)))
    assert back.function is None and back.kind == "forward" and back.options == options
    assert back.gm.code == gm.code  # the key fusec's warm start computes is the same
    assert type(back.gm).__name__ == type(gm).__name__
    for a, b in zip(gm.graph.nodes, back.gm.graph.nodes, strict=True):
        assert (a.name, a.op, a.target) == (b.name, b.op, b.target)
        assert b.meta["stack_trace"] == a.meta["stack_trace"]
        if isinstance(a.meta.get("val"), torch.Tensor):
            # Recorded values come back as meta tensors of the same layout (a
            # fake tensor each would cost the load its fake mode's conversion).
            va, vb = a.meta["val"], b.meta["val"]
            assert vb.device.type == "meta"
            assert (vb.shape, vb.stride(), vb.dtype) == (va.shape, va.stride(), va.dtype)
            assert vb.storage_offset() == va.storage_offset()
    view = aot_cache._recorded((3, 8), (8, 1), 8, "torch.float16")  # a view past a row
    assert (view.shape, view.stride(), view.storage_offset()) == ((3, 8), (8, 1), 8)
    assert view.dtype == torch.float16 and view.device.type == "meta"
    assert torch.ops.aten.rand.default in {n.target for n in back.gm.graph.nodes}
    constants = [n.target for n in gm.graph.nodes if n.op == "get_attr"]
    assert constants
    for name in constants:  # real values, not the fake ones of the pickled graph
        torch.testing.assert_close(getattr(back.gm, name), getattr(gm, name))
    # Loaded outside fusec's compile, the graph runs eagerly (still right).
    eager = pickle.loads(pickle.dumps(code))
    torch.testing.assert_close(eager([x, w]), f(x, w))
    # Loaded in it, fusec compiles the graph.
    holder = torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())
    with aot_cache.caching(holder, options, lambda kind, g: graph_function(g, options)):
        back.post_compile([], None, {})
    args = [x, w]
    out = back(args)
    assert args == []  # boxed: the caller's list is emptied
    torch.testing.assert_close(out, f(x, w))
    assert back.function is not None and back.function.launches_per_call > 0


_CHILD = textwrap.dedent(
    """
    import copy, json, torch
    from torch import nn
    from torch._dynamo.utils import counters
    import fusec  # noqa: F401
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    x = torch.randn(6, 8)
    ref = copy.deepcopy(model)
    f = torch.compile(model, backend="fusec")
    f(x).square().mean().backward()
    ref(x).square().mean().backward()
    same = all(
        torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-6)
        for p, q in zip(model.parameters(), ref.parameters())
    )
    print(json.dumps({"aot": dict(counters["aot_autograd"]), "same": same}))
    """
)


def test_a_second_process_loads_the_graphs_from_the_first(tmp_path):
    env = {
        **os.environ,
        "FUSEC_CACHE_DIR": str(tmp_path / "fusec"),
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "torch"),
    }
    runs = []
    for _ in range(2):
        p = subprocess.run(
            [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300
        )
        assert p.returncode == 0, p.stderr[-2000:]
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert runs[0]["aot"].get("autograd_cache_saved") == 1 and runs[0]["same"]
    assert runs[1]["aot"].get("autograd_cache_hit") == 1 and runs[1]["same"], runs


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool])
def test_constants_round_trip_without_numpy(monkeypatch, dtype):
    """numpy is not one of fusec's dependencies: saving an entry must not need it."""

    def no_numpy(self: torch.Tensor) -> Any:
        raise RuntimeError("Numpy is not available")

    monkeypatch.setattr(torch.Tensor, "numpy", no_numpy)
    c = torch.arange(6.0).reshape(2, 3).to(dtype)
    gm = torch.fx.experimental.proxy_tensor.make_fx(lambda x: x + c)(torch.zeros(2, 3))
    back = aot_cache._constants_from_data(aot_cache._constants_data(gm))
    assert back
    for name, value in back.items():
        assert torch.equal(value, getattr(gm, name))
