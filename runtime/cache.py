"""The kernel cache: compiled kernels keyed by canonical IR + specialization + target.

As in the seeds' `KernelCache` (`normalizeGraphForCache` + `lookupGraph`), a group
is looked up by its canonical form, so alpha-equivalent groups (an unrolled LSTM's
100 identical cells) share one entry and compile once. Keys:

    sha256(canonical_key(group).digest, target, builder fingerprint, format)

The canonical text already holds what a kernel is specialized on (dtypes, ranks,
which dims are 1). Entries live in memory and on disk (`$FUSEC_CACHE_DIR`, default
`platformdirs.user_cache_dir("fusec")`), one file per key, as data only
(`fusec.runtime.entries`): a JSON header with the full key, the fingerprint, the
kernel's name, target and signature, then the code (optimized LLVM IR for the
host, or PTX). On load the header must name the requested key and fingerprint
and fit the group (`check_artifact`); anything else is a corrupt entry, rebuilt.
A GPU artifact ("sm_XX", PTX) loads as a `fusec.runtime.cuda.CudaKernel`: its
cubin is assembled once and a module is loaded per device on first use, so
devices of one arch share the entry.

The directory is created 0700 (`fusec.runtime.cache_dirs`); one owned by another
user or writable by others is not used (memory-only cache, one warning naming
it), nor is one that cannot be created: either way fusion stays on. Entries are
MAC'd with the directory's secret and a kernel's signature must describe the
parameters its code defines (`fusec.runtime.entry_checks`); hits refresh an
entry's mtime and writes keep the cache under its cap
(`fusec.runtime.cache_eviction`). Writes go to a temporary file renamed into place; a
file lock per key (`fusec.runtime.file_lock`) makes concurrent processes build a
kernel once, and a lock per key does the same for threads. A lock held longer than `lock_timeout` seconds
(`$FUSEC_CACHE_LOCK_TIMEOUT`, default 5) is logged and the kernel is compiled
without the disk cache; `.tmp` files of killed writers are removed.

The cache reads no IR: what it asks about a group (build its kernel, its
canonical digest, its operand types, its text) goes to the `KernelBuilder` the
compiler installs (`set_kernel_builder`; `fusec.codegen` installs one when it is
imported), so the runtime imports only itself and `fusec.backends`, and a
warm-started program runs without xDSL.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from fusec.runtime import cache_dirs, env
from fusec.runtime.cache_dirs import default_cache_dir
from fusec.runtime.cache_eviction import note_write, touch
from fusec.runtime.entries import (
    CorruptEntry,
    decode_entry,
    encode_entry,
    read_entry,
    remove_stale_tmp,
    write_atomic,
    write_entry,
)
from fusec.runtime.kernel_signature import TILED_CPU
from fusec.runtime.kernel_table import KernelTable
from fusec.runtime.program_cache import package_version

__all__ = [
    "CorruptEntry",
    "KernelBuilder",
    "KernelCache",
    "cache_stats",
    "decode_entry",
    "default_cache",
    "encode_entry",
    "read_entry",
    "reset",
    "set_kernel_builder",
    "source_fingerprint",
    "write_atomic",
    "write_entry",
]

if TYPE_CHECKING:
    from fusec.dialects.fusion import GroupOp

log = logging.getLogger("fusec")
cache_log = logging.getLogger("fusec.cache")

FORMAT_VERSION = "2"
DEFAULT_LOCK_TIMEOUT = env.DEFAULT_LOCK_TIMEOUT

Builder = Callable[["GroupOp", str], Any]
"""(group, target) -> a `KernelArtifact` (others are kept in memory only)."""
Loader = Callable[[Any], Any]
"""artifact -> a kernel: `kernel(inputs) -> outputs`."""


class KernelBuilder(Protocol):
    """What the cache asks the compiler about a `fusion.group`. The runtime
    imports no compiler module: the codegen layer installs its builder
    (`fusec.codegen.kernel_builder`) with `set_kernel_builder` on import."""

    def build(self, group: GroupOp, target: str) -> Any:
        """The group's `KernelArtifact` for `target` ("cpu", `TILED_CPU`, "sm_XX")."""
        ...

    def digest(self, group: GroupOp) -> str:
        """The sha256 of the group's canonical form (equal for alpha-equivalent groups)."""
        ...

    def operand_types(self, group: GroupOp) -> tuple[tuple[str, ...], int]:
        """(each body argument's type as IR text, `tensor<4x3xf32>` or `f32`;
        the number of the group's results)."""
        ...

    def text(self, group: GroupOp) -> str:
        """The group as text that `parse` reads back (kept in a CPU kernel's entry)."""
        ...

    def parse(self, text: str) -> GroupOp | None:
        """The group of a `text`, or None when the text does not parse to one."""
        ...


_kernel_builder: KernelBuilder | None = None


def set_kernel_builder(builder: KernelBuilder) -> None:
    """Install the compiler's answers to the cache's questions about groups."""
    global _kernel_builder
    _kernel_builder = builder


def kernel_builder() -> KernelBuilder:
    """The installed `KernelBuilder`: a cache handed a group was handed it by the
    compiler, which installed one first."""
    if _kernel_builder is None:
        raise RuntimeError("fusec: no kernel builder installed (import fusec.codegen first)")
    return _kernel_builder


def _default_builder(group: GroupOp, target: str) -> Any:
    return kernel_builder().build(group, target)


def _default_loader(artifact: Any) -> Any:
    if getattr(artifact, "target", "cpu") != "cpu":
        # "sm_XX": PTX assembled to a cubin once, a module per device on first use.
        from fusec.runtime.cuda import load_kernel as load_cuda_kernel

        return load_cuda_kernel(artifact)
    from fusec.runtime.cpu import load_kernel

    return load_kernel(artifact)


_FINGERPRINT_PACKAGES = ("fusec.dialects", "fusec.passes")
_FINGERPRINT_MODULES = (
    "fusec.codegen.kernel",
    "fusec.backends.cuda_toolchain",
    "fusec.backends.llvm_jit",
    "fusec.backends.ptx",
    "fusec.codegen.torch_ops",
    "fusec.runtime.cache",
    "fusec.runtime.entries",
    "fusec.runtime.operands",
    "fusec.runtime.cpu",
    "fusec.runtime.cuda",
)
"""What shapes a kernel's code or how it is called: every dialect and pass, the
lowering/translation/JIT modules, and the runtime that passes the arguments."""


def fingerprint_sources() -> list[Path]:
    """The source files `source_fingerprint` hashes."""
    import importlib.util

    files: list[Path] = []
    for name in _FINGERPRINT_PACKAGES:
        spec = importlib.util.find_spec(name)
        for d in (spec.submodule_search_locations or []) if spec else []:
            files += sorted(Path(d).rglob("*.py"))
    for name in _FINGERPRINT_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            files.append(Path(spec.origin))
    return files


def fingerprint_versions() -> list[str]:
    """The versions a fingerprint covers besides the sources: fusec, xdsl,
    llvmlite, LLVM, and the host CPU kernels are tuned for."""
    import fusec
    import llvmlite.binding as llvm

    return [
        f"format {FORMAT_VERSION}",
        f"fusec {fusec.__version__}",
        f"xdsl {package_version('xdsl')}",
        f"llvmlite {package_version('llvmlite')}",
        f"llvm {llvm.llvm_version_info}",
        f"host {llvm.get_host_cpu_name()} {llvm.get_host_cpu_features().flatten()}",
    ]


def fingerprint_of(files: list[Path], versions: list[str]) -> str:
    """A digest of `versions` and of each file's name and contents."""
    h = hashlib.sha256()
    for part in versions:
        h.update(part.encode() + b"\0")
    for f in files:
        h.update(f.name.encode() + b"\0")
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"unreadable")
        h.update(b"\0")
    return h.hexdigest()[:32]


@functools.cache
def source_fingerprint() -> str:
    """Changes whenever anything that shapes generated code changes (the sources
    of `fingerprint_sources()` and `fingerprint_versions()`), so stale disk
    entries are never loaded after an upgrade or an edit."""
    return fingerprint_of(fingerprint_sources(), fingerprint_versions())


_source_fingerprint = source_fingerprint


def codegen_available() -> bool:
    """Whether the compiler installed its `KernelBuilder`."""
    return _kernel_builder is not None


# ---------------------------------------------------------------------- artifacts as data


def _signature_types() -> dict[str, type]:
    """The dataclasses a `KernelSignature` is made of (all of those defined next to
    it), by name: the only types an entry's header can name."""
    import fusec.runtime.kernel_signature as signatures

    return {
        name: obj
        for name, obj in vars(signatures).items()
        if isinstance(obj, type)
        and dataclasses.is_dataclass(obj)
        and obj.__module__ == signatures.__name__
        and name != "KernelArtifact"
    }


def to_json(value: Any) -> Any:
    """A signature as JSON data: dataclasses as {"$": name, field: ...}, tuples as lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {"$": type(value).__name__}
        for f in dataclasses.fields(value):
            out[f.name] = to_json(getattr(value, f.name))
        return out
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} in a cache entry")


def from_json(value: Any, types: dict[str, type] | None = None) -> Any:
    """`to_json`'s inverse; `CorruptEntry` for a type that is not a signature part."""
    types = _signature_types() if types is None else types
    if isinstance(value, dict):
        cls = types.get(value.get("$"))  # type: ignore[arg-type]
        if cls is None:
            raise CorruptEntry(f"unknown type {value.get('$')!r} in entry header")
        fields = {k: from_json(v, types) for k, v in value.items() if k != "$"}
        try:
            return cls(**fields)
        except TypeError as e:
            raise CorruptEntry(f"bad {cls.__name__} in entry header: {e}") from None
    if isinstance(value, list):
        return tuple(from_json(v, types) for v in value)
    return value


def artifact_header(key: str, fingerprint: str, artifact: Any) -> dict[str, Any]:
    """The header of a kernel entry: what it is for and how to call it."""
    return {
        "kind": "kernel",
        "key": key,
        "fingerprint": fingerprint,
        "name": artifact.name,
        "target": artifact.target,
        "signature": to_json(artifact.signature),
    }


def artifact_from_entry(header: dict[str, Any], payload: bytes) -> Any:
    """The `KernelArtifact` of a validated entry (its code is the payload)."""
    from fusec.runtime.kernel_signature import KernelArtifact, KernelSignature

    sig = from_json(header.get("signature"))
    name, target = header.get("name"), header.get("target")
    if not isinstance(sig, KernelSignature) or not isinstance(name, str):
        raise CorruptEntry("entry header has no kernel signature or name")
    if not isinstance(target, str):
        raise CorruptEntry("entry header has no target")
    return KernelArtifact(name, target, payload, sig)


def check_artifact(artifact: Any, group: GroupOp | None, target: str) -> None:
    """`CorruptEntry` unless a loaded artifact fits `group` on `target`: the
    kernel it names is defined in its code (else the JIT hands back a null
    function pointer), and the signature's inputs and results have the group's
    count and element types. (The name itself is the first builder's: groups of
    one canonical key share the entry under different SSA names.) Without a
    group, only the target and the code are checked."""
    want = artifact.name
    target = "cpu" if target == TILED_CPU else target  # a CPU kernel like any other
    if artifact.target != target:
        raise CorruptEntry(f"kernel is for {artifact.target}, expected {target}")
    from fusec.runtime.entry_checks import BadPayload, check_kernel

    try:
        check_kernel(want, target, artifact.code, artifact.signature)
    except BadPayload as e:
        raise CorruptEntry(str(e)) from None
    if group is None:
        return
    sig = artifact.signature
    types, n_results = kernel_builder().operand_types(group)
    inputs = tuple(_shape_free(t) for t in types)
    if tuple(_shape_free(str(t)) for t in sig.inputs) != inputs:
        raise CorruptEntry(f"signature inputs {sig.inputs} do not match the group's {inputs}")
    results = len(sig.outputs) - sum(len(ex.parts) for ex in sig.exits) + len(sig.exits)
    if results != n_results:
        raise CorruptEntry(f"signature has {results} results, the group {n_results}")


def tiled_key(key: str) -> str:
    """The cache key of the tiled variant (`TILED_CPU`) of the CPU kernel keyed
    `key`: derived from it, so a kernel loaded by key alone finds its variant."""
    return hashlib.sha256(f"{key}|{TILED_CPU}".encode()).hexdigest()


def _shape_free(type_text: str) -> tuple[str, int]:
    """(element type, rank) of `tensor<4x3xf32>` (("f32", 2)) or a scalar type
    (rank -1): what groups of one canonical key share, sizes aside."""
    m = re.fullmatch(r"tensor<(.*)>", type_text)
    if m is None:
        return type_text, -1
    parts = m.group(1).split("x")
    return parts[-1], len(parts) - 1


@dataclass
class CacheStats:
    kernels_compiled: int = 0
    memory_hits: int = 0
    disk_hits: int = 0
    disk_writes: int = 0
    corrupt_entries: int = 0
    build_failures: int = 0
    lock_timeouts: int = 0
    """Builds that gave up waiting for another process's lock (compiled without disk)."""
    stale_tmp_removed: int = 0


def _lock_timeout() -> float:
    return env.cache_lock_timeout()


@dataclass
class KernelCache:
    """Kernels in memory and on disk. `kernel_for(group)` is the only entry point
    the runtime uses; it returns None when no kernel can be built for the group."""

    directory: Path | None = None
    builder: Builder = _default_builder
    loader: Loader = _default_loader
    fingerprint: str | None = None
    stats: CacheStats = field(default_factory=CacheStats)
    lock_timeout: float = field(default_factory=_lock_timeout)
    """Seconds to wait for another process building the same kernel; then this
    process compiles it without the disk cache."""

    def __post_init__(self) -> None:
        # Weak: a kernel lives as long as a program uses it (`kernel_table`).
        self._memory: KernelTable = KernelTable()
        self._failed: dict[str, str] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._disk_checked = False
        self.disk_disabled: str | None = None
        """Why the disk cache is off (the directory was refused), or None."""
        self._secret: bytes | None = None
        """The MAC key of the directory's entries (`cache_dirs.secret`)."""
        if self.fingerprint is None:
            self.fingerprint = source_fingerprint()

    # ------------------------------------------------------------------ keys

    def key(self, group: GroupOp, target: str = "cpu") -> str:
        if target == TILED_CPU:
            return tiled_key(self.key(group))
        digest = kernel_builder().digest(group)
        parts = (digest, target, self.fingerprint, FORMAT_VERSION)
        return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()

    def path(self, key: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / "kernels" / key[:2] / f"{key}.bin"

    def _disk_path(self, key: str) -> Path | None:
        """`path(key)` when the directory is usable; the first call vets it
        (`private_directory`) and turns the disk cache off, with one warning, if
        it is not: kernels still compile, in memory only."""
        if self.directory is None:
            return None
        with self._lock:
            if not self._disk_checked:
                self._disk_checked = True
                why = cache_dirs.vet(self.directory) or cache_dirs.vet(self.directory / "kernels")
                if why is None:
                    try:
                        self._secret = cache_dirs.secret(self.directory)
                    except OSError as e:
                        why = str(e)
                        cache_dirs.refuse(self.directory, why)
                self.disk_disabled = why
            if self.disk_disabled is not None:
                return None
        return self.path(key)

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
        return self.keyed_kernel_for(group, target)[1]

    def keyed_kernel_for(self, group: GroupOp, target: str = "cpu") -> tuple[str, Any | None]:
        """(key, `kernel_for(group, target)`): the key finds the kernel again
        without the group (`kernel_by_key`), e.g. in a warm-started program."""
        key = self.key(group, target)
        return key, self._kernel_for(key, group, target)

    def kernel_by_key(self, key: str, target: str = "cpu") -> Any | None:
        """The kernel of `key` from memory or from its disk entry, or None: with
        no group at hand nothing is built, and the entry is checked for its key,
        fingerprint, target and code (not against a group's types)."""
        with self._lock:
            kernel = self._memory.get(key)
            if kernel is not None:
                self.stats.memory_hits += 1
                return kernel
            if key in self._failed:
                return None
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        path = self._disk_path(key)
        if path is None:
            return None
        with key_lock:
            with self._lock:
                kernel = self._memory.get(key)
            if kernel is None:
                # A bad entry is counted (and logged) by the compile that follows
                # this miss, which reads it again.
                kernel = self._read(path, key, None, target, count_corrupt=False)
            if kernel is not None:
                with self._lock:
                    kernel = self._memory.setdefault(key, kernel)
                if target == "cpu" and getattr(kernel, "tiled_variant", False) is None:
                    # No group at hand: a variant an earlier process built, else
                    # one built from the group text the entry keeps.
                    kernel.tiled_variant = functools.partial(self._variant_by_key, key)
            return kernel

    def _variant_by_key(self, key: str) -> Any | None:
        """The tiled variant of the CPU kernel keyed `key`, wanted by a warm-started
        program (kernels by key, no groups): from its disk entry if an earlier
        process built it, else built from the group text the kernel's entry
        keeps (`KernelBuilder.text`), or None when there is neither."""
        variant = self.kernel_by_key(tiled_key(key), TILED_CPU)
        if variant is not None:
            return variant
        path = self._disk_path(key)
        try:
            entry = None if path is None else read_entry(path, secret=self._secret)
        except CorruptEntry:
            entry = None
        text = None if entry is None else entry[0].get("group")
        group = None if not isinstance(text, str) else kernel_builder().parse(text)
        if group is None or self.key(group) != key:
            return None
        return self.kernel_for(group, TILED_CPU)

    def _kernel_for(self, key: str, group: GroupOp, target: str) -> Any | None:
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
            if target == "cpu" and getattr(kernel, "tiled_variant", False) is None:
                # Built on a launch that needs it (`fusec.runtime.cpu`): any group of
                # the kernel's key gives the same variant.
                kernel.tiled_variant = functools.partial(self.kernel_for, group, TILED_CPU)
            return kernel

    def failure(self, group: GroupOp, target: str = "cpu") -> str | None:
        """Why no kernel could be built for `group`, if that happened."""
        return self._failed.get(self.key(group, target))

    def _load_or_build(self, key: str, group: GroupOp, target: str) -> Any:
        path = self._disk_path(key)
        if path is None:
            return self._build(key, group, target, None)
        kernel = self._read(path, key, group, target)
        if kernel is not None:
            return kernel
        from fusec.runtime.file_lock import FileLock, LockTimeout

        lock = FileLock(str(path) + ".lock", timeout=self.lock_timeout)
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock.acquire()
        except LockTimeout:
            log.warning(
                "fusec: another process has held the cache lock %s.lock for over %.1fs "
                "($FUSEC_CACHE_LOCK_TIMEOUT); compiling without the disk cache",
                path,
                self.lock_timeout,
            )
            with self._lock:
                self.stats.lock_timeouts += 1
            return self._build(key, group, target, None)
        except OSError as e:
            log.warning("fusec: cannot lock cache entry %s (%s); compiling without it", path, e)
            return self._build(key, group, target, None)
        try:
            # Under the lock no live writer of this key can exist in this process
            # tree; what is left of killed ones goes.
            removed = remove_stale_tmp(path.parent, prefix=path.name + ".")
            if removed:
                log.info(
                    "fusec: removed %d stale temporary cache file(s) in %s", removed, path.parent
                )
                with self._lock:
                    self.stats.stale_tmp_removed += removed
            # Another process may have built it while we waited; a corrupt entry
            # seen twice is counted once.
            kernel = self._read(path, key, group, target, count_corrupt=False)
            if kernel is not None:
                return kernel
            return self._build(key, group, target, path)
        finally:
            lock.release()

    def _read(
        self, path: Path, key: str, group: GroupOp | None, target: str, count_corrupt: bool = True
    ) -> Any | None:
        """The kernel of the entry at `path`, or None (missing, or corrupt: any
        damage, another key or fingerprint, a kernel that does not fit `group`)."""
        try:
            entry = read_entry(
                path,
                expect={"kind": "kernel", "key": key, "fingerprint": self.fingerprint},
                secret=self._secret,
            )
            if entry is None:
                return None
            artifact = artifact_from_entry(*entry)
            check_artifact(artifact, group, target)
            kernel = self.loader(artifact)
        except OSError as e:
            log.warning("fusec: cannot read cache entry %s (%s); rebuilding", path, e)
            return None
        except Exception as e:  # noqa: BLE001 - a bad entry is rebuilt, never fatal
            if count_corrupt:
                log.warning("fusec: corrupt cache entry %s (%s); rebuilding", path, e)
                cache_log.info("refused kernel entry %s (%s); rebuilding", path, e)
                with self._lock:
                    self.stats.corrupt_entries += 1
            return None
        with self._lock:
            self.stats.disk_hits += 1
        touch(path)
        return kernel

    def _build(self, key: str, group: GroupOp, target: str, path: Path | None) -> Any:
        from fusec.runtime.kernel_signature import KernelArtifact

        artifact = self.builder(group, target)
        kernel = self.loader(artifact)
        with self._lock:
            self.stats.kernels_compiled += 1
        if path is not None and isinstance(artifact, KernelArtifact):
            assert self.fingerprint is not None
            header = artifact_header(key, self.fingerprint, artifact)
            if target == "cpu":
                header["group"] = kernel_builder().text(group)
            try:
                write_entry(path, header, artifact.code, self._secret)
                with self._lock:
                    self.stats.disk_writes += 1
                note_write(self.directory)
            except (OSError, TypeError) as e:
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
    cache_dirs.forget()
    if clear_disk:
        import shutil

        directory = old.directory if old is not None else default_cache_dir()
        if directory is not None:
            shutil.rmtree(directory / "kernels", ignore_errors=True)
