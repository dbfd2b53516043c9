"""Symbolic tracing that keeps augmented assignments in place.

`torch.fx.symbolic_trace` records `x += y` as `x = operator.add(x, y)`: its
proxies have no `__iadd__`, so Python falls back to `__add__` and rebinds the
name, and the graph writes nothing (the caller's tensor, and any view of it,
keep their old values; the result's dtype is promoted). This tracer's proxies
record the in-place operator instead:

    def f(x, y):                 %x : placeholder, %y : placeholder
        x += y          ->       %iadd = call_function[operator.iadd](%x, %y)
        return x * 2             %mul = call_function[operator.mul](%iadd, 2)

which runs (eagerly or imported) with PyTorch's in-place semantics.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch
import torch.fx

INPLACE_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {
    "__iadd__": operator.iadd,
    "__isub__": operator.isub,
    "__imul__": operator.imul,
    "__itruediv__": operator.itruediv,
    "__ifloordiv__": operator.ifloordiv,
    "__imod__": operator.imod,
    "__ipow__": operator.ipow,
    "__iand__": operator.iand,
    "__ior__": operator.ior,
    "__ixor__": operator.ixor,
    "__ilshift__": operator.ilshift,
    "__irshift__": operator.irshift,
}


class InPlaceProxy(torch.fx.Proxy):
    """A proxy whose augmented assignments are recorded as `operator.i*` calls."""


def _inplace_method(fn: Callable[[Any, Any], Any]) -> Callable[[InPlaceProxy, Any], Any]:
    def method(self: InPlaceProxy, other: Any) -> Any:
        return self.tracer.create_proxy("call_function", fn, (self, other), {})

    return method


for _name, _fn in INPLACE_OPERATORS.items():
    setattr(InPlaceProxy, _name, _inplace_method(_fn))


class InPlaceTracer(torch.fx.Tracer):
    """`torch.fx.Tracer` with `InPlaceProxy` proxies."""

    def proxy(self, node: torch.fx.Node) -> torch.fx.Proxy:
        return InPlaceProxy(node, self)


def symbolic_trace(root: torch.nn.Module | Callable[..., Any]) -> torch.fx.GraphModule:
    """`torch.fx.symbolic_trace` with in-place augmented assignments."""
    tracer = InPlaceTracer()
    graph = tracer.trace(root)
    name = root.__class__.__name__ if isinstance(root, torch.nn.Module) else root.__name__
    return torch.fx.GraphModule(tracer.root, graph, name)
