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

`trace(fn_or_module)` is how `fusec.compile` gets its graph: this tracer, with
each node's stack trace kept to the user's own frames (for logs and
explanations). It needs no xDSL, so a warm start traces and keys a graph
without importing the compiler.
"""

from __future__ import annotations

import operator
import sys
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


class UnsupportedGraph(Exception):
    """The graph cannot be imported at all (it then runs eagerly)."""


class _UserFrameTracer(InPlaceTracer):
    """Records each node's stack trace as the frames outside torch and fusec (fx
    keeps only frames below a `forward`, so plain functions would get none), and
    augmented assignments in place (`fusec.frontend.tracing`).

    The frames are read from Python's own frame objects, not through fx's
    `record_stack_traces`: that symbolizes a `CapturedTraceback`, which imports
    torch._dynamo and torch._inductor on first use (seconds, on every fresh
    process's first trace, warm starts included)."""

    def create_node(self, *args: Any, **kwargs: Any) -> torch.fx.Node:
        node = super().create_node(*args, **kwargs)
        if not node.stack_trace:
            trace = _user_stack_trace(sys._getframe(1))
            if trace:
                node.stack_trace = trace
        return node


def _user_stack_trace(frame: Any) -> str:
    """`frame` and its callers outside torch and fusec, outermost first, as
    `traceback` formats them ('File "m.py", line 3, in f\n    y = x.exp()')."""
    import traceback

    from fusec.frontend.source_lines import is_library_file

    frames: list[traceback.FrameSummary] = []
    while frame is not None:
        code = frame.f_code
        if not is_library_file(code.co_filename):
            frames.append(traceback.FrameSummary(code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    frames.reverse()
    return "".join(traceback.StackSummary.from_list(frames).format()).strip()


def _hooked(module: torch.nn.Module) -> str | None:
    """The first module of `module`'s tree with forward or backward hooks (or
    "global" for hooks on every module), or None."""
    from torch.nn.modules import module as nn_module

    if nn_module._global_forward_hooks or nn_module._global_forward_pre_hooks:
        return "global"
    if nn_module._global_backward_hooks or nn_module._global_backward_pre_hooks:
        return "global"
    for name, m in module.named_modules():
        if m._forward_hooks or m._forward_pre_hooks or m._backward_hooks or m._backward_pre_hooks:
            return name or type(module).__name__
    return None


def trace(fn_or_module: Any) -> torch.fx.GraphModule:
    """A GraphModule for a GraphModule, an `nn.Module` or a function (symbolic trace).

    A module with hooks is not traced: the trace would run a hook once, when
    tracing (a submodule's) or never (the module's own), where eager runs it on
    every call; `torch.compile(backend="fusec")` keeps them (Dynamo traces them)."""
    if isinstance(fn_or_module, torch.fx.GraphModule):
        return fn_or_module
    if isinstance(fn_or_module, torch.nn.Module) and (where := _hooked(fn_or_module)):
        raise UnsupportedGraph(
            f"{type(fn_or_module).__name__} has forward or backward hooks ({where}), which a "
            "traced graph would not run on every call; torch.compile(backend='fusec') runs them"
        )
    try:
        # Stack traces let logs and explanations name the user's source lines.
        tracer = _UserFrameTracer()
        graph = tracer.trace(fn_or_module)
        return torch.fx.GraphModule(tracer.root, graph, graph_name(fn_or_module))
    except Exception as e:  # noqa: BLE001 - any tracing failure means "run eagerly"
        raise UnsupportedGraph(f"torch.fx cannot trace {graph_name(fn_or_module)}: {e}") from e


def graph_name(fn_or_module: Any) -> str:
    """What a function or module is called in graphs, logs and reports: a
    module's class name, a function's `__name__` (its type's, for a callable
    without one)."""
    if isinstance(fn_or_module, torch.nn.Module):
        return type(fn_or_module).__name__
    return getattr(fn_or_module, "__name__", None) or type(fn_or_module).__name__
