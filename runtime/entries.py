"""Cache entries as data: a JSON header, then opaque bytes, in a private directory.

Nothing read from a cache directory is ever executed or unpickled: an entry is

    b"FUSEC-E2\\n" | len(header) (8 bytes, little endian) | header (JSON object) | payload

where the header holds what the reader checks (its `format`, the full key, the
fingerprint of the code that wrote it, whatever the caller adds) and the size and
sha256 of the payload (object code, PTX, ...). Any mismatch is a `CorruptEntry`,
which callers treat as a miss and rebuild.

The pair any on-disk cache of fusec uses (kernels today; a warm-start cache of
whole programs can reuse it as is, with its own `kind` in the header):

    write_entry(path, {"kind": "kernel", "key": key, ...}, payload)
    header, payload = read_entry(path, expect={"kind": "kernel", "key": key})

Given the cache's secret (`fusec.runtime.cache_dirs.secret`), the header also
holds an HMAC of itself (kind, key, fingerprint, the payload's sha256): an
entry edited or planted with a well-formed header, or copied from another
cache, fails it. `private_directory(dir)` (`fusec.runtime.cache_dirs`) makes
(0700) or vets a cache directory: one owned by someone else or writable by
group/others is refused, since whoever can write an entry chooses the code that
runs; `write_atomic` makes missing levels 0700 and will not write into a shard
that is not private. Reads refuse symlinks, FIFOs, devices, oversized files and
files of another user or writable by others before opening them for reading
(`lstat`, then `O_NOFOLLOW | O_NONBLOCK` and a second `fstat`), so a planted
FIFO cannot block a reader.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import stat
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fusec.runtime import env
from fusec.runtime.cache_dirs import make_private_dirs, unsafe_reason

MAGIC = b"FUSEC-E2\n"
ENTRY_FORMAT = 2
_LEN = 8
MAX_HEADER_BYTES = 1 << 20
MAX_ENTRY_BYTES = env.cache_max_entry_bytes()
"""Larger files are not read (a kernel's object code is a few hundred KiB)."""
STALE_TMP_SECONDS = 3600.0
"""A `.tmp` file older than this is removed even when its writer's pid is alive
(pids are reused, and a writer never takes this long)."""


class CorruptEntry(ValueError):
    """An entry that must not be used: damaged, truncated, for another key, or
    not a regular file."""


def _canonical(header: Mapping[str, Any]) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode()


def _mac(secret: bytes, header: Mapping[str, Any]) -> str:
    """HMAC-SHA256 of the header (without its `mac`): it holds the kind, key and
    fingerprint and the payload's sha256, so the MAC binds the payload to them."""
    body = {k: v for k, v in header.items() if k != "mac"}
    return hmac.new(secret, _canonical(body), hashlib.sha256).hexdigest()


def encode_entry(header: Mapping[str, Any], payload: bytes, secret: bytes | None = None) -> bytes:
    """The bytes of an entry: `header` (JSON-serializable, plus the payload's size
    and sha256 and the format, and with a `secret` the header's MAC) followed by
    `payload`."""
    full = {
        **header,
        "format": ENTRY_FORMAT,
        "payload_bytes": len(payload),
        "payload_sha256": hashlib.sha256(payload).hexdigest(),
    }
    if secret is not None:
        full["mac"] = _mac(secret, full)
    text = _canonical(full)
    return MAGIC + len(text).to_bytes(_LEN, "little") + text + payload


def decode_entry(
    data: bytes, expect: Mapping[str, Any] | None = None, secret: bytes | None = None
) -> tuple[dict[str, Any], bytes]:
    """(header, payload) of an entry; `CorruptEntry` unless it is whole, of this
    format, every `expect[k]` equals `header[k]` and, given a `secret`, its MAC
    is the one this cache made (not edited, planted or copied from elsewhere)."""
    start = len(MAGIC) + _LEN
    if len(data) < start or not data.startswith(MAGIC):
        raise CorruptEntry("bad magic")
    size = int.from_bytes(data[len(MAGIC) : start], "little")
    if size > MAX_HEADER_BYTES or start + size > len(data):
        raise CorruptEntry(f"header of {size} bytes does not fit")
    try:
        header = json.loads(data[start : start + size])
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise CorruptEntry(f"header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise CorruptEntry("header is not a JSON object")
    if header.get("format") != ENTRY_FORMAT:
        raise CorruptEntry(f"format {header.get('format')!r}, expected {ENTRY_FORMAT}")
    payload = data[start + size :]
    if header.get("payload_bytes") != len(payload):
        raise CorruptEntry(f"truncated: {len(payload)} of {header.get('payload_bytes')} bytes")
    if header.get("payload_sha256") != hashlib.sha256(payload).hexdigest():
        raise CorruptEntry("payload checksum mismatch")
    for k, want in (expect or {}).items():
        if header.get(k) != want:
            raise CorruptEntry(f"entry is for {k}={header.get(k)!r}, not {want!r}")
    if secret is not None:
        mac = header.get("mac")
        if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(secret, header)):
            raise CorruptEntry("entry is not bound to its key (no MAC of this cache)")
    return header, payload


def read_bytes_safely(path: Path, max_bytes: int = MAX_ENTRY_BYTES) -> bytes | None:
    """The contents of regular file `path`, None if there is none; `CorruptEntry`
    for a symlink, FIFO, device, directory or a file over `max_bytes`, decided
    without opening it for reading (so a FIFO cannot block)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    _check_regular(st, path, max_bytes)
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as e:  # ELOOP: replaced by a symlink since the lstat
        raise CorruptEntry(f"cannot open {path}: {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        st2 = os.fstat(f.fileno())
        _check_regular(st2, path, max_bytes)
        if (st2.st_dev, st2.st_ino) != (st.st_dev, st.st_ino):
            raise CorruptEntry(f"{path} was replaced while being opened")
        return f.read(max_bytes + 1)


def _check_regular(st: os.stat_result, path: Path, max_bytes: int) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise CorruptEntry(f"{path} is not a regular file (mode {stat.filemode(st.st_mode)})")
    why = unsafe_reason(st)
    if why is not None:
        raise CorruptEntry(f"{path} is not private: {why}")
    if st.st_size > max_bytes:
        raise CorruptEntry(f"{path} has {st.st_size} bytes, more than {max_bytes}")


def read_entry(
    path: Path,
    expect: Mapping[str, Any] | None = None,
    max_bytes: int = MAX_ENTRY_BYTES,
    secret: bytes | None = None,
) -> tuple[dict[str, Any], bytes] | None:
    """`decode_entry` of the file at `path`; None when there is no such file."""
    data = read_bytes_safely(path, max_bytes)
    if data is None:
        return None
    if len(data) > max_bytes:
        raise CorruptEntry(f"{path} grew past {max_bytes} bytes while being read")
    return decode_entry(data, expect, secret)


def write_entry(
    path: Path, header: Mapping[str, Any], payload: bytes, secret: bytes | None = None
) -> None:
    """Writes an entry atomically (`write_atomic`)."""
    write_atomic(path, encode_entry(header, payload, secret))


def write_atomic(path: Path, data: bytes) -> None:
    """Writes `data` to a private temporary file (`<name>.<pid>.<random>.tmp`, so
    `remove_stale_tmp` can tell whether its writer still runs) renamed over `path`.

    Readers see the old file or the whole new one. There is no `fsync`: after a
    power loss an entry may be empty or torn, which its size and checksum
    reveal (a miss, rebuilt), and a cold compile writes four entries, each
    `fsync` costing milliseconds to tens of them on a busy disk."""
    make_private_dirs(path.parent)
    why = unsafe_reason(os.stat(path.parent))
    if why is not None:
        raise PermissionError(f"not writing into {path.parent}: {why}")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f"{path.name}.{os.getpid()}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, someone else's
        return True
    return True


def remove_stale_tmp(directory: Path, prefix: str = "", min_age: float = 0.0) -> int:
    """Deletes the `.tmp` files (whose names start with `prefix`) in `directory`
    left by writers that died (killed mid-write) or that are over an hour old,
    none younger than `min_age` seconds; returns how many."""
    removed = 0
    now = time.time()
    try:
        names = [n for n in os.listdir(directory) if n.startswith(prefix) and n.endswith(".tmp")]
    except OSError:
        return 0
    for name in names:
        parts = name.rsplit(".", 3)  # <entry name>.<pid>.<random>.tmp
        pid = int(parts[1]) if len(parts) == 4 and parts[1].isdigit() else None
        p = directory / name
        try:
            age = now - os.lstat(p).st_mtime
            if age < min_age:
                continue
            old = age > STALE_TMP_SECONDS
            if old or pid is None or (pid != os.getpid() and not _pid_alive(pid)):
                os.unlink(p)
                removed += 1
        except OSError:
            continue
    return removed
