"""The disk cache's cap (issue 31, item 13): least recently used entries of all
kinds go first, a hit makes an entry recent, stale temporaries of dead writers
go from every directory, and the sweep runs at write time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import fusec
from fusec.runtime import cache as cache_mod
from fusec.runtime import cache_eviction
from reference_models import lstm_tail

from tests.cache_cases import check_outputs, entry_files, tail_args

DAY = 86400.0


def plant(root: Path, kind: str, name: str, size: int, age: float) -> Path:
    """A `size`-byte file under `root/kind/<shard>/` last used `age` seconds ago."""
    shard = root / kind / name[:2]
    shard.mkdir(mode=0o700, parents=True, exist_ok=True)
    p = shard / name
    p.write_bytes(b"x" * size)
    then = time.time() - age
    os.utime(p, (then, then))
    return p


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_sweep_removes_the_least_recently_used_of_all_kinds(tmp_path):
    mb = 1 << 20
    oldest = plant(tmp_path, "kernels", "aa01.bin", mb, 5 * DAY)
    older = plant(tmp_path, "objects", "bb02.bin", mb, 4 * DAY)
    old = plant(tmp_path, "hosts", "cc03.bin", mb, 3 * DAY)
    recent = plant(tmp_path, "programs", "dd04.bin", mb, 2 * DAY)
    newest = plant(tmp_path, "kernels", "ee05.bin", mb, 60)
    evicted, _ = cache_eviction.sweep(tmp_path, 3 * mb)
    # Down to 90% of the cap: two of five 1 MiB entries stay.
    assert evicted == 3
    assert not oldest.exists() and not older.exists() and not old.exists()
    assert recent.exists() and newest.exists()
    assert cache_eviction.sweep(tmp_path, 3 * mb) == (0, 0)


def test_sweep_under_the_cap_removes_nothing(tmp_path):
    kept = [
        plant(tmp_path, k, f"{i:02x}ab.bin", 1000, DAY) for i, k in enumerate(("kernels", "hosts"))
    ]
    assert cache_eviction.sweep(tmp_path, 1 << 20) == (0, 0)
    assert all(p.exists() for p in kept)


def test_a_hit_makes_an_entry_recent(cache_dir):
    args = tail_args()
    fusec.compile(lstm_tail)(*args)
    # (Objects are loaded through the same `program_cache.load` as hosts.)
    used = entry_files(cache_dir, "kernel") + entry_files(cache_dir, "host")
    then = time.time() - 10 * DAY
    for p in used:
        os.utime(p, (then, then))
    cache_mod.reset()  # as a new process: every kind comes from disk
    g = fusec.compile(lstm_tail)
    check_outputs(g(*args), lstm_tail(*args))
    for p in used:
        assert time.time() - p.stat().st_mtime < DAY, p


def test_stale_temporaries_are_swept_in_every_directory(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = dead_pid()
        gone = [
            plant(tmp_path, kind, f"ab12.bin.{dead}.x1y2z3.tmp", 10, 20 * 60)
            for kind in ("kernels", "programs", "objects", "hosts")
        ]
        gone.append(plant(tmp_path, "programs", f"cd34.bin.{live.pid}.q1.tmp", 10, 2 * 3600))
        young = plant(tmp_path, "programs", f"ef56.bin.{dead}.r2.tmp", 10, 5)
        writing = plant(tmp_path, "objects", f"ab78.bin.{live.pid}.s3.tmp", 10, 20 * 60)
        _, removed = cache_eviction.sweep(tmp_path, 1 << 30)
    finally:
        live.kill()
        live.wait()
    assert removed == len(gone)
    assert not any(p.exists() for p in gone)
    assert young.exists() and writing.exists()


def test_orphan_locks_nobody_holds_are_removed(tmp_path):
    orphan = plant(tmp_path, "kernels", "ab12.bin.lock", 0, 20 * 60)
    entry = plant(tmp_path, "kernels", "ab34.bin", 10, 60)
    with_entry = plant(tmp_path, "kernels", "ab34.bin.lock", 0, 20 * 60)
    cache_eviction.sweep(tmp_path, 1 << 30)
    assert not orphan.exists() and entry.exists() and with_entry.exists()


def test_the_cap_is_kept_at_write_time(cache_dir, monkeypatch):
    """`FUSEC_CACHE_MAX_MB=1` and 3 MiB of old entries: the first write of a
    process sweeps, the old entries go and the new ones stay."""
    monkeypatch.setenv("FUSEC_CACHE_MAX_MB", "1")
    old = [plant(cache_dir, "programs", f"{i:02x}00.bin", 1 << 20, 30 * DAY) for i in range(3)]
    args = tail_args()
    f = fusec.compile(lstm_tail)
    check_outputs(f(*args), lstm_tail(*args))
    assert not any(p.exists() for p in old)
    assert all(entry_files(cache_dir, k) for k in ("kernel", "program", "host"))
    total = sum(p.stat().st_size for p in cache_dir.rglob("*.bin"))
    assert total <= 1 << 20


def test_a_process_sweeps_every_so_many_writes(tmp_path, monkeypatch):
    calls: list[Path] = []
    monkeypatch.setattr(cache_eviction, "sweep", lambda root, cap: calls.append(root) or (0, 0))
    monkeypatch.setattr(cache_eviction, "_writes", {})
    for _ in range(2 * cache_eviction.SWEEP_EVERY_WRITES):
        cache_eviction.note_write(tmp_path)
    # The first write (no stamp yet), then one per SWEEP_EVERY_WRITES.
    assert len(calls) == 3
