"""Facts about fx nodes the importer reads: names, targets, arguments, and
whether a node writes its first argument in place."""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx
from torch import nn

MUTATING_OPS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift,
}  # fmt: skip
"""The `operator` module's in-place functions (`x += y` is `operator.iadd`)."""

SHAPE_QUERIES = {"size", "dim", "numel", "ndimension", "shape", "dtype", "device", "ndim"}
"""Methods and attributes that read a tensor's metadata, not its values."""


def clone_value(v: Any, clones: dict[Any, Any]) -> Any:
    """`v`, or for a tensor a copy with the same layout over a copy of its
    storage (one copy per storage): sizes, strides, stride-0 dims and aliasing
    between inputs stay as the caller's, so in-place writes behave (and raise,
    e.g. into an expanded tensor) as they would on the caller's tensors."""
    if not isinstance(v, torch.Tensor):
        return v
    if id(v) not in clones:
        if v.layout != torch.strided or v.is_quantized or v.is_nested:
            clones[id(v)] = v.clone()
        else:
            storage = v.untyped_storage()
            key = ("storage", storage.data_ptr())
            if key not in clones:
                clones[key] = storage.clone()
            copy = clones[key]
            clones[id(v)] = torch.empty(0, dtype=v.dtype, device=v.device).set_(
                copy, v.storage_offset(), v.size(), v.stride()
            )
    return clones[id(v)]


def ssa_name(name: str) -> str:
    s = "".join(c if c.isalnum() or c == "_" else "_" for c in str(name))
    # xDSL drops a trailing `_<digits>` from a name, so `_0` (an nn.Sequential
    # child's node) would become the invalid empty name.
    return s if s.strip("_0123456789") and not s[0].isdigit() else "v" + s


def fetch_attr(root: nn.Module, target: str) -> Any:
    obj: Any = root
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def flat_nodes(a: Any) -> list[torch.fx.Node]:
    out: list[torch.fx.Node] = []
    torch.fx.node.map_arg(a, lambda n: out.append(n) or n)
    return out


def map_args(node: torch.fx.Node, real: dict[torch.fx.Node, Any]) -> tuple[Any, Any]:
    args = torch.fx.node.map_arg(node.args, lambda n: real[n])
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: real[n])
    return args, kwargs


def target_name(node: torch.fx.Node) -> str:
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_module":
        return f"module.{node.target}"
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return str(t)  # aten.add.Tensor
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or str(t)
    if name.startswith("_VariableFunctionsClass."):
        mod, name = "torch", name.split(".", 1)[1]
    return f"{mod}.{name}" if mod else name
