"""The kernel cache: canonical keys share kernels, the disk cache survives the
process, corrupt entries are rebuilt, and threads/processes build a kernel once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import fusec
import pytest
import torch
from fusec.dialects.fusion import GroupOp
from fusec.runtime import cache as cache_mod
from fusec.runtime.cache import KernelCache, decode_entry, encode_entry
from reference_models import lstm_tail as tail

ROOT = Path(__file__).resolve().parent.parent


def lstm_unrolled(xs, h, c, w, b):
    for t in range(100):
        gates = torch.addmm(b, torch.cat([xs[t], h], 1), w)
        i, f, g, o = gates.chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
    return h, c


def groups_of(f) -> list[GroupOp]:
    return [op for op in f.last.imported.module.walk() if isinstance(op, GroupOp)]


def test_alpha_equivalent_groups_share_one_kernel():
    def a(x, y):
        return torch.sigmoid(x * y) - y

    def b(p, q):
        prod = p * q
        return torch.sigmoid(prod) - q

    x, y = torch.randn(4, 3), torch.randn(4, 3)
    fa, fb = fusec.compile(a), fusec.compile(b)
    torch.testing.assert_close(fa(x, y), a(x, y))
    torch.testing.assert_close(fb(x, y), b(x, y))
    stats = fusec.cache_stats()
    assert (stats["kernels_compiled"], stats["memory_hits"], stats["entries"]) == (1, 1, 1)
    assert fa.launches_per_call == fb.launches_per_call == 1


def test_unrolled_lstm_compiles_exactly_one_forward_kernel():
    T, B, In, H = 100, 2, 3, 4
    args = (torch.randn(T, B, In), torch.randn(B, H), torch.randn(B, H),
            torch.randn(In + H, 4 * H) * 0.3, torch.randn(4 * H))  # fmt: skip
    f = fusec.compile(lstm_unrolled)
    got = f(*args)
    want = lstm_unrolled(*args)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
    assert f.launches_per_call == 100
    stats = fusec.cache_stats()
    assert stats["kernels_compiled"] == 1
    assert stats["entries"] == 1
    assert stats["memory_hits"] == 99


_CHILD = textwrap.dedent(
    """
    import json, torch, fusec

    def tail(gates, cx):
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(cy), cy

    args = (torch.randn(8, 64), torch.randn(8, 16))
    f = fusec.compile(tail)
    ok = all(torch.allclose(a, b, rtol=1.3e-6, atol=1e-5) for a, b in zip(f(*args), tail(*args)))
    print(json.dumps({**fusec.cache_stats(), "ok": ok, "launches": f.launches_per_call}))
    """
)


def run_child(cache_dir: Path) -> dict:
    env = {**os.environ, "FUSEC_CACHE_DIR": str(cache_dir)}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_second_process_hits_the_disk_cache(cache_dir):
    first = run_child(cache_dir)
    assert first["ok"] and first["launches"] == 1
    assert (first["kernels_compiled"], first["disk_hits"], first["disk_writes"]) == (1, 0, 1)
    second = run_child(cache_dir)
    assert second["ok"] and second["launches"] == 1
    assert (second["kernels_compiled"], second["disk_hits"]) == (0, 1)


def test_processes_at_once_build_each_kernel_once(cache_dir):
    env = {**os.environ, "FUSEC_CACHE_DIR": str(cache_dir)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )  # fmt: skip
        for _ in range(2)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert all(r["ok"] for r in results)
    assert sum(r["kernels_compiled"] for r in results) == 1
    assert sum(r["disk_hits"] for r in results) == 1


def entry_files(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "kernels").rglob("*.bin"))


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_corrupt_entry_is_detected_and_rebuilt(cache_dir, damage):
    args = (torch.randn(8, 64), torch.randn(8, 16))
    fusec.compile(tail)(*args)
    [entry] = entry_files(cache_dir)
    data = entry.read_bytes()
    if damage == "truncate":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        entry.write_bytes(data[:-10] + bytes([data[-10] ^ 0xFF]) + data[-9:])
    else:
        entry.write_bytes(b"not a kernel")
    cache_mod.reset()  # a fresh process-wide cache: memory is empty again
    f = fusec.compile(tail)
    for g, w in zip(f(*args), tail(*args), strict=True):
        torch.testing.assert_close(g, w)
    stats = fusec.cache_stats()
    assert (stats["corrupt_entries"], stats["kernels_compiled"], stats["disk_hits"]) == (1, 1, 0)
    assert decode_entry(entry.read_bytes()) is not None  # rewritten whole


def test_entry_format_checks():
    blob = encode_entry({"key": "k"}, b"x" * 100)
    header, payload = decode_entry(blob, expect={"key": "k"})
    assert (header["key"], payload) == ("k", b"x" * 100)
    for bad in (blob[:-1], b"XXXXXXXX" + blob[8:], blob[:40] + b"y" + blob[41:], b""):
        with pytest.raises(ValueError):
            decode_entry(bad)
    with pytest.raises(ValueError, match="key"):
        decode_entry(blob, expect={"key": "another"})


def test_threads_build_a_kernel_once(cache_dir):
    f = fusec.compile(tail, use_kernels=False)
    f(torch.randn(8, 64), torch.randn(8, 16))
    [group] = groups_of(f)
    calls = []

    def counting_builder(g, target):
        calls.append(1)
        return cache_mod._default_builder(g, target)

    cache = KernelCache(directory=cache_dir, builder=counting_builder)
    kernels: list[object] = []
    barrier = threading.Barrier(6)

    def worker():
        barrier.wait()
        kernels.append(cache.kernel_for(group))

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(kernels) == 6 and all(k is kernels[0] and k is not None for k in kernels)
    assert cache.stats.memory_hits == 5
