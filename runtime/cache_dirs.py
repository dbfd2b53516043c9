"""The cache's directories and its secret: private to this user, or not used.

Every directory fusec reads or writes entries in (the cache root, `kernels/`,
`programs/`, `objects/`, `hosts/`, `partitions/` and their two-letter shards) is created 0700,
each missing level on its own (`mkdir(parents=True)` would give the levels
above the last the umask's mode: 0777 under umask 000), and is refused when
another user owns it or group or others can write it: whoever can write there
chooses the code that runs. `vet(dir)` checks once per process and directory
and warns once, naming the directory; the caller then keeps its cache in
memory only.

The secret (`<root>/secret`, 32 random bytes, 0600) keys the MAC each entry's
header carries (`fusec.runtime.entries`): an entry is bound to its key and to
this cache, so one edited or planted with a well-formed header, or copied from
another cache, is a miss.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import tempfile
import threading
from pathlib import Path

from fusec.runtime import env

log = logging.getLogger("fusec")

SECRET_NAME = "secret"
SECRET_BYTES = 32

_lock = threading.Lock()
_vetted: dict[str, str | None] = {}
_secrets: dict[str, bytes] = {}


def make_private_dirs(directory: Path) -> None:
    """Creates `directory` and each missing parent with mode 0700 (whatever the
    umask: mkdir's mode is masked by it, and 0700 minus any umask bits is still
    private)."""
    missing: list[Path] = []
    d = directory
    while not d.exists():
        missing.append(d)
        if d.parent == d:
            break
        d = d.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            pass


def unsafe_reason(st: os.stat_result) -> str | None:
    """Why a file or directory with this status must not be trusted: owned by
    another user, or writable by group or others."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None and st.st_uid != uid:
        return f"it is owned by uid {st.st_uid}, not by this user (uid {uid})"
    if st.st_mode & 0o022:
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def private_directory(directory: Path) -> str | None:
    """Creates `directory` (0700, parents too) if needed; returns why it must not
    be used as a cache (owned by another user, writable by group or others, not
    a directory, cannot be created), or None when it is fine."""
    try:
        make_private_dirs(directory)
        st = os.stat(directory)
    except OSError as e:
        return f"it cannot be created ({e.strerror or e})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    return unsafe_reason(st)


def vet(directory: Path) -> str | None:
    """`private_directory(directory)`, decided once per process (`forget` starts
    over); a refusal is logged once, naming the directory."""
    with _lock:
        if str(directory) in _vetted:
            return _vetted[str(directory)]
    why = private_directory(directory)
    if why is not None:
        refuse(directory, why)
    with _lock:
        return _vetted.setdefault(str(directory), why)


def refuse(directory: Path, why: str) -> None:
    """Marks `directory` unusable (`vet` answers `why` from now on) and warns,
    naming it, the first time."""
    with _lock:
        first = _vetted.get(str(directory)) is None
        _vetted[str(directory)] = why
    if first:
        log.warning(
            "fusec: not using the cache directory %s: %s; kernels and programs are "
            "cached in memory only",
            directory,
            why,
        )


def forget() -> None:
    """Drops what `vet` and `secret` remember (the cache was reset)."""
    with _lock:
        _vetted.clear()
        _secrets.clear()


def secret(root: Path, _retry: bool = True) -> bytes:
    """The MAC key of the cache at `root` (a vetted directory): read from
    `root/secret`, made on first use. `OSError` when it cannot be had safely
    (not a regular file of this user's that only this user can read)."""
    name = str(root)
    with _lock:
        known = _secrets.get(name)
    if known is not None:
        return known
    path = root / SECRET_NAME
    nofollow = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    if not os.path.lexists(path):
        # Written whole to a private temporary, then linked into place: `link`
        # fails if another process got there first, and no reader ever sees a
        # secret cut short.
        fd, tmp = tempfile.mkstemp(dir=root, prefix=f"{SECRET_NAME}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(SECRET_BYTES))
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links: create it in place
            with contextlib.suppress(FileExistsError):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(os.urandom(SECRET_BYTES))
        finally:
            os.unlink(tmp)
    fd = os.open(path, os.O_RDONLY | nofollow | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        why = unsafe_reason(st)
        if why is None and st.st_mode & 0o044:
            why = f"it is readable by group or others (mode {stat.S_IMODE(st.st_mode):o})"
        if why is None and not stat.S_ISREG(st.st_mode):
            why = "it is not a regular file"
        value = f.read(SECRET_BYTES + 1)
    if why is None and len(value) != SECRET_BYTES:
        if _retry:  # our own but damaged: make it again (its entries become misses)
            path.unlink(missing_ok=True)
            return secret(root, _retry=False)
        why = f"it holds {len(value)} bytes, not {SECRET_BYTES}"
    if why is not None:
        raise PermissionError(f"cache secret {path}: {why}")
    with _lock:
        return _secrets.setdefault(name, value)


def default_cache_dir() -> Path:
    """`$FUSEC_CACHE_DIR`, else the user cache dir (`platformdirs`)."""
    configured = env.cache_dir()
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_cache_dir("fusec"))
