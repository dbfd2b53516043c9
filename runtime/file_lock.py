"""An exclusive lock on a file between processes: the disk cache's per-key lock.

POSIX `flock` on the lock file, polled with a timeout:

    lock = FileLock("/cache/ab/abcd.lock", timeout=5.0)
    lock.acquire()          # LockTimeout after 5 s held by another process
    try:
        ...                 # build the entry
    finally:
        lock.release()

The lock is the kernel's `flock` (the same one `filelock.FileLock` takes on
POSIX), so it is released when its holder dies, however it dies. Importing
`filelock` cost 15-18 ms, on the path of every cold first call, for the two
calls used here; where there is no `fcntl` (Windows) that package is the lock.
"""

from __future__ import annotations

import os
import time
from typing import Any

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

POLL_SECONDS = 0.01
"""How often a waiting process tries the lock again."""


class LockTimeout(TimeoutError):
    """Another process held the lock for longer than the timeout."""


class FileLock:
    """An exclusive `flock` on `path` (created 0600 if missing); see the module
    docstring. `timeout` < 0 waits for as long as it takes."""

    def __init__(self, path: str, timeout: float = -1.0):
        self.path = path
        self.timeout = timeout
        self._fd: int | None = None
        self._other: Any = None if fcntl is not None else _filelock(path, timeout)

    def acquire(self) -> None:
        """Takes the lock; `LockTimeout` when another process kept it past the
        timeout, `OSError` when the lock file cannot be opened."""
        if self._other is not None:
            import filelock

            try:
                self._other.acquire()
            except filelock.Timeout:
                raise LockTimeout(self.path) from None
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if 0 <= self.timeout and deadline <= time.monotonic():
                    os.close(fd)
                    raise LockTimeout(self.path) from None
                time.sleep(POLL_SECONDS)
                continue
            except OSError:
                os.close(fd)
                raise
            self._fd = fd
            return

    def release(self) -> None:
        """Gives the lock up (closing the file releases the `flock`)."""
        if self._other is not None:
            self._other.release()
            return
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _filelock(path: str, timeout: float) -> Any:
    import filelock

    return filelock.FileLock(path, timeout=timeout)
