"""The options of `fusec.compile` and the error its strict mode raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CompileOptions:
    """Options of `fusec.compile` (keyword arguments of the same names)."""

    max_specializations: int = 8
    pipeline: str | None = None
    """Pass pipeline to run after import; None is `COMPILE_PIPELINE` with guards
    for the inputs' device."""
    target: str = "cpu"
    use_kernels: bool = True
    """False runs every fused group through PyTorch (for tests and debugging)."""
    cache: Any = None
    """A `KernelCache`; None is the process-wide one."""
    cuda_graphs: bool = False
    """Capture each specialization's launches in a CUDA graph and replay it
    (`fusec.runtime.cudagraphs`); ineligible calls run without one."""
    strict: bool = False
    """Raise `FusionError`, naming the op and its source line, when an op that could
    have fused did not (argument limit, a write that may alias, a group without a
    kernel) or the graph would run eagerly or, past `max_specializations`, on a
    guarded program whose guards may fail; barriers do not count."""
    program_cache: bool = True
    """Reuse the whole compiled program from the on-disk warm-start cache
    (`fusec.runtime.program_cache`; `FUSEC_PROGRAM_CACHE=0` turns it off for all).
    Off under `strict` and in `fusec.explain`, which need the `fuse` pass's own
    reasons, and a cached program skips that pass."""


class FusionError(RuntimeError):
    """`strict=True`: an op that could have fused did not (see `CompileOptions.strict`)."""
