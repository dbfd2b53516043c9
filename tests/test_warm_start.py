"""The warm start (`fusec.api.warm_start`): a graph compiled before runs from its
cached host program, with no import, pipeline or IR; what does not fit (other
size classes, another graph, a damaged entry, a missing kernel) compiles again,
and every result equals eager PyTorch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import fusec
import pytest
import torch
from fusec.runtime import cache as cache_mod
from fusec.runtime import program_cache
from reference_models import lstm_tail

from tests.cache_cases import CompileCounts
from tests.cache_cases import check_outputs as _check
from tests.cache_cases import tail_args as _args


def _hosts(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "hosts").rglob("*.bin"))


def test_a_warm_hit_needs_no_import_and_loads_kernels_by_key(cache_dir, monkeypatch):
    args = _args()
    _check(fusec.compile(lstm_tail)(*args), lstm_tail(*args))
    assert len(_hosts(cache_dir)) == 1
    counts = CompileCounts(monkeypatch)
    cache_mod.reset()  # as a new process: kernels come from disk
    g = fusec.compile(lstm_tail)
    _check(g(*args), lstm_tail(*args))
    assert (counts.imports, counts.pipelines) == (0, 0)
    assert g.launches_per_call == 1
    stats = fusec.cache_stats()
    assert (stats["kernels_compiled"], stats["disk_hits"]) == (0, 1)
    assert "fusion.guard" in g.ir()  # the IR text comes with the entry
    assert not g.ir().startswith("//")  # made for these very sizes
    # Later calls take the fast path of the loaded program.
    more = [torch.randn(6, 32), torch.randn(6, 8)]
    _check(g(*more), lstm_tail(*more))
    assert g.launches_per_call == 1


def test_other_sizes_of_one_pattern_share_the_entry(cache_dir, monkeypatch):
    fusec.compile(lstm_tail)(*_args())
    counts = CompileCounts(monkeypatch)
    args = [torch.randn(3, 16), torch.randn(3, 4)]
    g = fusec.compile(lstm_tail)
    _check(g(*args), lstm_tail(*args))
    assert counts.imports == 0 and len(_hosts(cache_dir)) == 1
    # The entry's IR is that of the first sizes: it says so, and still parses.
    made = [list(a.shape) for a in _args()]
    first, second, *_ = g.ir().splitlines()
    assert first == f"// fusec: warm start: this IR was compiled for input sizes {made};"
    assert second == "// its program also serves this call's [[3, 16], [3, 4]]"
    assert "tensor<3x16xf32>" not in g.ir()
    proc = subprocess.run(
        [sys.executable, "-m", "fusec.tools.opt"], input=g.ir(), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def halves(x: torch.Tensor) -> torch.Tensor:
    a, b = x.chunk(2, 1)
    return torch.sigmoid(a) * b + 1


def test_sizes_that_cut_otherwise_miss(cache_dir, monkeypatch):
    x = torch.randn(4, 8)
    torch.testing.assert_close(fusec.compile(halves)(x), halves(x))
    counts = CompileCounts(monkeypatch)
    y = torch.randn(4, 2)  # chunk(2) of 2 is pieces of size 1: they broadcast otherwise
    torch.testing.assert_close(fusec.compile(halves)(y), halves(y))
    assert counts.imports == 1


def test_a_changed_graph_misses(cache_dir, monkeypatch):
    args = _args()
    fusec.compile(lstm_tail)(*args)

    def other(gates: torch.Tensor, cx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.relu(g)
        return torch.sigmoid(o) * torch.tanh(cy), cy

    other.__name__ = lstm_tail.__name__  # only the code differs
    counts = CompileCounts(monkeypatch)
    _check(fusec.compile(other)(*args), other(*args))
    assert counts.imports == 1 and len(_hosts(cache_dir)) == 2


def test_another_dtype_misses(cache_dir, monkeypatch):
    args = _args()
    fusec.compile(lstm_tail)(*args)
    counts = CompileCounts(monkeypatch)
    doubles = [a.double() for a in args]
    _check(fusec.compile(lstm_tail)(*doubles), lstm_tail(*doubles))
    assert counts.imports == 1 and len(_hosts(cache_dir)) == 2


def _rewrite_payload(entry: Path, change) -> None:
    header, payload = program_cache.decode("host", entry.stem, entry.read_bytes())
    d = json.loads(payload)
    change(d)
    entry.write_bytes(program_cache.encode("host", entry.stem, json.dumps(d).encode()))


def _bad_slot(d):
    d["program"]["steps"][0]["ins"] = [999]


def _unknown_step(d):
    d["program"]["steps"][0]["kind"] = "mystery"


def _bad_check(d):
    for step in d["program"]["steps"]:
        if step["kind"] == "guard":
            step["checks"][0][0] = "complex32"


@pytest.mark.parametrize(
    "damage",
    ["truncate", "flip", "not-json", "bad-slot", "unknown-step", "bad-check", "missing-kernel"],
)
def test_a_damaged_entry_falls_back_to_compiling(cache_dir, monkeypatch, damage):
    args = _args()
    fusec.compile(lstm_tail)(*args)
    (entry,) = _hosts(cache_dir)
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    elif damage == "not-json":
        entry.write_bytes(program_cache.encode("host", entry.stem, b"{not json"))
    elif damage == "bad-slot":
        _rewrite_payload(entry, _bad_slot)
    elif damage == "unknown-step":
        _rewrite_payload(entry, _unknown_step)
    elif damage == "bad-check":
        _rewrite_payload(entry, _bad_check)
    else:
        for k in (cache_dir / "kernels").rglob("*.bin"):
            k.unlink()
    cache_mod.reset()
    counts = CompileCounts(monkeypatch)
    g = fusec.compile(lstm_tail)
    _check(g(*args), lstm_tail(*args))
    assert counts.imports == 1 and g.launches_per_call == 1
    assert entry.read_bytes() == data  # written again, whole


def test_a_program_with_opaque_calls_warm_starts(cache_dir, monkeypatch):
    """An op fusec leaves to PyTorch (`cumsum`, an ATen `index_select`) is a step
    of the entry, named by its target: a warm hit runs it with no import."""

    def uses_cumsum(x: torch.Tensor, idx: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        e = torch.ops.aten.index_select.default(w, 0, idx)
        return torch.cumsum(torch.sigmoid(x), 0) * 2 + e.sum()

    args = (torch.randn(5, 3), torch.tensor([1, 0, 2]), torch.randn(4, 3))
    torch.testing.assert_close(fusec.compile(uses_cumsum)(*args), uses_cumsum(*args))
    (entry,) = _hosts(cache_dir)
    assert b"aten::index_select" in entry.read_bytes() and b'"cumsum"' in entry.read_bytes()
    counts = CompileCounts(monkeypatch)
    cache_mod.reset()
    g = fusec.compile(uses_cumsum)
    torch.testing.assert_close(g(*args), uses_cumsum(*args))
    assert (counts.imports, counts.pipelines) == (0, 0)
    assert g.launches_per_call >= 1
    assert "opaque" in {s.kind for s in g.last.program.steps}


def test_an_opaque_call_of_a_local_function_is_not_stored(cache_dir):
    """A function the entry could not find again by its name (a local one, called
    through a hand-built fx graph) leaves the program without an entry; it still
    runs, and again, with the same result."""

    def local_double(t: torch.Tensor) -> torch.Tensor:
        return t * 2

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    y = graph.call_function(local_double, (graph.call_function(torch.sigmoid, (x,)),))
    graph.output(graph.call_function(torch.tanh, (y,)))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    v = torch.randn(4, 3)
    want = torch.tanh(torch.sigmoid(v) * 2)
    for _ in range(2):
        torch.testing.assert_close(fusec.compile(gm)(v), want)
        assert _hosts(cache_dir) == []


_CHILD = textwrap.dedent(
    """
    import json, sys, torch, fusec
    # Defined here: the test module imports the compiler (to count its imports).
    def lstm_tail(gates, cx):
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
        # cumsum runs through PyTorch: an opaque step, made again without xDSL.
        return torch.sigmoid(o) * torch.tanh(cy), torch.cumsum(cy, 1)
    args = [torch.randn(4, 32), torch.randn(4, 8)]
    f = fusec.compile(lstm_tail)
    got = f(*args)
    for g, w in zip(got, lstm_tail(*args)):
        torch.testing.assert_close(g, w)
    xdsl = sorted(m for m in sys.modules if m == "xdsl" or m.startswith("xdsl."))
    print(json.dumps({{"xdsl": xdsl, "launches": f.launches_per_call, **fusec.cache_stats()}}))
    """
)


def test_a_warm_process_imports_no_xdsl(cache_dir):
    env = {**os.environ, "FUSEC_CACHE_DIR": str(cache_dir)}
    code = _CHILD.format()
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-3000:]
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["kernels_compiled"] == 1 and cold["xdsl"]
    assert warm["kernels_compiled"] == 0 and warm["disk_hits"] == 1
    assert warm["launches"] == 1
    assert warm["xdsl"] == []


def test_the_tables_without_xdsl_agree_with_the_ir():
    from fusec.codegen.torch_ops import TORCH_DTYPES as IR_DTYPES
    from fusec.runtime.operands import TORCH_DTYPES
    from fusec.runtime.torch_steps import DTYPE_BY_NAME

    assert TORCH_DTYPES == {str(k): v for k, v in IR_DTYPES.items()}
    assert set(DTYPE_BY_NAME.values()) == set(IR_DTYPES.values())


def test_a_warm_started_function_says_why_it_is_not_explained(cache_dir):
    args = _args()
    fusec.compile(lstm_tail)(*args)
    g = fusec.compile(lstm_tail)
    g(*args)
    text = str(g.explain())
    assert "not explained" in text and "warm-start cache" in text
    assert "runs eagerly" not in text
    # fusec.explain compiles again, without the cache: the full report.
    full = str(fusec.explain(lstm_tail, *args))
    assert "kernel" in full and "not explained" not in full


def _loaded_guarded_step() -> tuple[Any, Any, list[torch.Tensor]]:
    """The program `lstm_tail` loads from the warm-start cache in a (seemingly)
    new process, its one `scf.if` step, and that step's operands in a call."""
    args = _args()
    fusec.compile(lstm_tail)(*args)
    cache_mod.reset()
    g = fusec.compile(lstm_tail)
    _check(g(*args), lstm_tail(*args))
    assert g.last.imported is None  # loaded, not compiled
    program = g.last.program
    (guarded,) = [s for s in program.steps if s.kind == "if"]
    values = dict(zip(program.arg_slots, args, strict=True))
    return program, guarded, [values[i] for i in guarded.ins[1:]]


def test_a_loaded_kernel_step_runs_its_group_body_when_the_kernel_declines(cache_dir):
    _, guarded, operands = _loaded_guarded_step()
    then = guarded.branches[0]
    inner = dict(zip(then.arg_slots, operands, strict=True))
    (kernel_step,) = [s for s in then.steps if s.kind == "kernel"]
    inputs = [inner[i] for i in kernel_step.ins]
    by_kernel = kernel_step.fn(*inputs)
    by_body = kernel_step.fn.declined(tuple(inputs))
    assert len(by_kernel) == len(by_body) == 2
    for k, b in zip(by_kernel, by_body, strict=True):
        torch.testing.assert_close(k, b)


def test_a_loaded_program_makes_an_else_program_when_its_guard_first_fails(cache_dir):
    """A warm start defers each `scf.if`'s else-program (the group's ops through
    PyTorch, run when its guard fails): it is made on that first failure and
    computes what the kernel does."""
    program, guarded, operands = _loaded_guarded_step()
    assert guarded.deferred is not None and guarded.deferred._program is None
    assert len(guarded.branches) == 1 and program.fallback_groups == []
    by_kernel = guarded.fn(True, *operands)
    assert guarded.deferred._program is None
    by_ops = guarded.fn(False, *operands)
    assert guarded.deferred._program is not None
    assert len(by_kernel) == len(by_ops) == 2
    for k, b in zip(by_kernel, by_ops, strict=True):
        torch.testing.assert_close(k, b)
    assert "else:" in program.describe()


_MODES_CHILD = textwrap.dedent(
    """
    import copy, json, sys
    import fusec, torch
    from torch import nn

    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU())
    model = copy.deepcopy(eager)
    for m in (eager, model):
        m.train(sys.argv[1] == "train")
    f = fusec.compile(model)
    ok = []
    for step in range(2):
        x = torch.randn(16, 8)
        with torch.no_grad():
            ok.append(torch.allclose(f(x), eager(x), atol=1e-5))
        ok += [torch.allclose(a.float(), b.float(), atol=1e-6)
               for a, b in zip(model.buffers(), eager.buffers())]
    print(json.dumps({"ok": ok, "hits": fusec.cache_stats()["disk_hits"]}))
    """
)


def test_a_module_in_another_mode_misses_the_entry_of_the_first(cache_dir):
    """Two processes share a cache: the first compiles a module in eval mode,
    the second calls it in training mode. The modules' training flags are part
    of the warm-start and program keys, so the second compiles its own program:
    batch statistics, and running statistics updated as eager updates them."""
    env = {**os.environ, "FUSEC_CACHE_DIR": str(cache_dir)}
    runs = []
    for mode in ("eval", "train", "eval"):
        p = subprocess.run(
            [sys.executable, "-c", _MODES_CHILD, mode], env=env, capture_output=True, text=True
        )
        assert p.returncode == 0, p.stderr[-3000:]
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    for run in runs:
        assert all(run["ok"]), run
    assert runs[2]["hits"] >= 1  # the eval entry still serves eval mode


def test_a_reused_arange_stays_reused_after_a_warm_hit(cache_dir, monkeypatch):
    """An `arange` of constant bounds that only kernels read is made once per
    program (`fusec.codegen.torch_ops.reusable`); the entry says so, and the
    program a warm hit loads makes it once too."""
    from kernel_counts import top_level_aten

    def angles(x: torch.Tensor) -> torch.Tensor:
        return (x * torch.arange(x.shape[1]).float()).sigmoid()

    x = torch.randn(4, 6)
    f = fusec.compile(angles)
    _check(f(x), angles(x))
    assert top_level_aten(lambda: f(x))["aten::arange"] == 0
    (entry,) = _hosts(cache_dir)
    assert b'"reused"' in entry.read_bytes()
    counts = CompileCounts(monkeypatch)
    cache_mod.reset()
    g = fusec.compile(angles)
    _check(g(x), angles(x))
    assert (counts.imports, counts.pipelines) == (0, 0)
    assert top_level_aten(lambda: g(x))["aten::arange"] == 0
    _check(g(x), angles(x))
