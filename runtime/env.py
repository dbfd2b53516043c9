"""fusec's environment variables, each read here and only here, with its type,
range and default.

A malformed or out-of-range value never turns fusion off or makes a wait
endless: it is named in one warning and replaced by the default.

    FUSEC_NUM_THREADS=abc  ->  fusec: ignoring FUSEC_NUM_THREADS='abc' (not an
                               integer); using the default 0
    FUSEC_CACHE_LOCK_TIMEOUT=nan  ->  ... (not a finite number); using the default 5.0

Readers are cheap (one `os.environ` lookup) and import nothing heavy: a warm
start reads several of them before it has imported xDSL or torch's compiler.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("fusec")

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def _bad(name: str, raw: str, why: str, default: object) -> None:
    """One warning per variable and value: these are read on every compile."""
    with _warned_lock:
        if (name, raw) in _warned:
            return
        _warned.add((name, raw))
    log.warning("fusec: ignoring %s=%r (%s); using the default %s", name, raw, why, default)


def _range_error(value: float, minimum: float | None, maximum: float | None) -> str | None:
    if minimum is not None and value < minimum:
        return f"below the minimum {minimum}"
    if maximum is not None and value > maximum:
        return f"above the maximum {maximum}"
    return None


def _number(
    name: str,
    default: Any,
    parse: Callable[[str], Any],
    what: str,
    minimum: float | None,
    maximum: float | None,
) -> Any:
    """`$name` parsed by `parse` (whose ValueError means "not `what`"), finite
    and in [minimum, maximum]; `default` when unset, empty or bad (with a warning)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = parse(raw.strip())
    except ValueError:
        _bad(name, raw, f"not {what}", default)
        return default
    if not math.isfinite(value):
        _bad(name, raw, "not a finite number", default)
        return default
    why = _range_error(value, minimum, maximum)
    if why is not None:
        _bad(name, raw, why, default)
        return default
    return value


def env_int(name: str, default: int, minimum: int | None = None, maximum: int | None = None) -> int:
    """`$name` as an integer in [minimum, maximum]; `default` when unset, empty
    or bad (a bad value is named in a warning)."""
    return _number(name, default, int, "an integer", minimum, maximum)


def env_float(
    name: str, default: float, minimum: float | None = None, maximum: float | None = None
) -> float:
    """`$name` as a finite number in [minimum, maximum]; `default` when unset,
    empty or bad (nan, inf and out-of-range values too, with a warning)."""
    return _number(name, default, float, "a number", minimum, maximum)


def env_bool(name: str, default: bool) -> bool:
    """`$name` as a switch (1/0, true/false, yes/no, on/off, any case);
    `default` when unset, empty or anything else (with a warning)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    word = raw.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    _bad(name, raw, "not one of 1/0, true/false, yes/no, on/off", "1" if default else "0")
    return default


def env_text(name: str) -> str | None:
    """`$name` as text, None when unset or empty."""
    raw = os.environ.get(name)
    return raw if raw else None


# ---------------------------------------------------------------------- the variables


def num_threads() -> int:
    """`FUSEC_NUM_THREADS`: threads the CPU executor uses (0: as many as PyTorch,
    `torch.get_num_threads()`)."""
    return env_int("FUSEC_NUM_THREADS", 0, minimum=0, maximum=4096)


def cpu_pool_mb() -> int | None:
    """`FUSEC_CPU_POOL_MB`: the CPU output pool's cap in MiB (0: no pool), None
    when unset (or bad): the pool picks its default from the machine's memory."""
    if env_text("FUSEC_CPU_POOL_MB") is None:
        return None
    value = env_int("FUSEC_CPU_POOL_MB", -1, minimum=0, maximum=1 << 30)
    return None if value < 0 else value


DEFAULT_MAX_ENTRY_BYTES = 256 << 20


def cache_max_entry_bytes() -> int:
    """`FUSEC_CACHE_MAX_ENTRY_BYTES`: cache files larger than this are not read."""
    return env_int("FUSEC_CACHE_MAX_ENTRY_BYTES", DEFAULT_MAX_ENTRY_BYTES, minimum=1 << 10)


DEFAULT_LOCK_TIMEOUT = 5.0


def cache_lock_timeout() -> float:
    """`FUSEC_CACHE_LOCK_TIMEOUT`: seconds to wait for another process's cache
    lock (0 to 3600: never endless)."""
    return env_float("FUSEC_CACHE_LOCK_TIMEOUT", DEFAULT_LOCK_TIMEOUT, minimum=0.0, maximum=3600.0)


DEFAULT_CACHE_MAX_MB = 1024


def cache_max_mb() -> int:
    """`FUSEC_CACHE_MAX_MB`: the disk cache's size cap in MiB, all kinds of
    entries together (least recently used entries go first)."""
    return env_int("FUSEC_CACHE_MAX_MB", DEFAULT_CACHE_MAX_MB, minimum=1)


def cache_dir() -> str | None:
    """`FUSEC_CACHE_DIR`: the cache directory, None for the user cache dir."""
    return env_text("FUSEC_CACHE_DIR")


def program_cache() -> bool:
    """`FUSEC_PROGRAM_CACHE`: the warm-start caches (programs, objects, hosts)."""
    return env_bool("FUSEC_PROGRAM_CACHE", True)


def native_parallel() -> bool:
    """`FUSEC_NATIVE_PARALLEL`: split kernels over OpenMP threads when available."""
    return env_bool("FUSEC_NATIVE_PARALLEL", True)


def logs() -> str | None:
    """`FUSEC_LOGS`: which logs to show (`fusec.set_logs`'s spec)."""
    return env_text("FUSEC_LOGS")


def traceback() -> bool:
    """`FUSEC_TRACEBACK`: fusec-opt shows an internal error's Python traceback."""
    return env_bool("FUSEC_TRACEBACK", False)
