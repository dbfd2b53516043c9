"""Environment variables (issue 31, item 14): each is read in `fusec.runtime.env`;
a malformed or out-of-range value is named in a warning and replaced by its
default, never turns kernels off, never makes a wait endless."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap

import fusec
import pytest
import torch
from fusec.runtime import cache as cache_mod
from fusec.runtime import cpu, cpu_pool, env, program_cache


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each test sees its own first warning of a bad value."""
    monkeypatch.setattr(env, "_warned", set())


def warned_about(caplog, name: str) -> bool:
    return any(
        name in r.getMessage() and "using the default" in r.getMessage() for r in caplog.records
    )


def add_tail(x, y):
    return torch.sigmoid(x + y)


@pytest.mark.parametrize("value", ["abc", "-2", "1e3", "99999999"])
def test_num_threads(monkeypatch, caplog, value):
    monkeypatch.setenv("FUSEC_NUM_THREADS", value)
    cpu._fixed_threads.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="fusec"):
            assert cpu.num_threads() == torch.get_num_threads()
            x, y = torch.randn(64, 3), torch.randn(64, 3)
            f = fusec.compile(add_tail)
            torch.testing.assert_close(f(x, y), add_tail(x, y))
            assert f.launches_per_call == 1
    finally:
        cpu._fixed_threads.cache_clear()
    assert warned_about(caplog, "FUSEC_NUM_THREADS")


def test_num_threads_in_range_is_used(monkeypatch):
    monkeypatch.setenv("FUSEC_NUM_THREADS", "3")
    cpu._fixed_threads.cache_clear()
    try:
        assert cpu.num_threads() == 3
    finally:
        cpu._fixed_threads.cache_clear()


@pytest.mark.parametrize("value", ["lots", "-1", "1.5"])
def test_cpu_pool_mb(monkeypatch, caplog, value):
    monkeypatch.delenv("FUSEC_CPU_POOL_MB", raising=False)
    default = cpu_pool._default_cap()
    monkeypatch.setenv("FUSEC_CPU_POOL_MB", value)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        assert cpu_pool._default_cap() == default
    assert warned_about(caplog, "FUSEC_CPU_POOL_MB")
    monkeypatch.setenv("FUSEC_CPU_POOL_MB", "7")
    assert cpu_pool._default_cap() == 7 << 20


@pytest.mark.parametrize("value", ["nan", "-1", "inf", "soon", "1e9"])
def test_cache_lock_timeout_is_never_endless(monkeypatch, caplog, value):
    monkeypatch.setenv("FUSEC_CACHE_LOCK_TIMEOUT", value)
    cache_mod.reset()
    with caplog.at_level(logging.WARNING, logger="fusec"):
        timeout = cache_mod.default_cache().lock_timeout
    assert timeout == env.DEFAULT_LOCK_TIMEOUT
    assert warned_about(caplog, "FUSEC_CACHE_LOCK_TIMEOUT")


_MAX_ENTRY = textwrap.dedent(
    """
    import logging, torch, fusec
    logging.basicConfig(level=logging.WARNING)
    f = fusec.compile(lambda x, y: torch.sigmoid(x + y))
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    torch.testing.assert_close(f(x, y), torch.sigmoid(x + y))
    print("launches", f.launches_per_call)
    """
)


@pytest.mark.parametrize("value", ["12MB", "0"])
def test_cache_max_entry_bytes_keeps_kernels_on(cache_dir, value):
    """Read when the cache module is imported: a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-c", _MAX_ENTRY],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "FUSEC_CACHE_MAX_ENTRY_BYTES": value, "FUSEC_CACHE_DIR": str(cache_dir)},
    )
    assert proc.returncode == 0, proc.stderr
    assert "launches 1" in proc.stdout, proc.stdout + proc.stderr
    assert "FUSEC_CACHE_MAX_ENTRY_BYTES" in proc.stderr and "using the default" in proc.stderr


@pytest.mark.parametrize(
    ("value", "on"), [("0", False), ("off", False), ("yes", True), ("maybe", True)]
)
def test_program_cache_switch(monkeypatch, caplog, value, on):
    monkeypatch.setenv("FUSEC_PROGRAM_CACHE", value)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        assert program_cache.enabled() is on
    assert warned_about(caplog, "FUSEC_PROGRAM_CACHE") == (value == "maybe")


def test_cache_max_mb(monkeypatch, caplog):
    monkeypatch.setenv("FUSEC_CACHE_MAX_MB", "0")
    with caplog.at_level(logging.WARNING, logger="fusec"):
        assert env.cache_max_mb() == env.DEFAULT_CACHE_MAX_MB
    assert warned_about(caplog, "FUSEC_CACHE_MAX_MB")
    monkeypatch.setenv("FUSEC_CACHE_MAX_MB", "64")
    assert env.cache_max_mb() == 64


def test_native_parallel_and_traceback_switches(monkeypatch, caplog):
    monkeypatch.setenv("FUSEC_NATIVE_PARALLEL", "0")
    monkeypatch.setenv("FUSEC_TRACEBACK", "1")
    assert env.native_parallel() is False and env.traceback() is True
    monkeypatch.setenv("FUSEC_NATIVE_PARALLEL", "nope")
    with caplog.at_level(logging.WARNING, logger="fusec"):
        assert env.native_parallel() is True
    assert warned_about(caplog, "FUSEC_NATIVE_PARALLEL")


def test_a_bad_value_is_warned_about_once(monkeypatch, caplog):
    monkeypatch.setenv("FUSEC_CACHE_LOCK_TIMEOUT", "nan")
    with caplog.at_level(logging.WARNING, logger="fusec"):
        for _ in range(3):
            env.cache_lock_timeout()
    assert sum("FUSEC_CACHE_LOCK_TIMEOUT" in r.getMessage() for r in caplog.records) == 1


def test_every_variable_is_read_in_env_only():
    """No other module of the compiler reads the environment itself."""
    import re
    from pathlib import Path

    reads = re.compile(r"os\.environ|os\.getenv|environ\.get")
    root = Path(__file__).resolve().parent.parent
    readers = [
        str(p.relative_to(root))
        for folder in ("compiler", "runtime", "passes", "dialects")
        for p in (root / folder).rglob("*.py")
        if p.name != "env.py" and "FUSEC_" in p.read_text() and reads.search(p.read_text())
    ]
    assert readers == []
