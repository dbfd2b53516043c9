"""A host program as JSON data, and back: what the warm-start cache stores.

`program_to_data` writes each step's recipe (`Step.recipe`) with its slots; the
kernels as their kernel-cache keys. `program_from_data` makes the same program
from that data alone: eager steps from their `OpInfo`, guards from their checks,
kernels loaded by key, branches and group bodies recursively. Neither reads IR
nor imports xDSL:

    {"n_slots": 5, "args": [0, 1], "consts": [[2, 2.0]], "outs": [4],
     "steps": [{"kind": "torch", "name": "aten.mm", "ins": [0, 1], "outs": [3],
                "op": {"name": "aten.mm", ...}},
               {"kind": "kernel", "name": "group[add,sigmoid]", "ins": [3, 2],
                "outs": [4], "key": "5e1f...", "body": {...}}]}

An `aten.opaque` step is what the caller's `opaque_data` makes of it (its fx
call: `fusec.runtime.opaque_calls`), made again by `opaque_call`. A program
with a step that cannot be written (an opaque call whose target or arguments
cannot be named, a kernel without a cache key) has no data (`NotData`); data
that is malformed raises `NotData` too, and callers treat both as a miss.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from fusec.runtime.program import (
    DeferredProgram,
    HostProgram,
    InputCheck,
    RootHolder,
    Step,
    assemble,
    group_fn,
    guard_fn,
    if_fn,
    kernel_fn,
)
from fusec.runtime.torch_steps import (
    DTYPE_BY_NAME,
    OpInfo,
    dtype_name,
    reused_result,
    step_callable,
)

KernelKey = Callable[[Any], str | None]
"""A group op -> the kernel-cache key of its kernel (None: it has none)."""
KernelByKey = Callable[[str], Callable[[Sequence[Any]], Sequence[Any]] | None]
"""A kernel-cache key -> the kernel (None: not in the cache)."""
OpaqueData = Callable[[str], Any]
"""An opaque step's node name -> its call as data (`NotData`: it has none)."""
OpaqueFromData = Callable[[Any], Callable[..., tuple[Any, ...]]]
"""An opaque call's data -> the step's function (`NotData`: not to be had)."""


class NotData(ValueError):
    """The program cannot be written as data, or the data is not a program."""


def program_to_data(
    program: HostProgram, kernel_key: KernelKey, opaque_data: OpaqueData
) -> dict[str, Any]:
    """`program` as JSON data (`NotData` if a step cannot be written); an opaque
    step is what `opaque_data` makes of its node."""
    return {
        "n_slots": program.n_slots,
        "args": list(program.arg_slots),
        "consts": [[slot, _const_to_data(v)] for slot, v in program.consts.items()],
        "steps": [_step_to_data(s, kernel_key, opaque_data) for s in program.steps],
        "outs": list(program.out_slots),
    }


def _const_to_data(v: Any) -> Any:
    if type(v) is float and not math.isfinite(v):
        return {"float": repr(v)}  # JSON has no inf/nan; repr round-trips through float()
    if type(v) in (bool, int, float):
        return v
    raise NotData(f"constant {v!r} is not a Python scalar")


def _step_to_data(step: Step, kernel_key: KernelKey, opaque_data: OpaqueData) -> dict[str, Any]:
    d: dict[str, Any] = {
        "kind": step.kind,
        "name": step.name,
        "ins": list(step.ins),
        "outs": list(step.outs),
        "at": step.at,
    }
    recipe = step.recipe
    what = recipe[0] if isinstance(recipe, tuple) and recipe else None
    if what != step.kind:
        raise NotData(f"a {step.kind} step has no recipe")
    if what == "torch":
        d["op"] = recipe[1].to_json()
    elif what == "kernel":
        key = kernel_key(recipe[1])
        if key is None:
            raise NotData("a kernel without a cache key")
        d["key"] = key
        d["body"] = program_to_data(recipe[2](), kernel_key, opaque_data)
    elif what == "group":
        d["body"] = program_to_data(recipe[1], kernel_key, opaque_data)
    elif what == "guard":
        d["checks"] = [_check_to_data(c) for c in recipe[1]]
        d["what"] = recipe[2]
    elif what == "if":
        d["branches"] = [program_to_data(b, kernel_key, opaque_data) for b in step.programs()]
    elif what == "opaque":
        d["node"], d["call"] = recipe[1], opaque_data(recipe[1])
        if recipe[2:] == ("reused",):
            d["reused"] = True
    else:
        raise NotData(f"a {step.kind} step ({step.name}) cannot be written as data")
    return d


def _check_to_data(c: InputCheck) -> list[Any]:
    return [dtype_name(c.dtype), c.ndim, list(c.ones), c.contiguous, c.device, c.full_device]


def _check_from_data(d: Any) -> InputCheck:
    dtype, ndim, ones, contiguous, device, full = d
    if not isinstance(ndim, int) or len(ones) != ndim or not isinstance(device, str):
        raise NotData(f"bad guard check {d!r}")
    return InputCheck(
        DTYPE_BY_NAME[dtype],
        ndim,
        tuple(bool(o) for o in ones),
        bool(contiguous),
        device,
        bool(full),
    )


def program_from_data(
    data: Any, kernel_by_key: KernelByKey, opaque_call: OpaqueFromData
) -> HostProgram:
    """The program `program_to_data` wrote; `NotData` if `data` is malformed or a
    kernel or opaque call it names is not to be had."""
    holder = RootHolder()
    try:
        program = _Loader(kernel_by_key, opaque_call, holder).program(data)
    except NotData:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        raise NotData(f"malformed program data: {type(e).__name__}: {e}") from None
    holder.root = program
    return program


class _Loader:
    def __init__(self, kernel_by_key: KernelByKey, opaque_call: OpaqueFromData, holder: RootHolder):
        self.kernel_by_key = kernel_by_key
        self.opaque_call = opaque_call
        self.holder = holder
        self.guards = 0

    def program(self, d: dict[str, Any]) -> HostProgram:
        n_slots = int(d["n_slots"])
        args = tuple(int(s) for s in d["args"])
        outs = tuple(int(s) for s in d["outs"])
        consts = {int(slot): _const_from_data(v) for slot, v in d["consts"]}
        steps = [self.step(s) for s in d["steps"]]
        used = [*args, *outs, *consts, *(i for s in steps for i in (*s.ins, *s.outs))]
        if any(not 0 <= i < n_slots for i in used):
            raise NotData("a slot out of range")
        return assemble(n_slots, args, consts, steps, outs)

    def step(self, d: dict[str, Any]) -> Step:
        kind, name = str(d["kind"]), str(d["name"])
        ins, outs = tuple(int(i) for i in d["ins"]), tuple(int(i) for i in d["outs"])
        branches: tuple[HostProgram, ...] = ()
        deferred: DeferredProgram | None = None
        fn: Callable[..., Any]
        if kind == "torch":
            info = OpInfo.from_json(d["op"])
            fn, recipe = step_callable(info), ("torch", info)
        elif kind == "kernel":
            kernel = self.kernel_by_key(str(d["key"]))
            if kernel is None:
                raise NotData(f"kernel {d['key']} is not in the kernel cache")
            _check_kernel_step(kernel, ins, outs)
            body_data = d["body"]
            body_of = lambda: self.program(body_data)  # noqa: E731 - made on first decline
            fn, recipe = kernel_fn(kernel, body_of), ("kernel", None, body_of)
        elif kind == "group":
            body = self.program(d["body"])
            fn, recipe = group_fn(body), ("group", body)
        elif kind == "guard":
            checks = tuple(_check_from_data(c) for c in d["checks"])
            what = str(d["what"])
            # No op to key failures by: the guard's position stands in for it.
            self.guards += 1
            fn = guard_fn(checks, what, f"{what}#{self.guards}", self.holder)
            recipe = ("guard", checks, what)
        elif kind == "if":
            then_data, else_data = d["branches"]
            then = self.program(then_data)
            branches = (then,)
            if len(ins) != len(then.arg_slots) + 1 or len(else_data["args"]) != len(then.arg_slots):
                raise NotData("an if step whose branches do not take its operands")
            deferred = DeferredProgram(
                functools.partial(self.program, else_data), _fallback_groups(else_data)
            )
            fn, recipe = if_fn(then, deferred, self.holder), ("if",)
        elif kind == "opaque":
            fn, recipe = self.opaque_call(d["call"]), ("opaque", str(d["node"]))
            if d.get("reused"):  # `fusec.codegen.torch_ops.reusable`
                fn, recipe = reused_result(fn), (*recipe, "reused")
        else:
            raise NotData(f"unknown step kind {kind!r}")
        return Step(fn, ins, outs, (), kind, name, branches, recipe, int(d["at"]), deferred)


def _fallback_groups(d: dict[str, Any]) -> list[str]:
    """The `fallback_groups` of the program `d` holds, without making it (as
    `fusec.runtime.program.assemble` counts them)."""
    out: list[str] = []
    for step in d["steps"]:
        if step["kind"] == "group":
            out.append("fusion.group")
        elif step["kind"] == "if":
            for branch in step["branches"]:
                out += _fallback_groups(branch)
    return out


def _check_kernel_step(kernel: Any, ins: tuple[int, ...], outs: tuple[int, ...]) -> None:
    """`NotData` unless the step hands the kernel as many values as its signature
    takes and takes back as many results as it gives: a kernel called with a
    slot too few reads past its arguments."""
    sig = getattr(kernel, "signature", None)
    if sig is None:  # not a compiled kernel (a test's stand-in): nothing to check
        return
    results = len(sig.outputs) - sum(len(ex.parts) for ex in sig.exits) + len(sig.exits)
    if len(ins) != len(sig.inputs) or len(outs) != results:
        raise NotData(
            f"a kernel step passes {len(ins)} values and takes {len(outs)} results; "
            f"its kernel takes {len(sig.inputs)} and gives {results}"
        )


def _const_from_data(v: Any) -> Any:
    if isinstance(v, dict):
        return float(v["float"])
    if type(v) in (bool, int, float):
        return v
    raise NotData(f"constant {v!r} is not a Python scalar")
