"""`FUSEC_LOGS`: fusec's log channels, in the style of `TORCH_LOGS`.

    FUSEC_LOGS=fusion,guards python train.py       # or FUSEC_LOGS=all
    fusec.set_logs(fusion=True, kernels=True)      # the same from Python
    fusec.set_logs()                               # all off again

Channels (each a `logging` logger named `fusec.<channel>`):

- `fusion`: each group formed (its ops and the user's lines) and each op left
  outside a group with the reason the `fuse` pass recorded;
- `guards`: a group's guard failing on a call (which input, why), so its ops ran
  unfused;
- `recompiles`: a new specialization compiled and what about the inputs made it
  new; the `max_specializations` limit reached;
- `kernels`: each group's kernel (canonical key, built or found in the cache, or
  why there is none) and the kernels a call launches;
- `cache`: kernel cache lookups (memory hit, disk hit, miss) and the counters;
- `host_code`: the source of each piece of generated host code (fast path,
  host program, guard, CPU launch) under the file name tracebacks show for it
  (`fusec.runtime.host_code`). Like Inductor's `output_code`, it is long and
  `all` leaves it out: name it.

Lines go to stderr as `[fusec.fusion] model.py:12 aten.mm not fused: ...`. A
channel that is on logs at INFO; `+fusion` logs DEBUG too.
"""

from __future__ import annotations

import logging
import sys

CHANNELS = ("fusion", "guards", "recompiles", "kernels", "cache", "host_code")
NAMED_ONLY = ("host_code",)
"""Channels `all` leaves out: they print whole sources, not lines."""

fusion = logging.getLogger("fusec.fusion")
guards = logging.getLogger("fusec.guards")
recompiles = logging.getLogger("fusec.recompiles")
kernels = logging.getLogger("fusec.kernels")
cache = logging.getLogger("fusec.cache")
host_code = logging.getLogger("fusec.host_code")


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the current `sys.stderr` (which tests and notebooks replace)."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter("[%(name)s] %(message)s"))

    @property  # type: ignore[override]
    def stream(self) -> object:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


_handler = _StderrHandler()


def set_logs(spec: str | None = None, **channels: bool | str) -> None:
    """Turn channels on or off: `set_logs(fusion=True, guards=True)`, or a
    `FUSEC_LOGS` string, `set_logs("fusion,+kernels")`; channels not named go off.
    A value of "debug" (or a `+` prefix) also logs DEBUG lines."""
    wanted: dict[str, bool | str] = {}
    if spec:
        for item in (s.strip() for s in spec.split(",")):
            if not item:
                continue
            debug = item.startswith("+")
            name = item.lstrip("+")
            names = [c for c in CHANNELS if c not in NAMED_ONLY] if name == "all" else [name]
            for n in names:
                wanted[n] = "debug" if debug else True
    wanted.update(channels)
    unknown = sorted(set(wanted) - set(CHANNELS))
    if unknown:
        raise ValueError(
            f"unknown fusec log channel(s) {', '.join(unknown)}; known: {', '.join(CHANNELS)}, all"
        )
    for name in CHANNELS:
        logger = logging.getLogger(f"fusec.{name}")
        on = wanted.get(name, False)
        if on:
            logger.setLevel(logging.DEBUG if on == "debug" else logging.INFO)
            if _handler not in logger.handlers:
                logger.addHandler(_handler)
            logger.propagate = False
        else:
            logger.setLevel(logging.NOTSET)
            if _handler in logger.handlers:
                logger.removeHandler(_handler)
            logger.propagate = True


def from_environment() -> None:
    """Apply `FUSEC_LOGS` (called once, when `fusec.compile` is first imported)."""
    from fusec.runtime import env

    spec = env.logs()
    if spec:
        try:
            set_logs(spec)
        except ValueError as e:
            print(f"fusec: FUSEC_LOGS: {e}", file=sys.stderr)


from_environment()
