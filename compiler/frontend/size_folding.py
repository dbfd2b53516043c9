"""How the importer reads sizes: a size query (`x.size(0)`, `x.shape`) and
arithmetic on known values fold into constants (`Const`), except in a graph
with symbolic sizes, where a size stays a runtime value:

    n = x.size(0)          static graph:   Const(4, from_shape=True)
                           symbolic graph: %n = aten.sym_size %x dim = 0
    s = x.shape            Const(torch.Size([4, 16]), source=%x)  (`aten.size %x` if returned)
    y = x.view(n * 2, -1)  the product folds too: Const(8, from_shape=True)
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from fusec.dialects import aten
from fusec.frontend.fx_nodes import SHAPE_QUERIES, flat_nodes
from fusec.frontend.graph_values import Const
from fusec.frontend.size_checks import SizeCheck
from fusec.frontend.value_types import holds_symbol, is_symbol
from xdsl.dialects.builtin import TensorType
from xdsl.ir import BlockArgument, Operation, SSAValue


class SizeFolding:
    """The size-folding part of `fusec.frontend.importer.Importer`."""

    env: dict[torch.fx.Node, Any]
    inputs: list[tuple[str, Any]]
    size_checks: list[SizeCheck]

    if TYPE_CHECKING:

        def add_op(self, op: Operation) -> Operation: ...
        def const(self, a: Any) -> Any: ...
        def make_opaque(self, node: torch.fx.Node, value: Any) -> Any: ...

    def fold_symbolic(self, node: torch.fx.Node, value: Any) -> Any:
        """Sizes of a graph with symbolic shapes: `x.size(d)` and `x.shape[d]` are
        `aten.sym_size` (a runtime i64); a whole `x.size()` is a `Const` that only
        `aten.size` may read (`Const.symbolic`). Other values are left to `fold`."""
        recorded = node.meta.get("example_value", node.meta.get("val"))
        if not holds_symbol(recorded):
            return None
        is_query = (node.op == "call_method" and node.target in SHAPE_QUERIES) or (
            node.op == "call_function" and node.target is getattr and node.args[1] in SHAPE_QUERIES
        )
        first = node.args[0] if node.args and isinstance(node.args[0], torch.fx.Node) else None
        base = self.env.get(first) if first is not None else None
        if is_query and node.target in ("size", "shape", getattr) and isinstance(base, SSAValue):
            dims = node.args[1:] if node.op == "call_method" else ()
            dim = node.kwargs.get("dim", dims[0] if dims else None)
            if dim is None:
                return Const(value, True, self.size_source(node, value), symbolic=True)
            return self.add_op(aten.SymSizeOp(base, self.const(dim))).results[0]
        if (
            node.op == "call_function"
            and node.target is operator.getitem
            and isinstance(base, Const)
            and base.symbolic
            and base.source is not None
            and isinstance(node.args[1], int)
        ):
            return self.add_op(aten.SymSizeOp(base.source, node.args[1])).results[0]
        if is_query:  # numel() and the like: read per call, through PyTorch
            return self.make_opaque(node, value)
        return None

    def fold_float_argument(self, node: torch.fx.Node, value: Any) -> Const | None:
        """`t.item()` of a Python float that Dynamo passes as a tensor: a constant
        of the program, its value part of the key.

            eps = self.eps (1e-5)   Dynamo, `dynamic=True`:  %eps: f64[] (an argument)
                                                           item = eps.item()
            layer_norm(x, ..., eps=item)  ->  eps 1e-05, SizeCheck(arg, 0, "value")

        With symbolic sizes Dynamo does not specialize a module's float attributes
        (a batch norm's eps and momentum, a scaling factor) but reads them per call;
        an op that needs its eps at import time (every normalization) would run
        through PyTorch, and with it the pointwise work around it. Dynamo with
        static shapes bakes such a float in and guards its value; the key's value
        check does the same here: another value compiles another specialization."""
        if node.op != "call_method" or node.target != "item" or len(node.args) != 1:
            return None
        # Dynamo breaks the graph at a user's `.item()` (unless
        # `capture_scalar_outputs`), so the `.item()` of a 0-dim placeholder it
        # records is of a float it wrapped itself.
        base = node.args[0]
        v = self.env.get(base) if isinstance(base, torch.fx.Node) else None
        if (
            not isinstance(base, torch.fx.Node)
            or base.op != "placeholder"
            or not isinstance(value, float)
            or not isinstance(v, BlockArgument)
            or not isinstance(v.type, TensorType)
            or v.type.get_num_dims() != 0
        ):
            return None
        where, index = [s for s in self.inputs if s[0] != "skip"][v.index]
        if where != "arg":
            return None
        self.size_checks.append(SizeCheck(index, 0, "value"))
        return Const(value)

    def fold(self, node: torch.fx.Node, value: Any) -> Const | None:
        """Sizes, dtypes and arithmetic on known values are constants."""
        if node.op == "call_method" and node.target in SHAPE_QUERIES:
            return Const(value, from_shape=True, source=self.size_source(node, value))
        if node.op == "call_function" and node.target is getattr and node.args[1] in SHAPE_QUERIES:
            return Const(value, from_shape=True, source=self.size_source(node, value))
        if is_legacy_empty(node, value):
            return Const(value)
        if isinstance(value, torch.Tensor) or node.op == "call_module":
            return None
        if node.op == "call_function" and node.target is operator.getitem:
            base = self.env[node.args[0]]
            if isinstance(base, tuple) and isinstance(node.args[1], int):
                return None
        leaves = [a for a in flat_nodes((node.args, node.kwargs))]
        if all(isinstance(self.env[a], Const) for a in leaves):
            from_shape = any(self.env[a].from_shape for a in leaves)
            if isinstance(value, tuple) and any(isinstance(x, torch.Tensor) for x in value):
                return None
            # Arithmetic on symbolic sizes stays symbolic (never a constant),
            # unless the graph records its result as a fixed int (`x.shape[-1]`
            # of a dim Dynamo specialized).
            symbolic = any(self.env[a].symbolic for a in leaves)
            recorded = node.meta.get("example_value", node.meta.get("val"))
            if symbolic and isinstance(recorded, int | torch.SymInt) and not is_symbol(recorded):
                symbolic = False
            return Const(value, from_shape, symbolic=symbolic)
        return None

    def size_source(self, node: torch.fx.Node, value: Any) -> SSAValue | None:
        """The tensor a whole size (`x.shape`, `x.size()`) is read from, if any."""
        whole = len(node.args) == (1 if node.op == "call_method" else 2) and not node.kwargs
        if not whole or not isinstance(value, torch.Size):
            return None
        base = node.args[0]
        v = self.env.get(base) if isinstance(base, torch.fx.Node) else None
        return v if isinstance(v, SSAValue) and isinstance(v.type, TensorType) else None


CAT_TARGETS = (torch.cat, torch.concat, torch.ops.aten.cat.default)


def skipped_by_cat(value: Any) -> bool:
    """`torch.cat` skips a 1-D tensor of no elements (it still takes part in promotion)."""
    return isinstance(value, torch.Tensor) and value.dim() == 1 and value.numel() == 0


def _lifted_constant(node: torch.fx.Node) -> bool:
    """AOTAutograd's spelling of a tensor made from constants: a fresh copy of a
    tensor constant of the graph module (`lift_fresh_copy(_tensor_constant0)`)."""
    return node.target is torch.ops.aten.lift_fresh_copy.default and all(
        n.op == "get_attr" for n in node.all_input_nodes
    )


def is_legacy_empty(node: torch.fx.Node, value: Any) -> bool:
    """A 1-D tensor of no elements made from constants (`torch.tensor([])`) and
    read only by `cat`s, which skip it (PyTorch's legacy rule): a constant of the
    program, so the cat imports without it. Hugging Face's `DynamicCache` starts
    each layer's keys and values as one:

        tensor = torch.tensor([], dtype=torch.float32)
        keys = torch.cat([tensor, key_states], dim=-2)   ->   aten.cat %key_states

    (in an AOTAutograd graph, `lift_fresh_copy` of a tensor constant).
    """
    return (
        skipped_by_cat(value)
        and node.op == "call_function"
        and (not node.all_input_nodes or _lifted_constant(node))
        and bool(node.users)
        and all(u.op == "call_function" and u.target in CAT_TARGETS for u in node.users)
    )
