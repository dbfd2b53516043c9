"""CUDA graphs for `fusec.compile(..., cuda_graphs=True)`.

As the seeds' cudagraphs backend (`cudagraphs_inner`): the first call of a
specialization with given exact shapes copies its inputs into static buffers,
warms the program up on a side stream (kernels load, the allocator fills), then
captures one run into a `torch.cuda.CUDAGraph`; later calls copy their inputs
into the static buffers, replay, and return copies of the static outputs:

    f = fusec.compile(lstm_cell, cuda_graphs=True)
    f(*inputs)      # warm-up + capture + replay
    f(*inputs2)     # copy inputs, replay

Python scalars and parameters (module attributes) are baked into a capture:
a different scalar value or a reallocated parameter captures again (at most
`MAX_GRAPHS` per specialization). A call runs the program without a graph, and
logs why (logger "fusec", INFO, once per reason), when an input is mutated by
the graph, is on the CPU, or the inputs are on several devices:

    fusec: not using a CUDA graph: input 2 (x) is on cpu

`ineligible_reason` and `mutated_inputs` are pure Python (no GPU needed).
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

log = logging.getLogger("fusec")

MAX_GRAPHS = 8
"""Captured graphs kept per specialization (exact shapes x scalar values)."""

_IN_PLACE_OPERATORS = {operator.iadd, operator.isub, operator.imul, operator.itruediv}
_ALIASING_METHODS = {
    "view",
    "view_as",
    "reshape",
    "expand",
    "expand_as",
    "narrow",
    "select",
    "squeeze",
    "unsqueeze",
    "permute",
    "transpose",
    "t",
    "flatten",
    "chunk",
    "split",
    "unbind",
    "detach",
    "__getitem__",
}
"""Results that may alias their first argument: an in-place op on them writes
the input they view."""


def input_names(gm: torch.fx.GraphModule) -> list[str]:
    """The graph's placeholder names, in argument order."""
    return [str(n.target) for n in gm.graph.nodes if n.op == "placeholder"]


def _writes_first_arg(gm: torch.fx.GraphModule, node: torch.fx.Node) -> bool:
    if node.kwargs.get("inplace") is True:
        return True
    if node.op == "call_function":
        if node.target in _IN_PLACE_OPERATORS:
            return True
        schema = getattr(node.target, "_schema", None)
        if schema is not None and schema.arguments:
            alias = schema.arguments[0].alias_info
            return bool(alias is not None and alias.is_write)
        name = getattr(node.target, "__name__", "")
        return name.endswith("_") and not name.startswith("_")
    if node.op == "call_method":
        name = str(node.target)
        return name.endswith("_") and not name.startswith("_")
    if node.op == "call_module":
        return getattr(gm.get_submodule(str(node.target)), "inplace", False) is True
    return False


def _aliases_first_arg(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        return str(node.target) in _ALIASING_METHODS
    if node.op == "call_function":
        name = getattr(node.target, "__name__", "")
        return node.target is operator.getitem or name in _ALIASING_METHODS
    return False


def mutated_inputs(gm: torch.fx.GraphModule) -> set[int]:
    """Argument positions whose tensors the graph writes (in place, or through a
    view of them): replaying a capture would write the static copy instead."""
    placeholder_index = {
        n: i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder")
    }
    root: dict[torch.fx.Node, int] = dict(placeholder_index)
    mutated: set[int] = set()
    for node in gm.graph.nodes:
        out = node.kwargs.get("out")
        for o in out if isinstance(out, tuple | list) else [out]:
            if isinstance(o, torch.fx.Node) and o in root:
                mutated.add(root[o])
        first = node.args[0] if node.args else None
        if not isinstance(first, torch.fx.Node) or first not in root:
            continue
        if _writes_first_arg(gm, node):
            mutated.add(root[first])
            root[node] = root[first]  # `y = x.add_(1)` is `x`
        elif _aliases_first_arg(node):
            root[node] = root[first]
    return mutated


def ineligible_reason(
    args: Sequence[Any], names: Sequence[str], mutated: AbstractSet[int] = frozenset()
) -> str | None:
    """Why these call arguments cannot run through a CUDA graph, naming the
    input (`input 2 (x) is on cpu`), or None when they can."""

    def label(i: int) -> str:
        return f"input {i} ({names[i]})" if i < len(names) else f"input {i}"

    devices: dict[torch.device, int] = {}
    for i, a in enumerate(args):
        if not isinstance(a, torch.Tensor):
            continue
        if i in mutated:
            return f"{label(i)} is mutated by the graph"
        if a.device.type != "cuda":
            return f"{label(i)} is on {a.device.type}"
        devices.setdefault(a.device, i)
    if len(devices) > 1:
        where = ", ".join(f"{label(i)} on {d}" for d, i in devices.items())
        return f"inputs are on several devices: {where}"
    if not devices:
        return "no input is a CUDA tensor"
    return None


@dataclass
class _Captured:
    graph: Any
    """torch.cuda.CUDAGraph"""
    static_inputs: list[Any]
    static_outputs: list[Any]
    copy_from: list[int | None]
    """Per program input: the call argument copied into its static buffer, or None."""


def _graph_key(inputs: Sequence[Any]) -> tuple[Any, ...]:
    key: list[Any] = []
    for x in inputs:
        if isinstance(x, torch.Tensor):
            key.append((x.shape, x.stride(), x.dtype, x.device))
        else:
            key.append((type(x), x))
    return tuple(key)


@dataclass
class CudaGraphRunner:
    """Runs one specialization's program through captured CUDA graphs.

    `arg_of_input[j]` is the call argument program input `j` is (None for a
    parameter or buffer, which the capture uses in place)."""

    program: Callable[[Sequence[Any]], list[Any]]
    arg_of_input: Sequence[int | None]
    names: Sequence[str]
    mutated: set[int] = field(default_factory=set)
    graphs: dict[tuple[Any, ...], _Captured] = field(default_factory=dict)
    _logged: set[str] = field(default_factory=set)

    def _without_graph(self, reason: str, inputs: Sequence[Any]) -> list[Any]:
        if reason not in self._logged:
            self._logged.add(reason)
            log.info("fusec: not using a CUDA graph: %s", reason)
        return self.program(inputs)

    def __call__(self, args: Sequence[Any], inputs: Sequence[Any]) -> list[Any]:
        reason = ineligible_reason(args, self.names, self.mutated)
        if reason is not None:
            return self._without_graph(reason, inputs)
        # Parameters are not copied: their addresses are part of the key.
        key = _graph_key(
            [
                x if a is not None else ("param", _ptr(x))
                for x, a in zip(inputs, self.arg_of_input, strict=True)
            ]
        )
        captured = self.graphs.get(key)
        if captured is None:
            if len(self.graphs) >= MAX_GRAPHS:
                return self._without_graph(
                    f"more than {MAX_GRAPHS} input shapes or scalar values were captured",
                    inputs,
                )
            captured = self.graphs[key] = self._capture(inputs)
        else:
            for static, src in zip(captured.static_inputs, inputs, strict=True):
                if isinstance(static, torch.Tensor) and static is not src:
                    static.copy_(src)
        captured.graph.replay()
        return [self._output(o, captured, args) for o in captured.static_outputs]

    def _output(self, out: Any, captured: _Captured, args: Sequence[Any]) -> Any:
        if not isinstance(out, torch.Tensor):
            return out
        for static, a in zip(captured.static_inputs, captured.copy_from, strict=True):
            if out is static:  # the graph returns an input itself
                return args[a] if a is not None else static
        # The next replay overwrites the static outputs.
        return out.clone()

    def _capture(self, inputs: Sequence[Any]) -> _Captured:
        static: list[Any] = []
        copy_from: list[int | None] = []
        device: torch.device | None = None
        for x, a in zip(inputs, self.arg_of_input, strict=True):
            if isinstance(x, torch.Tensor) and a is not None:
                buf = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device=x.device)
                buf.copy_(x)
                static.append(buf)
                copy_from.append(a)
                device = x.device
            else:
                static.append(x)
                copy_from.append(None)
        assert device is not None
        with torch.cuda.device(device):
            stream = torch.cuda.Stream(device)
            stream.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(stream):
                self.program(static)  # warm-up: modules load, the allocator fills
            torch.cuda.current_stream(device).wait_stream(stream)
            torch.cuda.synchronize(device)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                outputs = self.program(static)
        log.info("fusec: captured a CUDA graph on %s", device)
        return _Captured(graph, static, list(outputs), copy_from)


def _ptr(x: Any) -> Any:
    return x.data_ptr() if isinstance(x, torch.Tensor) else x
