"""The warm-start caches (`fusec.runtime.program_cache`): whole programs and host
machine code survive the process, malformed entries are misses, and a warm
start gives the same results as eager PyTorch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import fusec
import pytest
import torch
from fusec.api import specializing
from fusec.backends.llvm_jit import JitModule
from fusec.runtime import entries, program_cache
from reference_models import lstm_tail

from tests.cache_cases import check_outputs as _check
from tests.cache_cases import tail_args as _args


def _entries(cache_dir: Path, kind: str) -> list[Path]:
    return sorted((cache_dir / f"{kind}s").rglob("*.bin"))


def test_entry_format_rejects_every_mismatch():
    data = program_cache.encode("program", "k1", b"payload")
    assert program_cache.decode("program", "k1", data) is not None
    assert program_cache.decode("object", "k1", data) is None  # other kind
    assert program_cache.decode("program", "k2", data) is None  # other key
    assert program_cache.decode("program", "k1", data[:-1]) is None  # truncated
    assert program_cache.decode("program", "k1", data[:-1] + b"X") is None  # checksum
    assert program_cache.decode("program", "k1", b"garbage") is None
    header = {"kind": "program", "key": "k1", "fingerprint": "stale"}
    stale = entries.encode_entry(header, b"payload")
    assert program_cache.decode("program", "k1", stale) is None


def test_second_compile_skips_the_pipeline(cache_dir, monkeypatch):
    args = _args()
    f = fusec.compile(lstm_tail)
    _check(f(*args), lstm_tail(*args))
    assert len(_entries(cache_dir, "program")) == 1

    def no_pipeline(*a, **k):
        raise AssertionError("the pipeline ran although the program was cached")

    monkeypatch.setattr(specializing, "run_pipeline", no_pipeline)
    g = fusec.compile(lstm_tail)
    _check(g(*args), lstm_tail(*args))
    assert g.launches_per_call == 1
    assert "fusion.guard" in g.ir()


def _drop_hosts(cache_dir: Path) -> None:
    """Removes the host-program entries, so a compile goes through the IR cache."""
    for p in _entries(cache_dir, "host"):
        p.unlink()


def test_other_shapes_are_another_program(cache_dir):
    f = fusec.compile(lstm_tail)
    f(*_args())
    _drop_hosts(cache_dir)
    g = fusec.compile(lstm_tail)
    args = [torch.randn(3, 16), torch.randn(3, 4)]
    _check(g(*args), lstm_tail(*args))
    assert len(_entries(cache_dir, "program")) == 2


def test_malformed_program_entry_is_rebuilt(cache_dir):
    args = _args()
    fusec.compile(lstm_tail)(*args)
    (entry,) = _entries(cache_dir, "program")
    data = entry.read_bytes()
    # Valid header and checksum over IR that does not parse: still a miss.
    bad = program_cache.encode("program", entry.stem, b"func.func @broken(")
    entry.write_bytes(bad)
    _drop_hosts(cache_dir)
    g = fusec.compile(lstm_tail)
    _check(g(*args), lstm_tail(*args))
    assert entry.read_bytes() == data  # rewritten by the rebuild
    entry.write_bytes(data[: len(data) // 2])
    _drop_hosts(cache_dir)
    h = fusec.compile(lstm_tail)
    _check(h(*args), lstm_tail(*args))
    assert entry.read_bytes() == data


def test_machine_code_is_loaded_from_the_object_cache(cache_dir):
    ir = textwrap.dedent(
        """
        define i64 @twice(i64 %x) {
          %y = mul i64 %x, 2
          ret i64 %y
        }
        """
    )
    import ctypes

    first = JitModule(ir)
    assert not first.object_cache_hit
    assert len(_entries(cache_dir, "object")) == 1
    second = JitModule(ir)
    assert second.object_cache_hit
    twice = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(second.address("twice"))
    assert twice(21) == 42
    (entry,) = _entries(cache_dir, "object")
    entry.write_bytes(entry.read_bytes()[:-3])  # corrupt: compiled again
    third = JitModule(ir)
    assert not third.object_cache_hit
    assert ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(third.address("twice"))(5) == 10


def test_cache_can_be_turned_off(cache_dir, monkeypatch):
    monkeypatch.setenv("FUSEC_PROGRAM_CACHE", "0")
    args = _args()
    _check(fusec.compile(lstm_tail)(*args), lstm_tail(*args))
    assert _entries(cache_dir, "program") == [] and _entries(cache_dir, "object") == []


_CHILD = textwrap.dedent(
    """
    import json, sys, torch, fusec
    from fusec.api import specializing
    sys.path.insert(0, {here!r})
    from test_program_cache import lstm_tail, _args
    if {warm}:
        def no_pipeline(*a, **k):
            raise AssertionError("pipeline ran")
        specializing.run_pipeline = no_pipeline
    args = _args()
    f = fusec.compile(lstm_tail)  # kept: its kernels live as long as it does
    got = f(*args)
    for g, w in zip(got, lstm_tail(*args)):
        torch.testing.assert_close(g, w)
    from fusec.runtime import cpu
    hits = [k._jit.object_cache_hit for k in cpu._loaded.values()]
    print(json.dumps({{"object_hits": hits, **fusec.cache_stats()}}))
    """
)


@pytest.mark.parametrize("rounds", [2])
def test_a_second_process_starts_warm(cache_dir, rounds):
    env = {**os.environ, "FUSEC_CACHE_DIR": str(cache_dir)}
    here = str(Path(__file__).parent)
    out = []
    for warm in (False, True)[:rounds]:
        code = _CHILD.format(here=here, warm=warm)
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr[-3000:]
        out.append(json.loads(p.stdout.strip().splitlines()[-1]))
    cold, warm_ = out
    assert cold["kernels_compiled"] == 1 and cold["object_hits"] == [False]
    assert warm_["kernels_compiled"] == 0 and warm_["object_hits"] == [True]


class _Act(torch.nn.Module):
    def __init__(self, act: torch.nn.Module):
        super().__init__()
        self.act = act

    def forward(self, x):
        return self.act(x) * 2


def test_same_code_other_submodule_is_another_program(cache_dir):
    x = torch.randn(5, 6)
    for act in (torch.nn.GELU(), torch.nn.ReLU(), torch.nn.Tanh()):
        model = _Act(act)
        torch.testing.assert_close(fusec.compile(model)(x), model(x))
    assert len(_entries(cache_dir, "program")) == 3


def test_fingerprint_covers_an_installed_wheels_sources(tmp_path):
    """Installed from a wheel, fusec is one `fusec/` tree (`fusec/dialects/`,
    `fusec/passes/`, ...), not the checkout's package-dir folders: the
    fingerprint still hashes every module, so a changed pass is a new fingerprint
    (stale programs are not reused after an upgrade)."""
    import importlib.util
    import shutil

    site = tmp_path / "site"
    for package in ("fusec", "fusec.dialects", "fusec.passes", "fusec.runtime"):
        (folder,) = importlib.util.find_spec(package).submodule_search_locations
        shutil.copytree(
            folder,
            site.joinpath(*package.split(".")),
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    probe = (
        "import fusec\n"
        "from fusec.runtime import program_cache as p\n"
        f"assert fusec.__file__.startswith({str(site)!r}), fusec.__file__\n"
        "print(p.fingerprint())\n"
    )

    def fingerprint() -> str:
        env = {**os.environ, "PYTHONPATH": str(site)}
        out = subprocess.run(
            [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    before = fingerprint()
    with (site / "fusec" / "passes" / "fuse.py").open("a") as f:
        f.write("\n# an edit\n")
    assert fingerprint() != before
