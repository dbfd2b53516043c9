"""The code of the methods `@dataclass` writes for xDSL's and fusec's classes,
compiled once per installation rather than once per process.

`@dataclass` writes each method it adds to a class (`__init__`, `__repr__`,
`__eq__`, `__hash__`, a frozen class's `__setattr__`/`__delattr__`) as Python
source and `exec`s it. Importing what a compile needs (xDSL's builtin, arith,
math, memref, scf, vector and llvm dialects, its passes, fusec's aten dialect
with about 300 ops) writes about 1600 such methods, 881 distinct sources, and
compiling them was about 130 ms of the cold first call of the LSTM tail
(530 ms): more than xDSL's own work to define those classes.

`install()` (run by `import fusec`) gives the `dataclasses` module an `exec`
of its own (a module global, which its functions find before the builtin).
For a class defined in an `xdsl` or `fusec` module it compiles a source once
per process, and at exit the code objects are written beside fusec's own
bytecode (`__pycache__/dataclass-code.<cache tag>.bin`, headed by the
interpreter's bytecode magic number), as Python keeps a module's bytecode; the
next process loads them (about 4 ms) instead of compiling. Every other class's
methods are compiled as before, and the file is not written where Python
writes no bytecode (`PYTHONDONTWRITEBYTECODE`).

    @dataclass(frozen=True)             # in module xdsl.dialects.builtin
    class IntAttr(...): ...             # __init__, __eq__, ...: cached code objects

A cached code object is what `compile(source, "<string>", "exec")` returns,
keyed by the whole source text: `exec`ing it is `exec`ing that source, so the
methods are the same. A file that is unreadable, of another interpreter or
corrupt is ignored and replaced.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import marshal
import os
import sys
import threading
from types import CodeType
from typing import Any

_CACHED_PACKAGES = frozenset({"xdsl", "fusec"})
"""Packages whose classes' methods are cached."""

_HEADER = importlib.util.MAGIC_NUMBER + b"fusec dataclass code\n"

MAX_ENTRIES = 16384
"""Sources a file keeps at most; past it, only the ones the writing process used."""

_lock = threading.Lock()
_codes: dict[str, CodeType] | None = None
_used: set[str] = set()
_compiled = 0


def file_path() -> str | None:
    """Where the code objects are kept: fusec's `__pycache__` (or its place
    under `sys.pycache_prefix`), or None where Python has no cache tag."""
    if sys.implementation.cache_tag is None:
        return None
    package = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
    pycache = os.path.dirname(importlib.util.cache_from_source(package))
    return os.path.join(pycache, f"dataclass-code.{sys.implementation.cache_tag}.bin")


def read(path: str | None) -> dict[str, CodeType]:
    """The code objects in the file at `path`; empty when it is missing,
    unreadable, of another interpreter or not a table of code objects."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if not data.startswith(_HEADER):
            return {}
        table = marshal.loads(data[len(_HEADER) :])
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict) or not all(
        type(k) is str and type(v) is CodeType for k, v in table.items()
    ):
        return {}
    return table


def write(path: str | None) -> bool:
    """Writes this process's code objects, merged with the file's own, to
    `path` (atomically: a reader sees the old file or the new one); whether it
    did. Nothing to write (no source compiled here) or an unwritable place
    writes nothing."""
    if path is None or not _compiled or _codes is None:
        return False
    table = {**read(path), **_codes}
    if len(table) > MAX_ENTRIES:
        table = {k: v for k, v in _codes.items() if k in _used}
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(_HEADER + marshal.dumps(table))
        os.replace(tmp, path)
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False
    return True


def _table() -> dict[str, CodeType]:
    global _codes
    if _codes is None:
        with _lock:
            if _codes is None:
                _codes = read(file_path())
    return _codes


def _exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """`exec`, with the compiled code of a cached module's source kept."""
    global _compiled
    if globals is None:  # as the builtin: the caller's namespaces
        frame = sys._getframe(1)
        globals = frame.f_globals
        if locals is None:
            locals = frame.f_locals
    module = globals.get("__name__")
    if type(source) is str and type(module) is str and module.partition(".")[0] in _CACHED_PACKAGES:
        codes = _table()
        code = codes.get(source)
        if code is None:
            code = compile(source, "<string>", "exec")
            codes[source] = code
            _compiled += 1
        _used.add(source)
        source = code
    exec(source, globals, locals)


def _write_at_exit() -> None:
    if not sys.dont_write_bytecode:
        write(file_path())


def install() -> None:
    """Caches the code of dataclass methods of xDSL's and fusec's classes
    defined from now on (idempotent; leaves a `dataclasses.exec` someone else
    set alone)."""
    if "exec" in vars(dataclasses):
        return
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(_write_at_exit)
