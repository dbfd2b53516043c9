"""`fusec.compile`: the entry point, which picks the route a graph takes.

    ExportedProgram      -> its flat ATen graph (`fusec.api.exported`)
    GraphModule, or what torch.fx.symbolic_trace traces
                         -> `fusec.api.compiled.CompiledFunction` (specializes per call)
    what it cannot trace -> captured through Dynamo (`fusec.api.captured`)

This module sits above the three so that none of them imports another's
route: `compiled` gets the Dynamo capture it needs for calls with None
arguments (`CompiledFunction.capture`) from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fusec.api.captured import capture, capture_variant
from fusec.api.compiled import CompileOptions, compile_traced
from fusec.api.exported import compile_exported, is_exported_program
from fusec.frontend.tracing import UnsupportedGraph, trace


def compile(graph: Any, example_inputs: Sequence[Any] | None = None, **options: Any) -> Any:
    """`fusec.compile(fn_or_module_or_graph_module, example_inputs=None, **options)`.

    A `torch.export.ExportedProgram` runs through `fusec.api.exported` (its lifted
    parameters read from the program's module); what `torch.fx.symbolic_trace`
    cannot trace (size-reading Python, loops over sizes, Hugging Face models) is
    captured through Dynamo with the same options (`fusec.api.captured`). Returns
    a callable with the signature of the graph's inputs. `example_inputs`,
    when given, compiles their specialization right away; otherwise (and for a
    Dynamo capture, which would have to run the function) the first call
    compiles. Options are the fields of `CompileOptions`.
    """
    opts = CompileOptions(**options)
    if is_exported_program(graph):
        return compile_exported(graph, example_inputs, compile, **options)
    try:
        gm = trace(graph)
    except UnsupportedGraph as e:
        return capture(graph, opts, str(e))
    return compile_traced(gm, graph, opts, example_inputs, capture=capture_variant)
