"""`fusec.explain`: compile a function, run it once, and report what fused.

    report = fusec.explain(model, x, h)                  # fusec.compile, one call
    report = fusec.explain(model, x, h, backend="torch.compile")   # every Dynamo graph
    report = fusec.explain(model, x, h, profile=True)    # + each step's time

The report itself (`fusec.observability.explanation.Report`) is made from what
the passes and the runtime recorded; this module only drives the compile and
the call, which is why it sits in the API layer above observability.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fusec.api.captured import CapturedFunction
from fusec.api.compiled import CompiledFunction
from fusec.api.entry import compile as fusec_compile
from fusec.observability.explanation import GraphReport, Report, graph_report
from fusec.observability.profiling import Unprofiled, profile_graph


def explain(
    fn_or_module: Any,
    *example_inputs: Any,
    backend: str = "fusec",
    profile: bool = False,
    runs: int = 20,
    **options: Any,
) -> Report:
    """Compile `fn_or_module`, run it once on `example_inputs`, and report what fused.

    `backend="fusec"` (default) uses `fusec.compile(fn_or_module, **options)`;
    `backend="torch.compile"` uses `torch.compile(fn_or_module, backend="fusec")`
    and reports every graph Dynamo handed over. A `CompiledFunction` (or a list of
    them, e.g. `fusec.dynamo_graphs()`) is reported as it stands, without a call
    (with `profile=True` it is called on `example_inputs`).

    `profile=True` then runs the graph `runs` more times and reports the time of
    each fused kernel and each op run through PyTorch, the host time between
    them and the totals (`report.profiles`; a column in the text and the page).
    """
    if profile and backend != "fusec":
        raise ValueError(
            "fusec.explain(profile=True) profiles a fusec.compile graph: use "
            "backend='fusec' (Dynamo's graphs are called by Dynamo, not by explain)"
        )
    if isinstance(fn_or_module, CapturedFunction):
        if profile:
            fn_or_module(*example_inputs)
        return _captured_report(fn_or_module, profile)
    if isinstance(fn_or_module, CompiledFunction):
        if profile:
            fn_or_module(*example_inputs)
            return Report([_profiled(fn_or_module, example_inputs, runs)])
        return Report([graph_report(fn_or_module)])
    if isinstance(fn_or_module, Sequence) and all(
        isinstance(f, CompiledFunction) for f in fn_or_module
    ):
        if profile:
            raise ValueError("fusec.explain(profile=True) takes one compiled function")
        return Report([graph_report(f) for f in fn_or_module])
    options.setdefault("program_cache", False)  # the fuse pass must run for its reasons
    if backend == "fusec":
        compiled = fusec_compile(fn_or_module, **options)
        compiled(*example_inputs)
        if isinstance(compiled, CapturedFunction):
            return _captured_report(compiled, profile)
        if profile:
            return Report([_profiled(compiled, example_inputs, runs)])
        return Report([graph_report(compiled)])
    if backend in ("torch.compile", "dynamo"):
        import torch
        from fusec.api.backend import compile_graph

        reports: list[Callable[[], list[GraphReport]]] = []

        def recording(gm: Any, inputs: Sequence[Any]) -> Any:
            call, fn = compile_graph(gm, inputs, options)
            aot = getattr(call, "fusec_graphs", None)
            if fn is not None:
                reports.append(lambda: [graph_report(fn)])
            elif aot is not None:
                # Through AOTAutograd: its forward (and, once run, backward) graphs,
                # compiled when AOTAutograd hands them over, so read after the call.
                reports.append(lambda: [graph_report(g.function) for g in aot])
            else:
                why = "fusec failed on this graph (the log says why); it runs eagerly"
                reports.append(lambda: [GraphReport(type(gm).__name__, [], eager_reason=why)])
            return call

        torch.compile(fn_or_module, backend=recording)(*example_inputs)
        return Report([g for r in reports for g in r()])
    raise ValueError(f"unknown backend {backend!r}: use 'fusec' or 'torch.compile'")


def _profiled(fn: CompiledFunction, inputs: Sequence[Any], runs: int) -> GraphReport:
    """`fn`'s report with its profile on `inputs` (`fn` was just called on them)."""
    report = graph_report(fn)
    try:
        report.profile = profile_graph(fn, inputs, report, runs)
    except Unprofiled as e:  # an eager call: the report says why, and that
        report.unprofiled = str(e)
    return report


def _captured_report(fn: CapturedFunction, profile: bool) -> Report:
    """The report of a function Dynamo captured (`fusec.api.captured`): one graph
    report per graph. Not profiled: its graphs' inputs are Dynamo's, which
    `explain` does not see."""
    report = fn.explain()
    if profile:
        for graph in report.graphs:
            graph.unprofiled = (
                "captured by Dynamo (torch.fx cannot trace it), whose graph inputs explain "
                "does not see: run the call under torch.profiler, where each fused kernel is "
                "a named event"
            )
    return report
