"""The disk cache's size cap: least recently used entries go first.

All the cache's kinds share one cap (`FUSEC_CACHE_MAX_MB`, default 1024 MiB):
`kernels/`, `programs/`, `objects/`, `hosts/`, `partitions/`. An entry's mtime
says when it was last used: a write sets it and a hit sets it again (`touch`, one `utime`
per entry a process loads, not per call). Eviction runs at write time,
amortised (`note_write`): on a process's first write when no process swept in
the last `SWEEP_SECONDS` (`<root>/last-sweep`'s mtime), then every
`SWEEP_EVERY_WRITES` writes. A sweep (`sweep`):

    cache/                      total 1.3 GiB > cap 1 GiB
      kernels/ab/ab12….bin      used 3 days ago   -> removed first
      objects/cd/cd34….bin      used an hour ago  -> removed next, ... until
      hosts/ef/ef56….bin        used now             the total is 90% of the cap
      programs/01/0123….bin.4242.x1y2.tmp  writer dead, 20 min old -> removed

also removes temporaries of writers that died (`entries.remove_stale_tmp`,
only those older than `STALE_TMP_MIN_AGE`: a live writer in another pid
namespace must not lose its file) and lock files with no entry that nobody
holds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path

from fusec.runtime import env
from fusec.runtime.entries import remove_stale_tmp

log = logging.getLogger("fusec.cache")

KIND_DIRS = ("kernels", "programs", "objects", "hosts", "partitions")
SWEEP_EVERY_WRITES = 64
SWEEP_SECONDS = 600.0
STALE_TMP_MIN_AGE = 600.0
STAMP = "last-sweep"
LOW_WATER = 0.9
"""A sweep brings the total down to this fraction of the cap, so that the next
writes do not each evict one entry."""

_lock = threading.Lock()
_writes: dict[str, int] = {}


def touch(path: Path) -> None:
    """Marks the entry at `path` used now (eviction keeps it longest)."""
    with contextlib.suppress(OSError):
        os.utime(path)


def note_write(root: Path) -> None:
    """Called after each entry written under `root`: sweeps now and then (see
    the module docstring); never raises."""
    name = str(root)
    with _lock:
        count = _writes.get(name, 0)
        _writes[name] = count + 1
    due = count % SWEEP_EVERY_WRITES == SWEEP_EVERY_WRITES - 1
    if count == 0:
        try:
            due = time.time() - os.stat(root / STAMP).st_mtime > SWEEP_SECONDS
        except OSError:
            due = True
    if due:
        try:
            sweep(root, env.cache_max_mb() << 20)
        except OSError as e:
            log.info("cache sweep of %s stopped: %s", root, e)


def sweep(root: Path, max_bytes: int) -> tuple[int, int]:
    """Removes stale temporaries and unheld orphan locks everywhere under `root`'s
    kind directories, then the least recently used entries until their total
    is at most `LOW_WATER * max_bytes` (when it is over `max_bytes`); returns
    (entries evicted, temporaries removed)."""
    stamp = root / STAMP
    stamp.touch(mode=0o600)
    os.utime(stamp)
    found: list[tuple[float, int, Path]] = []
    tmp_removed = 0
    for kind in KIND_DIRS:
        top = root / kind
        if not top.is_dir():
            continue
        for shard in top.iterdir():
            if not shard.is_dir() or shard.is_symlink():
                continue
            tmp_removed += remove_stale_tmp(shard, min_age=STALE_TMP_MIN_AGE)
            names = set(os.listdir(shard))
            for name in names:
                p = shard / name
                try:
                    st = os.lstat(p)
                except OSError:
                    continue
                if name.endswith(".bin"):
                    found.append((max(st.st_mtime, st.st_atime), st.st_size, p))
                elif name.endswith(".bin.lock") and name[: -len(".lock")] not in names:
                    if time.time() - st.st_mtime > STALE_TMP_MIN_AGE:
                        _remove_unheld_lock(p)
    total = sum(size for _, size, _ in found)
    evicted = 0
    if total > max_bytes:
        found.sort()
        for _, size, p in found:
            if total <= LOW_WATER * max_bytes:
                break
            with contextlib.suppress(OSError):
                p.unlink()
                total -= size
                evicted += 1
    if evicted or tmp_removed:
        log.info(
            "cache sweep of %s: %d least recently used entries and %d stale temporaries "
            "removed; %d bytes left (cap %d, $FUSEC_CACHE_MAX_MB)",
            root,
            evicted,
            tmp_removed,
            total,
            max_bytes,
        )
    return evicted, tmp_removed


def _remove_unheld_lock(path: Path) -> None:
    """Unlinks a lock file nobody holds (taken without waiting, removed while held)."""
    try:
        import fcntl
    except ImportError:  # Windows: left in place
        return
    try:
        fd = os.open(path, os.O_RDWR | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        path.unlink()
    except OSError:
        pass
    finally:
        os.close(fd)
