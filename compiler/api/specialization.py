"""One compiled specialization of a `CompiledFunction`: its host program,
how to gather its inputs from a call's arguments and rebuild the outputs, and
what `fusec.explain` reports about it."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fusec.frontend.graph_values import Const, Ret
from fusec.runtime.program import HostProgram

if TYPE_CHECKING:
    from fusec.api.warm_start import GraphFacts
    from fusec.frontend.importer import ImportedGraph


def fill_outputs(template: Any, outs: Sequence[Any]) -> Any:
    if isinstance(template, Ret):
        return outs[template.index]
    if isinstance(template, Const):
        return template.value
    if isinstance(template, tuple | list):
        return type(template)(fill_outputs(t, outs) for t in template)
    if isinstance(template, dict):
        return {k: fill_outputs(v, outs) for k, v in template.items()}
    return template


@dataclass
class Specialization:
    """One compiled specialization: how to gather inputs, run, and rebuild outputs."""

    program: HostProgram | None
    """None runs the graph eagerly."""
    getters: tuple[Callable[[Sequence[Any]], Any], ...] = ()
    outputs: Any = None
    imported: ImportedGraph | None = None
    reason: str = ""
    compile_seconds: float = 0.0
    module_text: Callable[[], str] = field(default=lambda: "")
    why: str = ""
    """Why this specialization was made (first call, which input changed how)."""
    inputs: str = ""
    """The inputs it is for, e.g. "f32[n,1] cpu, f32[n] cpu"."""
    remarks: dict[Any, Any] = field(default_factory=dict)
    """The `fuse` pass's remark per op left outside a group (`fusion_remarks`)."""
    kernels: dict[Any, Any] = field(default_factory=dict)
    """Per group op, the `explanation.KernelRecord` of its kernel lookup."""
    unconfirmed: bool = False
    """Compiling failed unexpectedly: kept only once eager has run these inputs
    (if eager raises too, the inputs were bad, not the compiler)."""
    training: Any = None
    """For calls autograd records: the `fusec.api.training.TrainingProgram` (fused
    forward and backward through AOTAutograd) that runs instead of `program`."""
    verified: bool = False
    """The training program has run once (traced and compiled) without error."""
    facts: GraphFacts | None = None
    """What running `program` needs of its graph (set with `program`; `imported`
    is None when the program came from the warm-start cache)."""

    @property
    def launches(self) -> int:
        return 0 if self.program is None else self.program.launches

    def describe(self) -> str:
        what = "eager" if self.program is None else f"{self.launches} kernel(s)"
        reason = f" ({self.reason})" if self.program is None and self.reason else ""
        return f"({self.inputs}) -> {what}{reason}: {self.why}"

    @functools.cached_property
    def args_are_inputs(self) -> int:
        """How many arguments a call must have for them to be the program's inputs
        as they come (no parameters or buffers, none skipped), or -1: with that
        many, the getters can be skipped."""
        sources = [] if self.facts is None else self.facts.inputs
        direct = len(sources) == len(self.getters) and all(
            kind == "arg" and where == i for i, (kind, where) in enumerate(sources)
        )
        return len(sources) if direct else -1

    @functools.cached_property
    def fill(self) -> Callable[[Sequence[Any]], Any]:
        """`fill_outputs(self.outputs, results)`, with the common templates (one result,
        a tuple of results) as one `itemgetter` call."""
        t = self.outputs
        if isinstance(t, Ret):
            return operator.itemgetter(t.index)
        if type(t) is tuple and len(t) > 1 and all(isinstance(x, Ret) for x in t):
            return operator.itemgetter(*(x.index for x in t))
        return lambda results: fill_outputs(t, results)


def action_of(reused: Any) -> str:
    return "running eagerly" if reused is None else "reusing a guarded program"
