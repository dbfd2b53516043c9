"""Generated host code as functions with a file name, so tracebacks show its lines.

fusec writes parts of its host path as Python source (a specialization's fast
path, a host program's `run` and guards, a CPU kernel's launch) and runs it
with `exec`. Compiled as `<string>`, a traceback through such code ends in a
frame with no line to show. `define` compiles the source under a name of its
own, registers the lines in `linecache` (as Inductor's `PyCodeCache.load` and
`torch.fx` do), and logs the source on the `FUSEC_LOGS=host_code` channel:

    run = define("def run(args):\\n    (s0,) = args\\n    return [f0(s0)]", env, "run", "run")

    Traceback (most recent call last):
      ...
      File "<fusec-host run 3f1c9a2b7d04>", line 3, in run
        return [f0(s0)]

    [fusec.host_code] <fusec-host run 3f1c9a2b7d04>:
    def run(args):
        (s0,) = args
        return [f0(s0)]

The name is the kind of code and a hash of its source: the same source always
has the same name and shares one `linecache` entry and one code object (a model's
layers repeat their guards and programs, and `compile` was half the time of
making ViT-tiny's loaded programs again). An entry lives as long as a function
made from its source does, so recompiling does not grow the cache.
"""

from __future__ import annotations

import hashlib
import linecache
import logging
import threading
import weakref
from collections.abc import Callable
from types import CodeType
from typing import Any

log = logging.getLogger("fusec.host_code")

FILE_PREFIX = "<fusec-host "
"""How every generated file name begins (`fusec.source_lines` reads such frames
as fusec's own, never as the user's)."""

_lock = threading.Lock()
_live: dict[str, tuple[str, int, CodeType | None]] = {}
"""File name -> (its source, how many functions made from it are alive, its code
once compiled)."""


def define(source: str, env: dict[str, Any], name: str, kind: str) -> Callable[..., Any]:
    """Run `source` (which defines `name`) with `env` as its globals and return
    `env[name]`; `kind` says what the code is in its file name."""
    if not source.endswith("\n"):
        source += "\n"
    filename, code = _register(source, kind)
    try:
        if code is None:
            code = compile(source, filename, "exec")
            with _lock:
                held = _live.get(filename)
                if held is not None:
                    _live[filename] = (held[0], held[1], code)
        exec(code, env)  # noqa: S102 - fusec's own generated code
        fn = env[name]
        # A finalizer, not a count per `define`: the entry goes with the last
        # function that can raise through it.
        weakref.finalize(fn, _release, filename).atexit = False
    except BaseException:
        _release(filename)
        raise
    if log.isEnabledFor(logging.INFO):
        log.info("%s:\n%s", filename, source.rstrip("\n"))
    return fn


def _register(source: str, kind: str) -> tuple[str, CodeType | None]:
    """The file name for `source`, registered in `linecache` (once per source),
    and its code if a live function was compiled from it."""
    digest = hashlib.blake2b(source.encode(), digest_size=16).hexdigest()
    filename = f"{FILE_PREFIX}{kind} {digest[:12]}>"
    with _lock:
        held = _live.get(filename)
        if held is not None and held[0] != source:  # 48 bits collided: the full hash
            filename = f"{FILE_PREFIX}{kind} {digest}>"
            held = _live.get(filename)
        count, code = (held[1], held[2]) if held is not None else (0, None)
        _live[filename] = (source, count + 1, code)
        # Registered again even when held: `linecache.clearcache()` may have run.
        # An mtime of None marks an entry that `linecache.checkcache` keeps.
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return filename, code


def _release(filename: str) -> None:
    with _lock:
        held = _live.get(filename)
        if held is None:
            return
        source, count, code = held
        if count > 1:
            _live[filename] = (source, count - 1, code)
            return
        del _live[filename]
        linecache.cache.pop(filename, None)


def live_files() -> list[str]:
    """The file names of generated code some function still runs (for tests)."""
    with _lock:
        return list(_live)
