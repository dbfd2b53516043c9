"""The disk cache's lock between processes (`fusec.runtime.file_lock`)."""

from __future__ import annotations

import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fusec.runtime.file_lock import FileLock, LockTimeout

_HOLD = textwrap.dedent(
    """
    import sys, time
    from fusec.runtime.file_lock import FileLock
    lock = FileLock(sys.argv[1])
    lock.acquire()
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    lock.release()
    """
)


def hold(path: Path, seconds: float) -> subprocess.Popen[str]:
    """A process holding the lock at `path` for `seconds` (it said so)."""
    p = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "locked"
    return p


def test_acquire_and_release_again(tmp_path: Path) -> None:
    path = tmp_path / "k.lock"
    lock = FileLock(str(path), timeout=1.0)
    for _ in range(2):
        lock.acquire()
        lock.release()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_lock_another_process_holds_times_out(tmp_path: Path) -> None:
    path = tmp_path / "k.lock"
    holder = hold(path, 60)
    try:
        start = time.monotonic()
        with pytest.raises(LockTimeout):
            FileLock(str(path), timeout=0.3).acquire()
        assert 0.25 <= time.monotonic() - start < 10
    finally:
        holder.kill()
        holder.wait()


def test_a_killed_holder_leaves_the_lock_free(tmp_path: Path) -> None:
    path = tmp_path / "k.lock"
    holder = hold(path, 60)
    holder.kill()
    holder.wait()
    lock = FileLock(str(path), timeout=5.0)
    lock.acquire()
    lock.release()


def test_without_a_timeout_it_waits_for_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "k.lock"
    holder = hold(path, 0.5)
    try:
        start = time.monotonic()
        lock = FileLock(str(path))
        lock.acquire()
        assert time.monotonic() - start >= 0.2  # it did wait
        lock.release()
    finally:
        holder.wait()
