"""What an import produces (`ImportedGraph`, the opaque calls the runtime makes)
and the exception a handler raises to leave a node to PyTorch (`NotMapped`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from fusec.frontend.size_checks import SizeCheck
from torch import nn
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation


class NotMapped(Exception):
    """Raised by a handler: this node has no `aten` form here; the importer
    makes it an `aten.opaque` op (run through PyTorch) and records the message
    as the reason (`ImportedGraph.opaque_reasons`)."""


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


@dataclass
class ImportedGraph:
    """An imported graph and what the runtime needs to run it."""

    module: ModuleOp
    func: func.FuncOp
    inputs: list[tuple[str, Any]]
    """One entry per function argument: ("arg", i) is the caller's i-th argument,
    ("attr", "lin.weight") a parameter or buffer read from the module each call."""
    outputs: Any
    """The output structure: `Ret(i)` for the i-th returned value, `Const` leaves."""
    opaque: dict[str, OpaqueCall] = field(default_factory=dict)
    shape_dependent: bool = False
    origins: dict[Operation, torch.fx.Node] = field(default_factory=dict)
    """The fx node each imported op came from (for explanations and logs)."""
    opaque_reasons: dict[str, str] = field(default_factory=dict)
    """Why a node (by name) became `aten.opaque`."""
    size_checks: tuple[SizeCheck, ...] = ()
    """Classes of argument sizes the import depends on (`fusec.frontend.size_checks`)."""
