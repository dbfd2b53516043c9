"""Which handler imports which fx target: the torch-level tables (functions,
`Tensor` methods by name, `nn.Module` classes) and the ATen table (OpOverloads).

A handler is called as `handler(importer, *node.args, **node.kwargs)` (module
handlers get the module first) and returns the SSA value(s) of the node, or
raises `NotMapped` so that the node runs through PyTorch (`aten.opaque`):

    @register(torch.sigmoid, F.sigmoid, "sigmoid")        # torch-level
    @register_aten(torch.ops.aten.sigmoid)                # every overload of the packet
    def sigmoid(ctx: Importer, x: Any) -> SSAValue:
        return ctx.add_op(aten.SigmoidOp(ctx.tensor(x))).results[0]

ATen registration works as Inductor's `register_lowering`: registering an
`OpOverloadPacket` (`torch.ops.aten.add`) registers its overloads
(`add.Tensor`, `add.Scalar`, ...), so a table entry names the operator, not a
hand-kept list of overloads. Overloads a handler never sees are left out:
`out=` variants, those taking a `Dimname` (ATen graphs are functional and
positional) and TorchScript's overloads on Python numbers (`add.int`). An entry whose overloads take different argument lists names the
ones its handler reads (`torch.ops.aten.var.dim`), as an OpOverload registers
itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

Handler = Callable[..., Any]

FUNCTIONS: dict[Any, Handler] = {}
"""torch-level functions (`torch.add`, `F.gelu`, `operator.add`) -> handler."""
METHODS: dict[str, Handler] = {}
"""`Tensor` method names (`"add"`, `"view"`) -> handler."""
MODULES: dict[type, Handler] = {}
"""`nn.Module` classes (`nn.ReLU`) -> handler(importer, module, *args)."""
ATEN_TABLE: dict[Any, Handler] = {}
"""`torch.ops.aten` OpOverload -> handler."""


def register(*keys: Any) -> Callable[[Handler], Handler]:
    """Registers a torch-level handler for functions, method names (str) and
    module classes."""

    def deco(fn: Handler) -> Handler:
        for k in keys:
            if isinstance(k, str):
                METHODS[k] = fn
            elif isinstance(k, type) and issubclass(k, nn.Module):
                MODULES[k] = fn
            else:
                FUNCTIONS[k] = fn
        return fn

    return deco


def aten_overloads(target: Any) -> list[Any]:
    """The OpOverloads `target` stands for: an OpOverload itself; for a packet,
    every overload that takes a tensor, less the `out=` variants and those taking
    a `Dimname`; none
    for None (an in-place packet this torch does not have)."""
    if target is None:
        return []
    if isinstance(target, torch._ops.OpOverload):
        return [target]
    found = []
    for name in target.overloads():
        overload = getattr(target, name)
        arguments = overload._schema.arguments
        if any(a.is_out or "Dimname" in str(a.type) for a in arguments):
            continue
        if not any(_is_tensors(a.type) for a in arguments):
            continue  # TorchScript's overloads on Python numbers, strings, lists
        found.append(overload)
    return found


def _is_tensors(t: Any) -> bool:
    """A schema type that is a tensor or a list of tensors (`cat`'s `Tensor[]`)."""
    if isinstance(t, torch.ListType):
        t = t.getElementType()
    return isinstance(t, torch.TensorType)


def register_aten(*targets: Any) -> Callable[[Handler], Handler]:
    """Registers an ATen handler for packets (all their overloads, see
    `aten_overloads`) and single OpOverloads."""

    def deco(fn: Handler) -> Handler:
        for t in targets:
            for overload in aten_overloads(t):
                ATEN_TABLE[overload] = fn
        return fn

    return deco


def in_place_packet(packet: Any) -> Any:
    """`torch.ops.aten.add_` for `torch.ops.aten.add`, or None where there is none."""
    name = packet._qualified_op_name.split("::")[1]
    return getattr(torch.ops.aten, name + "_", None)


def handler_for(node: torch.fx.Node, gm: torch.fx.GraphModule) -> Handler | None:
    """The handler of a call node, or None (the node becomes `aten.opaque`)."""
    if node.op == "call_function":
        if isinstance(node.target, torch._ops.OpOverload):
            return ATEN_TABLE.get(node.target)
        try:
            return FUNCTIONS.get(node.target)
        except TypeError:  # an unhashable target
            return None
    if node.op == "call_method":
        return METHODS.get(str(node.target))
    if node.op == "call_module":
        return MODULES.get(type(gm.get_submodule(node.target)))
    return None


def add_in_place_forms() -> None:
    """In-place forms (`x.exp_()`, `torch.exp_(x)`, `F.relu_(x)`) map like their
    out-of-place op (`Importer.map_in_place` adds the write back). Run once
    every torch-level handler is registered."""
    for name, fn in list(METHODS.items()):
        if hasattr(torch.Tensor, f"{name}_"):
            METHODS.setdefault(f"{name}_", fn)
    for target, fn in list(FUNCTIONS.items()):
        fname = getattr(target, "__name__", "")
        for ns in (torch, F):
            inplace = getattr(ns, f"{fname}_", None) if fname else None
            if callable(inplace) and getattr(ns, fname, None) is target:
                FUNCTIONS.setdefault(inplace, fn)
