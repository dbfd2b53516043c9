"""`fusec.compile(exported_program)`: run a `torch.export.ExportedProgram`.

An ExportedProgram is an ATen-level graph whose parameters, buffers and constants
are lifted to inputs (its `graph_signature` says which), with pytree specs for the
caller's arguments and results. `ExportedProgram.module()` puts the lifted values
back as module attributes (read with `get_attr`) and buffer mutations back as
in-place ops, which is the form fusec's importer reads; fusec then runs that graph
over flat inputs and rebuilds the caller's structure itself:

    ep = torch.export.export(model, (x,))
    f = fusec.compile(ep)          # ExportedFunction
    f(x)                           # == ep.module()(x), the pointwise work fused

Parameters and buffers are read from the module each call, so updating them
(`ep.module()`-style state) is seen; a buffer the program mutates is written in
place, as eager does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from torch.utils import _pytree as pytree


def is_exported_program(graph: Any) -> bool:
    return isinstance(graph, torch.export.ExportedProgram)


def flat_graph_module(ep: torch.export.ExportedProgram) -> torch.fx.GraphModule:
    """`ep.module()` as a plain GraphModule over flat inputs returning a flat tuple
    (the pytree handling stays with the caller), parameters as attributes."""
    unlifted = ep.module()
    graph = unlifted.graph
    graph.set_codegen(torch.fx.graph.CodeGen())
    gm = torch.fx.GraphModule(unlifted, graph, class_name="ExportedGraph")
    # `output` may hold a single value; fusec's flat convention is a tuple.
    out = next(n for n in gm.graph.nodes if n.op == "output")
    if not isinstance(out.args[0], tuple | list):
        out.args = ((out.args[0],),)
    gm.recompile()
    return gm


class ExportedFunction:
    """A compiled ExportedProgram: flattens the caller's arguments by the program's
    input spec, runs the fused graph, and rebuilds its results by the output spec."""

    def __init__(self, ep: torch.export.ExportedProgram, compiled: Any):
        self.exported_program = ep
        self.compiled = compiled
        self.in_spec = ep.call_spec.in_spec
        self.out_spec = ep.call_spec.out_spec

    def flatten(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        flat, spec = pytree.tree_flatten((tuple(args), kwargs))
        if self.in_spec is not None and spec != self.in_spec:
            raise TypeError(
                f"arguments do not match the exported program's inputs: got {spec}, "
                f"expected {self.in_spec}"
            )
        return flat

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        flat = self.flatten(args, kwargs)
        out = self.compiled(*flat)
        if self.out_spec is None:
            return out
        return pytree.tree_unflatten(list(out), self.out_spec)

    def __getattr__(self, name: str) -> Any:
        # launches_per_call, specializations, ir(), last: those of the compiled graph
        return getattr(self.__dict__["compiled"], name)


def compile_exported(
    ep: torch.export.ExportedProgram,
    example_inputs: Any,
    compile: Callable[..., Any],
    **options: Any,
) -> Any:
    """`fusec.compile` of an ExportedProgram (see the module docstring); `compile`
    (`fusec.api.entry.compile`, which calls this) compiles its flat graph."""
    gm = flat_graph_module(ep)
    examples = None
    if example_inputs is not None:
        examples = pytree.tree_flatten((tuple(example_inputs), {}))[0]
    return ExportedFunction(ep, compile(gm, examples, **options))


def import_exported(ep: torch.export.ExportedProgram, example_inputs: Any = None) -> Any:
    """The `aten`-dialect module of an ExportedProgram; `example_inputs` default to
    the program's own example inputs."""
    from fusec.frontend.importer import import_fx

    if example_inputs is None:
        if ep.example_inputs is None:
            raise ValueError("the exported program has no example inputs; pass some")
        args, kwargs = ep.example_inputs
    else:
        args, kwargs = tuple(example_inputs), {}
    flat = pytree.tree_flatten((tuple(args), kwargs))[0]
    return import_fx(flat_graph_module(ep), flat, "forward").module
