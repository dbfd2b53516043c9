"""The warm-start caches: whole compiled programs and host machine code, on disk.

A second process that calls a graph it compiled before should not redo any of the
work: the kernel cache (`fusec.runtime.cache`) spares it code generation, this
module spares it the rest.

- Programs: the IR of a graph after the whole pipeline, keyed by the graph's fx
  code, the call's specialization, the pipeline and the compiler's fingerprint.
  A hit is parsed instead of running the pipeline again.
- Objects: the machine code MCJIT makes from a kernel's optimized LLVM IR, keyed
  by the IR and the host target (cpu name, features, LLVM version). A hit is
  loaded instead of running LLVM's code generator again.
- Hosts: a specialization's whole host program as data (`fusec.api.warm_start`),
  keyed by the graph and its specialization. A hit needs no IR at all: no
  import, no pipeline, no parse, no xDSL.
- Partitions: the values `fusec.api.partition` saves rather than recomputes,
  keyed by AOTAutograd's joint graph: a hit runs min-cut once instead of twice.

Entries are data, never pickles: the kernel cache's format
(`fusec.runtime.entries`: a JSON header with kind, key and fingerprint, then the
payload, IR text or an object file), one file per key, written atomically. A file
whose header, key, fingerprint, size or checksum is wrong, or that is not a
regular file, is ignored (a miss, logged on `FUSEC_LOGS=cache`) and overwritten
by the next store; so is one whose MAC is not this cache's (edited or planted)
or, for objects, whose payload is not an ELF object for this machine. A cache
directory (the root or `programs/`, `objects/`, `hosts/`, `partitions/`) owned by
someone else or writable by others is not used (one warning naming it).
`FUSEC_PROGRAM_CACHE=0` turns all of them off.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from fusec.runtime import cache_dirs, entries, env
from fusec.runtime.cache_eviction import note_write, touch

log = logging.getLogger("fusec")
cache_log = logging.getLogger("fusec.cache")

KINDS = ("program", "object", "host", "partition")


def enabled() -> bool:
    return env.program_cache()


def cache_dir() -> Path:
    """Where entries live: `programs/` and `objects/` under the kernel cache's
    directory (`$FUSEC_CACHE_DIR` or the user cache dir), read at each use so a
    changed environment variable takes effect."""
    return cache_dirs.default_cache_dir()


# The packages whose directories hold fusec's sources. In a source checkout they
# are four folders (pyproject's package-dir), in an installed wheel one `fusec/`
# tree holding the other three: sources are named by module, not by path, so
# both layouts hash the same names.
_SOURCE_PACKAGES = ("fusec", "fusec.dialects", "fusec.passes", "fusec.runtime")


def sources() -> dict[str, Path]:
    """Every module of the installed fusec package, subpackages included, by
    dotted name: what `fingerprint` hashes. Found through the import system, not
    relative to `fusec/__init__.py`, so a wheel's single `fusec/` tree and a
    checkout's package-dir folders are both covered."""
    import importlib.util

    found: dict[str, Path] = {}
    for package in _SOURCE_PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for path in sorted(Path(folder).rglob("*.py")):
                parts = path.relative_to(folder).with_suffix("").parts
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                found.setdefault(".".join((package, *parts)), path)
    return dict(sorted(found.items()))


@cache
def fingerprint() -> str:
    """Changes with any source that shapes compiled programs or machine code:
    every module of the fusec package, and the versions of xdsl, llvmlite, torch."""
    h = hashlib.sha256()
    for name, path in sources().items():
        h.update(name.encode())
        h.update(path.read_bytes())
    for dist in ("xdsl", "llvmlite", "torch"):
        h.update(f"{dist}={package_version(dist)}".encode())
    return h.hexdigest()


def package_version(dist: str) -> str:
    """The version of an installed package that is also a module of that name:
    its `__version__` when it is imported and has one, else the version in the
    name of its `.dist-info` directory next to it, else its distribution metadata,
    else "unknown". Nothing is imported (a warm start must not import xDSL) and
    `importlib.metadata` is the last resort: it scans every distribution on
    sys.path, tens of ms on a warm start's path."""
    import importlib.util
    import sys

    v = getattr(sys.modules.get(dist), "__version__", None)
    if isinstance(v, str):
        return v
    try:
        spec = importlib.util.find_spec(dist)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin is not None:
        site = Path(spec.origin).parent.parent
        found = sorted(site.glob(f"{dist}-*.dist-info"))
        if len(found) == 1:
            return found[0].name[len(dist) + 1 : -len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def digest(*parts: str | bytes) -> str:
    """sha256 over the parts, each length-prefixed (no two part lists collide)."""
    h = hashlib.sha256()
    for p in parts:
        b = p.encode() if isinstance(p, str) else p
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
    return h.hexdigest()


def entry_path(kind: str, key: str) -> Path:
    assert kind in KINDS
    return cache_dir() / f"{kind}s" / key[:2] / f"{key}.bin"


def encode(kind: str, key: str, payload: bytes, **extra: Any) -> bytes:
    """The bytes of an entry (`fusec.runtime.entries` format, kind/key/fingerprint
    in its header, MAC'd with the cache directory's secret)."""
    header = {"kind": kind, "key": key, "fingerprint": fingerprint(), **extra}
    return entries.encode_entry(header, payload, _secret_for(kind))


def _expect(kind: str, key: str) -> dict[str, str]:
    return {"kind": kind, "key": key, "fingerprint": fingerprint()}


def decode(kind: str, key: str, data: bytes) -> tuple[dict[str, Any], bytes] | None:
    """(header, payload) of a well-formed entry of `kind` for `key`, else None."""
    try:
        return entries.decode_entry(data, _expect(kind, key), _secret_for(kind))
    except (entries.CorruptEntry, OSError):
        return None


def _secret_for(kind: str) -> bytes | None:
    """The cache secret when the root and `kind`'s directory may be used (each
    vetted once, a refusal warned about once), else None: no disk for `kind`."""
    root = cache_dir()
    if cache_dirs.vet(root) or cache_dirs.vet(root / f"{kind}s"):
        return None
    try:
        return cache_dirs.secret(root)
    except OSError as e:
        cache_dirs.refuse(root, str(e))
        return None


def load(kind: str, key: str) -> tuple[dict[str, Any], bytes] | None:
    """The entry of `kind` for `key`, or None (absent, unreadable or malformed)."""
    secret = _secret_for(kind) if enabled() else None
    if secret is None:
        return None
    path = entry_path(kind, key)
    try:
        found = entries.read_entry(path, _expect(kind, key), secret=secret)
    except (OSError, entries.CorruptEntry) as e:
        refused(kind, path, e)
        return None
    if found is not None:
        touch(path)
    return found


def refused(kind: str, path: Path, why: object) -> None:
    """Logs (`FUSEC_LOGS=cache`) an entry that is not used: a miss, rebuilt."""
    cache_log.info("refused %s entry %s (%s); rebuilding", kind, path, why)


def store(kind: str, key: str, payload: bytes, **extra: Any) -> None:
    """Writes the entry (atomically); failures to write only cost a later rebuild."""
    secret = _secret_for(kind) if enabled() else None
    if secret is None:
        return
    path = entry_path(kind, key)
    try:
        entries.write_entry(
            path, {"kind": kind, "key": key, "fingerprint": fingerprint(), **extra}, payload, secret
        )
        note_write(cache_dir())
    except OSError as e:
        log.debug("fusec: could not write %s cache entry %s: %s", kind, path, e)


# ---------------------------------------------------------------------- programs


def program_key(gm: Any, args: Any, pipeline: str, name: str) -> str | None:
    """The key of a graph's compiled program for these exact inputs: the fx code
    with what each called submodule and function is, every module's training flag, every argument's dtype, device, shape, strides and autograd flag (scalars by
    type and value), the module's parameters and buffers the same way, the
    pipeline and the compiler's fingerprint. None when an argument is neither a
    tensor nor a plain scalar (nothing stable to key it by)."""
    return graph_key(gm, args, (fingerprint(), pipeline, name))


def describe_target(target: Any) -> str:
    """What an fx node calls, by name: an ATen overload as `aten.mm.default` (its
    qualified name, `aten::mm`, leaves out the overload), a function by module
    and qualified name."""
    import torch

    if isinstance(target, str | torch._ops.OpOverload):
        return str(target)
    return f"{getattr(target, '__module__', '')}.{getattr(target, '__qualname__', target)!s}"


def describe_value(v: Any, exact: bool = True) -> str | None:
    """How one argument keys a cached program: a tensor by dtype, device, autograd
    flag and its exact shape and strides (or, `exact=False`, its size-1 pattern and
    contiguity); a plain scalar by type and value; None for anything else."""
    import torch

    if isinstance(v, torch.Tensor):
        if v.is_sparse or v.layout != torch.strided or v.is_nested:
            return None
        shape = tuple(v.shape) if exact else tuple(s == 1 for s in v.shape)
        layout = v.stride() if exact else v.is_contiguous()
        described = f"T{v.dtype}|{v.device}|{shape}|{layout}|{v.requires_grad}"
        if v.ndim == 0 and v.dtype == torch.float64 and v.device.type == "cpu":
            # A Python float Dynamo passes as a tensor: a program may bake its
            # value in (`fusec.frontend.size_folding.fold_float_argument`).
            try:
                described += f"|={v.item()!r}"
            except Exception:  # noqa: BLE001 - a fake or meta tensor has no value to key by
                return None
        return described
    if type(v) in (bool, int, float):
        return f"{type(v).__name__}:{v!r}"
    if v is None:
        return "None"
    return None


def graph_key(
    gm: Any,
    args: Any,
    head: tuple[str, ...],
    exact_args: bool = True,
    placeholder_shapes: bool = False,
) -> str | None:
    """The digest of `head`, `gm`'s code, the grad mode, the default dtype, its modules' training
    flags, what each called submodule and function is, the arguments (`describe_value`, exact or not) and the
    parameters and buffers (exact); with `placeholder_shapes`, also the sizes
    Dynamo recorded for the placeholders. None when something has no stable key."""
    import torch

    # The default dtype: factory calls without a dtype (`torch.ones(3)`) follow it.
    parts = [*head, gm.code, str(torch.is_grad_enabled()), str(torch.get_default_dtype())]
    # A leaf module's `training` flag is not in the code (`self.bn(x)` reads the
    # same in train and eval mode) but decides the program (batch statistics or
    # running ones): every module's flag is part of the key.
    parts.append("".join("t" if m.training else "e" for m in gm.modules()))
    # The code names submodules and functions, not what they are: two modules
    # whose `self.act` is a GELU and a ReLU print the same code.
    for node in gm.graph.nodes:
        if node.op == "call_module":
            parts.append(f"{node.target}={gm.get_submodule(node.target)!r}")
        elif node.op == "call_function":
            parts.append(describe_target(node.target))
        elif node.op == "placeholder" and placeholder_shapes:
            recorded = node.meta.get("val", node.meta.get("example_value"))
            parts.append(str(getattr(recorded, "shape", type(recorded).__name__)))
    for a in args:
        d = describe_value(a, exact_args)
        if d is None:
            return None
        parts.append(d)
    for pname, t in (*gm.named_parameters(), *gm.named_buffers()):
        d = describe_value(t)
        if d is None:
            return None
        parts.append(f"{pname}={d}")
    return digest(*parts)


def load_program(key: str, parse: Callable[[str], Any]) -> Any | None:
    """The cached module of `key`, read by `parse` (the compiler's parser:
    `fusec.codegen.ir_text.parse_module`), or None (a miss, or text that no
    longer parses: treated as a miss). It was verified before it was stored and
    its checksum holds, so it is not verified again (a quarter of the load time)."""
    entry = load("program", key)
    if entry is None:
        return None
    try:
        module = parse(entry[1].decode())
    except Exception as e:  # noqa: BLE001 - any parse failure is a miss; the pipeline reruns
        log.debug("fusec: cached program %s does not parse: %s", key, e)
        return None
    return module


def store_program(key: str, text: str) -> None:
    """Stores a module's text (`str(module)`) as the program of `key`."""
    store("program", key, text.encode())
