"""Opaque calls: how the host program runs a node fusec left to PyTorch (an
`aten.opaque` op), and the same call as JSON data for the warm start.

The importer records each opaque node as an `OpaqueCall` (its fx target and its
arguments, with `OperandRef`s where the op's runtime operands go). As data, a
call names its target so that another process finds the same object:

    OpaqueCall("call_function", aten.embedding.default, (OperandRef(0), OperandRef(1)), {}, False)
    -> {"kind": "call_function", "target": {"op": "aten::embedding", "overload": "default"},
        "args": {"tuple": [{"ref": 0}, {"ref": 1}]}, "kwargs": {"dict": {}},
        "multi": false, "kept": null, "nested": false}

An ATen overload is named by its schema, any other function by its module and
qualified or plain name (written only if they lead back to the very object), a submodule
by its path and a method by its name. Arguments are scalars, strings, None,
dtypes, devices, layouts, memory formats, slices and containers of them; a call
with anything else (a tensor constant, a local function) has no data
(`NotData`), and a program holding it gets no warm-start entry. Nothing here
imports xDSL: a warm start runs these calls with the compiler not loaded.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from fusec.runtime.program_data import NotData
from torch import nn


@dataclass(frozen=True)
class OperandRef:
    """Marks where an opaque call's i-th runtime operand goes in its arguments."""

    index: int


@dataclass
class OpaqueCall:
    """How to run one `aten.opaque` op: the original fx target and arguments."""

    kind: str
    target: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    multi: bool
    kept: tuple[int, ...] | None = None
    """For a multi-result call with None among its results (ATen backward ops with
    an output mask): the positions of the results that are values."""
    nested: bool = False
    """The results nest (`nn.LSTM` returns `(output, (h, c))`): `kept` counts
    positions among `flat_leaves` of them."""

    def bind(self, root: nn.Module) -> Callable[..., tuple[Any, ...]]:
        """A callable over the op's runtime operands that returns its results."""
        if self.kind == "call_module":
            fn: Callable[..., Any] = root.get_submodule(self.target)
        elif self.kind == "call_method":
            name = self.target

            def fn(obj: Any, *args: Any, **kwargs: Any) -> Any:
                return getattr(obj, name)(*args, **kwargs)
        else:
            fn = self.target
        args, kwargs, multi, kept, nested = (
            self.args, self.kwargs, self.multi, self.kept, self.nested
        )  # fmt: skip

        def fill(a: Any, ops: Sequence[Any]) -> Any:
            if isinstance(a, OperandRef):
                return ops[a.index]
            if isinstance(a, tuple | list):
                return type(a)(fill(x, ops) for x in a)
            if isinstance(a, dict):
                return {k: fill(v, ops) for k, v in a.items()}
            if isinstance(a, slice):  # a bound that is a symbolic size's runtime value
                return slice(fill(a.start, ops), fill(a.stop, ops), fill(a.step, ops))
            return a

        def call(*ops: Any) -> tuple[Any, ...]:
            r = fn(*fill(args, ops), **fill(kwargs, ops))
            if r is None:
                return ()
            if nested:
                r = flat_leaves(r)
            if kept is not None:
                return tuple(r[i] for i in kept)
            return tuple(r) if multi else (r,)

        return call


def flat_leaves(value: Any) -> list[Any]:
    """The leaves of nested tuples and lists, depth first: `(a, (b, c))` -> `[a, b, c]`."""
    if isinstance(value, tuple | list):
        return [leaf for v in value for leaf in flat_leaves(v)]
    return [value]


# ---------------------------------------------------------------------- as data


def call_to_data(call: OpaqueCall) -> dict[str, Any]:
    """`call` as JSON data; `NotData` if its target or an argument cannot be named."""
    return {
        "kind": call.kind,
        "target": _target_to_data(call.kind, call.target),
        "args": _value_to_data(tuple(call.args)),
        "kwargs": _value_to_data(dict(call.kwargs)),
        "multi": bool(call.multi),
        "kept": None if call.kept is None else list(call.kept),
        "nested": bool(call.nested),
    }


def call_from_data(d: Any) -> OpaqueCall:
    """The call `call_to_data` wrote; `NotData` if `d` is malformed or its target
    is not to be had in this process."""
    try:
        kind = str(d["kind"])
        args = _value_from_data(d["args"])
        kwargs = _value_from_data(d["kwargs"])
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise NotData("an opaque call's arguments are not a tuple and a dict")
        kept = d["kept"]
        return OpaqueCall(
            kind,
            _target_from_data(kind, d["target"]),
            args,
            kwargs,
            bool(d["multi"]),
            None if kept is None else tuple(int(i) for i in kept),
            bool(d["nested"]),
        )
    except NotData:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, ImportError) as e:
        raise NotData(f"malformed opaque call: {type(e).__name__}: {e}") from None


def _target_to_data(kind: str, target: Any) -> Any:
    if kind != "call_function":
        return _target_from_data(kind, target)  # a submodule's path, a method's name
    if isinstance(target, torch._ops.OpOverload):
        return {"op": target._schema.name, "overload": target._overloadname}
    module = getattr(target, "__module__", None)
    # A builtin's qualified name may be its class's (`torch.cumsum`:
    # `_VariableFunctionsClass.cumsum`), where the module has it by its plain name.
    for name in (getattr(target, "__qualname__", None), getattr(target, "__name__", None)):
        if isinstance(module, str) and isinstance(name, str):
            d = {"module": module, "name": name}
            try:
                if _target_from_data(kind, d) is target:
                    return d
            except (NotData, ImportError, AttributeError):
                pass
    # A local function, or a name bound to something else.
    raise NotData(f"{target!r} cannot be found again by its name")


def _target_from_data(kind: str, d: Any) -> Any:
    if kind in ("call_module", "call_method"):
        if not isinstance(d, str):
            raise NotData(f"a {kind} target that is not a name: {d!r}")
        return d
    if kind != "call_function":
        raise NotData(f"an opaque call of kind {kind!r}")
    if "op" in d:
        namespace, _, name = str(d["op"]).partition("::")
        packet = getattr(getattr(torch.ops, namespace), name)
        target = getattr(packet, str(d["overload"]))
        if not isinstance(target, torch._ops.OpOverload):
            raise NotData(f"{d['op']}.{d['overload']} is not an operator overload")
        return target
    obj: Any = importlib.import_module(str(d["module"]))
    for part in str(d["name"]).split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise NotData(f"{d['module']}.{d['name']} is not callable")
    return obj


_ENUMS: dict[str, type] = {
    "dtype": torch.dtype,
    "layout": torch.layout,
    "memory_format": torch.memory_format,
}


def _value_to_data(v: Any) -> Any:
    if v is None or type(v) in (bool, int, str):
        return v
    if type(v) is float:
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(v, OperandRef):
        return {"ref": v.index}
    # fx hands its own immutable list and dict; an op takes plain ones alike.
    if type(v) in (tuple, torch.Size):
        return {"tuple": [_value_to_data(x) for x in v]}
    if isinstance(v, list):
        return {"list": [_value_to_data(x) for x in v]}
    if isinstance(v, dict) and all(type(k) is str for k in v):
        return {"dict": {k: _value_to_data(x) for k, x in v.items()}}
    if type(v) is slice:
        return {"slice": [_value_to_data(x) for x in (v.start, v.stop, v.step)]}
    if isinstance(v, torch.device):
        return {"device": str(v)}
    for tag, cls in _ENUMS.items():
        if isinstance(v, cls):
            return {tag: str(v).removeprefix("torch.")}
    raise NotData(f"an opaque call's argument {type(v).__name__} cannot be written as data")


def _value_from_data(d: Any) -> Any:
    if d is None or type(d) in (bool, int, float, str):
        return d
    if not isinstance(d, dict) or len(d) != 1:
        raise NotData(f"malformed opaque argument {d!r}")
    ((tag, x),) = d.items()
    if tag == "float":
        return float(x)
    if tag == "ref":
        return OperandRef(int(x))
    if tag == "tuple":
        return tuple(_value_from_data(e) for e in x)
    if tag == "list":
        return [_value_from_data(e) for e in x]
    if tag == "dict":
        return {str(k): _value_from_data(e) for k, e in x.items()}
    if tag == "slice":
        start, stop, step = (_value_from_data(e) for e in x)
        return slice(start, stop, step)
    if tag == "device":
        return torch.device(str(x))
    if tag in _ENUMS:
        value = getattr(torch, str(x))
        if not isinstance(value, _ENUMS[tag]):
            raise NotData(f"torch.{x} is not a {tag}")
        return value
    raise NotData(f"unknown opaque argument tag {tag!r}")
