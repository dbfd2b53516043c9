"""Warm start: a compiled specialization made again from the disk cache, no IR.

A second process that calls a graph it compiled before loads the whole host
program from an entry (`fusec.runtime.program_cache`, kind "host") and its
kernels' machine code by their kernel-cache keys: no import, no pipeline, no
parse, and no xDSL at all. The entry's key is the graph and its specialization:

    sha256(fingerprint, pipeline, target, name, fx code + what each call targets,
           grad mode, every module's training flag, per argument: dtype, device, size-1 dims, contiguity,
           autograd flag (scalars by type and value), parameters exactly)

and its payload (JSON) is what `CompiledFunction` needs to run the graph:

    {"program": <fusec.runtime.program_data>, "inputs": [["arg", 0], ...],
     "outputs": <Ret/Const template>, "shape_dependent": false, "shapes": null,
     "size_checks": [[arg, dim, kind, params, class of this call's size]],
     "dynamic": {"0": [false, true]}, "writes_inputs": false,
     "generic_why": null, "ir": "<the module after the pipeline>"}

A load checks what the key leaves out: exact shapes for a shape-dependent
graph, the size classes of its cuts (`fusec.frontend.size_checks`). Anything that does
not fit, a corrupt entry, or a kernel missing from the kernel cache is a miss:
the specialization compiles as usual and its entry is written again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from fusec.frontend.graph_values import Const, Ret
from fusec.frontend.size_checks import SizeCheck
from fusec.runtime import program_cache
from fusec.runtime.opaque_calls import OpaqueCall, call_from_data, call_to_data
from fusec.runtime.program import HostProgram
from fusec.runtime.program_data import NotData, program_from_data, program_to_data

log = logging.getLogger("fusec")


@dataclass(frozen=True)
class GraphFacts:
    """What running a specialization needs to know of its imported graph."""

    inputs: tuple[tuple[str, Any], ...]
    """Per program argument where it comes from (`ImportedGraph.inputs`)."""
    outputs: Any
    """The output template (`Ret`, `Const` leaves)."""
    shape_dependent: bool
    size_checks: tuple[SizeCheck, ...]
    dynamic: dict[int, tuple[bool, ...]]
    """Per caller argument, which of its dims the program takes at run time (`?`)."""
    writes_inputs: Callable[[], bool]
    """Whether the program writes an input in place (`aten.copy_`)."""
    generic_why: Callable[[], str | None]
    """Why the program cannot serve other specializations through its guards
    (`why_not_input_generic`), or None."""


def facts_of(imported: Any) -> GraphFacts:
    """The facts of an `ImportedGraph` (the IR is read only when a lazy fact is asked)."""
    from fusec.dialects.aten import CopyOp
    from fusec.passes.guard import why_not_input_generic
    from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType

    dynamic: dict[int, tuple[bool, ...]] = {}
    sources = [s for s in imported.inputs if s[0] != "skip"]
    for (kind, where), arg in zip(sources, imported.func.args, strict=False):
        if kind == "arg" and isinstance(arg.type, TensorType):
            dynamic[where] = tuple(d == DYNAMIC_INDEX for d in arg.type.get_shape())
    func = imported.func
    return GraphFacts(
        tuple(imported.inputs),
        imported.outputs,
        imported.shape_dependent,
        tuple(imported.size_checks),
        dynamic,
        lambda: any(isinstance(op, CopyOp) for op in func.walk()),
        lambda: why_not_input_generic(func),
    )


# ---------------------------------------------------------------------- keys


def host_key(
    gm: torch.fx.GraphModule, args: Sequence[Any], pipeline: str, target: str, name: str
) -> str | None:
    """The key of `gm`'s host program for calls specialized as `args` are (size-1
    patterns and contiguity, not sizes; the sizes Dynamo recorded, symbolic or
    not, are another import), or None when an argument has nothing stable to key
    it by."""
    head = (program_cache.fingerprint(), "host", pipeline, target, name)
    return program_cache.graph_key(gm, args, head, exact_args=False, placeholder_shapes=True)


# ---------------------------------------------------------------------- entries


@dataclass
class Loaded:
    program: HostProgram
    facts: GraphFacts
    module_text: str


def load(
    key: str, args: Sequence[Any], kernel_by_key: Callable[[str], Any], root: torch.nn.Module
) -> Loaded | None:
    """The specialization of entry `key` for these `args`, or None (a miss); its
    opaque calls run on `root`'s submodules."""
    entry = program_cache.load("host", key)
    if entry is None:
        return None
    try:
        d = json.loads(entry[1])
        facts = _facts_from_data(d)
        if not _fits(d, facts, args):
            log.debug("fusec: warm-start entry %s is for other sizes", key)
            return None
        program = program_from_data(
            d["program"], kernel_by_key, lambda call: call_from_data(call).bind(root)
        )
        return Loaded(program, facts, _ir_for(d, args))
    except (NotData, KeyError, IndexError, TypeError, ValueError) as e:
        log.debug("fusec: ignoring warm-start entry %s: %s", key, e)
        return None


def _fits(d: dict[str, Any], facts: GraphFacts, args: Sequence[Any]) -> bool:
    if facts.shape_dependent:
        if _shapes(args) != d["shapes"]:
            return False
    classes = [c[4] for c in d["size_checks"]]
    return [_plain(c.of(args)) for c in facts.size_checks] == classes


def store(
    key: str,
    args: Sequence[Any],
    program: HostProgram,
    facts: GraphFacts,
    module_text: str,
    kernel_key: Callable[[Any], str | None],
    opaque: Mapping[str, OpaqueCall],
) -> bool:
    """Writes the entry of `key`; False when the program cannot be data (an
    opaque call of something that has no name, a kernel without a key, an
    output that is not plain data). `opaque` has the calls of its opaque steps."""
    try:
        d = {
            "program": program_to_data(
                program, kernel_key, lambda node: call_to_data(opaque[node])
            ),
            "inputs": [list(s) for s in facts.inputs],
            "outputs": _template_to_data(facts.outputs),
            "shape_dependent": facts.shape_dependent,
            "shapes": _shapes(args) if facts.shape_dependent else None,
            "size_checks": [
                [c.arg, c.dim, c.kind, list(c.params), _plain(c.of(args))]
                for c in facts.size_checks
            ],
            "dynamic": {str(i): list(dims) for i, dims in facts.dynamic.items()},
            "writes_inputs": facts.writes_inputs(),
            "generic_why": facts.generic_why(),
            "ir": module_text,
            "ir_shapes": _shapes(args),
        }
        payload = json.dumps(d, separators=(",", ":"), allow_nan=False).encode()
    except (NotData, TypeError, ValueError) as e:
        log.debug("fusec: no warm-start entry for this program: %s", e)
        return False
    program_cache.store("host", key, payload)
    return True


def _shapes(args: Sequence[Any]) -> list[list[int] | None]:
    return [list(a.shape) if isinstance(a, torch.Tensor) else None for a in args]


def _ir_for(d: dict[str, Any], args: Sequence[Any]) -> str:
    """The entry's IR text, for a call of `args`. An entry serves every size its
    size checks admit, but its IR was printed for the sizes of the call that
    made it: where this call's differ, a leading comment says so, so the shapes
    in the text are not taken for this call's.

        // fusec: warm start: this IR was compiled for input sizes [[4, 32], [4, 8]];
        // its program also serves this call's [[6, 32], [6, 8]]
        builtin.module { ... }
    """
    text, made_for, now = str(d.get("ir", "")), d.get("ir_shapes"), _shapes(args)
    if not text or made_for == now:
        return text
    sizes = "unknown sizes" if made_for is None else f"input sizes {made_for}"
    return (
        f"// fusec: warm start: this IR was compiled for {sizes};\n"
        f"// its program also serves this call's {now}\n{text}"
    )


def _plain(v: Any) -> Any:
    """`v` as it reads back from JSON (tuples are lists)."""
    return json.loads(json.dumps(v))


def _facts_from_data(d: dict[str, Any]) -> GraphFacts:
    inputs = tuple((str(kind), where) for kind, where in d["inputs"])
    checks = tuple(
        SizeCheck(int(arg), int(dim), str(kind), tuple(int(p) for p in params))
        for arg, dim, kind, params, _ in d["size_checks"]
    )
    writes, why = bool(d["writes_inputs"]), d["generic_why"]
    if why is not None and not isinstance(why, str):
        raise NotData("bad generic_why")
    return GraphFacts(
        inputs,
        _template_from_data(d["outputs"]),
        bool(d["shape_dependent"]),
        checks,
        {int(i): tuple(bool(x) for x in dims) for i, dims in d["dynamic"].items()},
        lambda: writes,
        lambda: why,
    )


_SCALARS = (bool, int, float, str, type(None))


def _template_to_data(t: Any) -> Any:
    if isinstance(t, Ret):
        return {"ret": t.index}
    if isinstance(t, Const):
        if type(t.value) not in _SCALARS:
            raise NotData(f"an output constant {t.value!r}")
        return {"const": t.value}
    if type(t) in (tuple, list):
        return {type(t).__name__: [_template_to_data(x) for x in t]}
    if type(t) is dict and all(type(k) is str for k in t):
        return {"dict": {k: _template_to_data(v) for k, v in t.items()}}
    if type(t) in _SCALARS:
        return {"const": t}
    raise NotData(f"an output {type(t).__name__}")


def _template_from_data(d: Any) -> Any:
    if not isinstance(d, dict) or len(d) != 1:
        raise NotData(f"bad output template {d!r}")
    ((kind, v),) = d.items()
    if kind == "ret":
        return Ret(int(v))
    if kind == "const":
        if type(v) not in _SCALARS:
            raise NotData(f"bad output constant {v!r}")
        return Const(v)
    if kind in ("tuple", "list"):
        items = [_template_from_data(x) for x in v]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {str(k): _template_from_data(x) for k, x in v.items()}
    raise NotData(f"bad output template {d!r}")
