"""The kernel cache: compiled kernels keyed by canonical IR + specialization + target.

As in the seeds' `KernelCache` (`normalizeGraphForCache` + `lookupGraph`), a group
is looked up by its canonical form, so alpha-equivalent groups (an unrolled LSTM's
100 identical cells) share one entry and compile once. Keys:

    sha256(canonical_key(group).digest, target, builder fingerprint, format)

The canonical text already holds what a kernel is specialized on (dtypes, ranks,
which dims are 1). Entries live in memory and on disk (`$FUSEC_CACHE_DIR`, default
`platformdirs.user_cache_dir("fusec")`), one file per key:

    b"FUSEC-K1" | sha256(payload) (32 bytes) | len(payload) (8 bytes, little endian) | payload

where the payload is the pickled `KernelArtifact`. A file whose header, length or
checksum is wrong is rebuilt. A GPU artifact ("sm_XX", PTX) loads as a
`fusec.runtime.cuda.CudaKernel`: its cubin is assembled once and a module is loaded
per device on first use, so devices of one arch share the entry.

Writes go to a temporary file renamed into place; a `filelock` per key makes
concurrent processes build a kernel once, and a lock per key does the same for
threads.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusec.dialects.fusion import GroupOp

log = logging.getLogger("fusec")

MAGIC = b"FUSEC-K1"
FORMAT_VERSION = "1"
_HEADER = len(MAGIC) + 32 + 8

Builder = Callable[[GroupOp, str], Any]
"""(group, target) -> a picklable artifact."""
Loader = Callable[[Any], Any]
"""artifact -> a kernel: `kernel(inputs) -> outputs`."""


def default_cache_dir() -> Path:
    env = os.environ.get("FUSEC_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("fusec"))


def _default_builder(group: GroupOp, target: str) -> Any:
    from fusec.codegen import build_kernel

    return build_kernel(group, target=target)


def _default_loader(artifact: Any) -> Any:
    if getattr(artifact, "target", "cpu") != "cpu":
        # "sm_XX": PTX assembled to a cubin once, a module per device on first use.
        from fusec.runtime.cuda import load_kernel as load_cuda_kernel

        return load_cuda_kernel(artifact)
    from fusec.runtime.cpu import load_kernel

    return load_kernel(artifact)


def _source_fingerprint() -> str:
    """Changes whenever the code generator or the CPU runtime changes, so stale
    disk entries are never loaded."""
    h = hashlib.sha256(FORMAT_VERSION.encode())
    import importlib.util

    for name in ("fusec.codegen", "fusec.runtime.cpu", "fusec.canonical",
                 "fusec.passes.lower_group_to_loops", "fusec.passes.lower_reduction_to_loops",
                 "fusec.passes.lower_reduction_gpu", "fusec.passes.convert_arith_to_llvm"):  # fmt: skip
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            h.update(f"{name}:missing".encode())
            continue
        h.update(Path(spec.origin).read_bytes())
    return h.hexdigest()[:16]


def codegen_available() -> bool:
    import importlib.util

    return all(
        importlib.util.find_spec(n) is not None for n in ("fusec.codegen", "fusec.runtime.cpu")
    )


def encode_entry(artifact: Any) -> bytes:
    payload = pickle.dumps(artifact, protocol=pickle.HIGHEST_PROTOCOL)
    return MAGIC + hashlib.sha256(payload).digest() + len(payload).to_bytes(8, "little") + payload


def decode_entry(data: bytes) -> Any:
    """The artifact in `data`; `ValueError` if the entry is corrupt or truncated."""
    if len(data) < _HEADER or not data.startswith(MAGIC):
        raise ValueError("bad header")
    digest = data[len(MAGIC) : len(MAGIC) + 32]
    size = int.from_bytes(data[len(MAGIC) + 32 : _HEADER], "little")
    payload = data[_HEADER:]
    if len(payload) != size:
        raise ValueError(f"truncated: {len(payload)} of {size} bytes")
    if hashlib.sha256(payload).digest() != digest:
        raise ValueError("checksum mismatch")
    try:
        return pickle.loads(payload)
    except Exception as e:  # noqa: BLE001 - any unpickling failure is a corrupt entry
        raise ValueError(f"cannot unpickle: {e}") from e


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@dataclass
class CacheStats:
    kernels_compiled: int = 0
    memory_hits: int = 0
    disk_hits: int = 0
    disk_writes: int = 0
    corrupt_entries: int = 0
    build_failures: int = 0


@dataclass
class KernelCache:
    """Kernels in memory and on disk. `kernel_for(group)` is the only entry point
    the runtime uses; it returns None when no kernel can be built for the group."""

    directory: Path | None = None
    builder: Builder = _default_builder
    loader: Loader = _default_loader
    fingerprint: str | None = None
    stats: CacheStats = field(default_factory=CacheStats)

    def __post_init__(self) -> None:
        self._memory: dict[str, Any] = {}
        self._failed: dict[str, str] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        if self.fingerprint is None:
            self.fingerprint = _source_fingerprint()

    # ------------------------------------------------------------------ keys

    def key(self, group: GroupOp, target: str = "cpu") -> str:
        from fusec.canonical import canonical_key

        digest = canonical_key(group).digest
        parts = (digest, target, self.fingerprint, FORMAT_VERSION)
        return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()

    def path(self, key: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / "kernels" / key[:2] / f"{key}.bin"

    # ------------------------------------------------------------------ lookup

    def _known(self, key: str) -> tuple[bool, Any | None]:
        """(settled, kernel): a kernel in memory (a hit), or a build that already
        failed (None); call with `self._lock` held."""
        kernel = self._memory.get(key)
        if kernel is not None:
            self.stats.memory_hits += 1
            return True, kernel
        return key in self._failed, None

    def kernel_for(self, group: GroupOp, target: str = "cpu") -> Any | None:
        key = self.key(group, target)
        with self._lock:
            settled, kernel = self._known(key)
            if settled:
                return kernel
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            # Another thread may have built it while this one waited for the key.
            with self._lock:
                settled, kernel = self._known(key)
                if settled:
                    return kernel
            try:
                kernel = self._load_or_build(key, group, target)
            except Exception as e:  # noqa: BLE001 - any build failure falls back to torch
                reason = f"{type(e).__name__}: {e}"
                log.warning("fusec: no kernel for a group (%s); it runs through PyTorch", reason)
                with self._lock:
                    self._failed[key] = reason
                    self.stats.build_failures += 1
                return None
            with self._lock:
                self._memory[key] = kernel
            return kernel

    def failure(self, group: GroupOp, target: str = "cpu") -> str | None:
        """Why no kernel could be built for `group`, if that happened."""
        return self._failed.get(self.key(group, target))

    def _load_or_build(self, key: str, group: GroupOp, target: str) -> Any:
        path = self.path(key)
        if path is None:
            return self._build(key, group, target, None)
        kernel = self._read(path)
        if kernel is not None:
            return kernel
        import filelock

        path.parent.mkdir(parents=True, exist_ok=True)
        with filelock.FileLock(str(path) + ".lock", timeout=600):
            # Another process may have built it while we waited; a corrupt entry
            # seen twice is counted once.
            kernel = self._read(path, count_corrupt=False)
            if kernel is not None:
                return kernel
            return self._build(key, group, target, path)

    def _read(self, path: Path, count_corrupt: bool = True) -> Any | None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            log.warning("fusec: cannot read cache entry %s (%s); rebuilding", path, e)
            return None
        try:
            kernel = self.loader(decode_entry(data))
        except Exception as e:  # noqa: BLE001 - a bad entry is rebuilt, never fatal
            if count_corrupt:
                log.warning("fusec: corrupt cache entry %s (%s); rebuilding", path, e)
                with self._lock:
                    self.stats.corrupt_entries += 1
            return None
        with self._lock:
            self.stats.disk_hits += 1
        return kernel

    def _build(self, key: str, group: GroupOp, target: str, path: Path | None) -> Any:
        artifact = self.builder(group, target)
        kernel = self.loader(artifact)
        with self._lock:
            self.stats.kernels_compiled += 1
        if path is not None:
            try:
                write_atomic(path, encode_entry(artifact))
                with self._lock:
                    self.stats.disk_writes += 1
            except OSError as e:
                log.warning("fusec: cannot write cache entry %s (%s)", path, e)
        return kernel

    # ------------------------------------------------------------------ admin

    def entries(self) -> int:
        with self._lock:
            return len(self._memory)

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            d = dict(vars(self.stats))
            d["entries"] = len(self._memory)
            d["failed"] = len(self._failed)
            d["directory"] = None if self.directory is None else str(self.directory)
            return d


_default: KernelCache | None = None
_default_lock = threading.Lock()


def default_cache() -> KernelCache:
    """The process-wide cache (created on first use, reading `$FUSEC_CACHE_DIR`)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = KernelCache(directory=default_cache_dir())
        return _default


def cache_stats() -> dict[str, Any]:
    """`fusec.cache_stats()`: counters of the process-wide cache."""
    return default_cache().as_dict()


def reset(clear_disk: bool = False) -> None:
    """Drop the process-wide cache (memory entries and counters); the next use
    re-reads `$FUSEC_CACHE_DIR`. `clear_disk` also deletes the on-disk entries."""
    global _default
    with _default_lock:
        old, _default = _default, None
    if clear_disk:
        import shutil

        directory = old.directory if old is not None else default_cache_dir()
        if directory is not None:
            shutil.rmtree(directory / "kernels", ignore_errors=True)
