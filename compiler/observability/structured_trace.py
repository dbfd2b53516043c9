"""fusec's graphs and IR in PyTorch's structured trace (`TORCH_TRACE=dir`), so
`tlparse` shows them beside Dynamo's own artifacts, under the same compile id
for a graph `torch.compile(backend="fusec")` handed over:

    fusec_imported_ir      the `aten` IR as imported, before any pass
    fusec_fused_ir         the IR after the pipeline: groups, guards
    fusec_kernels          per fused kernel, in launch order: its profiler event
                           name, ops, canonical key and how it was had

    $ TORCH_TRACE=/tmp/trace python train.py && tlparse /tmp/trace/*.log
    -> tl_out/-_0_0_0/fusec_fused_ir_5.txt, fusec_kernels_6.json, ...

Nothing is printed unless a trace is written: `enabled()` reads whether the
trace logger has a handler that writes (what `trace_structured` itself tests),
and the imported IR, which the pipeline rewrites in place, is printed only
then. A structured trace also turns warm starts off, as the `FUSEC_LOGS`
channels that read the IR do: a warm start has no IR to show.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torch._logging import trace_structured
from torch._logging._internal import LazyTraceHandler, trace_log


def enabled() -> bool:
    """Whether a structured trace is written (`TORCH_TRACE`, or
    `TORCH_COMPILE_DEBUG=1`): torch's trace handler has a directory. Other
    handlers on the trace logger do not count: torch installs its handler in
    every process, and with no directory it removes itself at the first event;
    pytest's log capture adds its own to every logger."""
    return any(
        isinstance(h, LazyTraceHandler) and h.root_dir is not None for h in trace_log.handlers
    )


def artifact(name: str, payload: Callable[[], Any], compile_id: Any = None) -> None:
    """One artifact: text (a `str` payload) or JSON (any other)."""

    def metadata() -> dict[str, str]:
        return {"name": name, "encoding": "string" if isinstance(text, str) else "json"}

    text = payload()
    trace_structured(
        "artifact",
        metadata_fn=metadata,
        payload_fn=lambda: text,
        compile_id=compile_id,
        expect_trace_id=False,  # `fusec.compile` has none: no stack either
    )


def kernel_list(program: Any, records: dict[Any, Any]) -> list[dict[str, Any]]:
    """The `fusec_kernels` payload: each kernel step of `program` (launch order,
    as its profiler events are numbered), with the lookup `records` noted for
    its group (`explanation.KernelRecord`)."""
    from fusec.runtime.profiler_events import event_name

    out = []
    for i, step in enumerate(program.launch_steps()):
        group = step.recipe[1] if step.recipe else None
        key = program.group_key(group) if program.group_key and group is not None else None
        record = records.get(group)
        out.append(
            {
                "event": event_name(step.name, i),
                "ops": step.name,
                "group_key": key,
                "lookup": getattr(record, "status", None),
                "target": getattr(record, "target", None),
            }
        )
    return out
