"""Rows picked by an `arange`, as a view of the table: position embeddings.

GPT-2 (and every model with learned absolute positions) looks its position
embeddings up with ids it makes per call, `arange(past, past + seq)`: the
lookup is a gather through PyTorch (`aten.embedding`, one ATen call and a
copy of the rows) of rows that are simply consecutive. Where the ids are an
`arange` of step 1 with bounds known at import time (possibly shifted by a
constant and reshaped, which keeps their order), the lookup is the rows
`start .. start + n` of the table, reshaped to the ids' shape, a view the
kernel adding the token embeddings reads in place:

    %i = aten.opaque "aten.arange.default"()              (0, 1, ..., 63)
    %u = aten.unsqueeze %i dim = 0
    %e = aten.opaque "aten.embedding.default"(%w, %u)     (%w : 1024 x 128)
->
    %n = aten.narrow %w dim = 0 start = 0 length = 64
    %e = aten.reshape %n : tensor<64x128xf32> -> tensor<1x64x128xf32>

Only the forward values are changed: `embedding`'s backward (AOTAutograd's
`embedding_dense_backward`) reads the ids, which stay in the graph for it.
Ids out of the table's range are left to PyTorch, which raises as eager does.
Other ids import as `aten.embedding`, which `fuse-gathers` moves into the
kernel that reads the rows.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
import torch.nn.functional as F
from fusec.codegen.torch_ops import DTYPES_OF_TORCH
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend import torch_shapes
from fusec.frontend.imported import NotMapped
from fusec.frontend.registry import register, register_aten
from xdsl.dialects.builtin import IntegerAttr, IntegerType, TensorType, i32
from xdsl.ir import SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer

A = torch.ops.aten

_ORDER_KEEPING: frozenset[Any] = frozenset(
    {A.unsqueeze.default, A.view.default, A.reshape.default, A._unsafe_view.default}
    | {torch.unsqueeze, torch.reshape, "unsqueeze", "view", "reshape"}
)
"""Ops over the ids that keep their row-major order (views of a contiguous
`arange`), as ATen graphs and Dynamo's torch-level graphs (methods by name) write them."""

_ADDS: frozenset[Any] = frozenset({A.add.Tensor, A.add.Scalar, operator.add, torch.add, "add"})

_ARANGES: frozenset[Any] = frozenset(
    {A.arange.default, A.arange.start, A.arange.start_step, torch.arange}
)

_ARANGE_KWARGS = frozenset({"dtype", "device", "layout", "pin_memory", "requires_grad"})


def consecutive_ids(ctx: Importer, ids: Any) -> tuple[int, int] | None:
    """(first, count) when `ids` holds `first, first + 1, ..., first + count - 1`
    in row-major order, made by a step-1 integer `arange` of bounds known at
    import time, shifted by constants and reshaped; else None."""
    shift = 0
    node = ids
    while isinstance(node, torch.fx.Node) and node.op in ("call_function", "call_method"):
        target, args = node.target, node.args
        if target in _ORDER_KEEPING and not any(isinstance(a, torch.dtype) for a in args):
            node = args[0]
        elif target in _ADDS and len(args) == 2 and not node.kwargs:
            try:
                c = ctx.const(args[1])
            except NotMapped:
                return None
            if type(c) is not int:
                return None
            shift += c
            node = args[0]
        elif target in _ARANGES:
            return _arange_bounds(ctx, node, shift)
        else:
            return None
    return None


def _arange_bounds(ctx: Importer, node: torch.fx.Node, shift: int) -> tuple[int, int] | None:
    if not set(node.kwargs) <= _ARANGE_KWARGS or node.kwargs.get("dtype") not in (
        None,
        torch.int64,
        torch.int32,
    ):
        return None
    try:
        bounds = ctx.const(list(node.args))
    except NotMapped:  # a symbolic bound: a size known only per call
        return None
    if not 1 <= len(bounds) <= 3 or not all(type(b) is int for b in bounds):
        return None
    start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
    if step != 1 or end <= start:
        return None
    return start + shift, end - start


_FRESH: frozenset[Any] = frozenset(
    {A.add.Tensor, A.sub.Tensor, A.mul.Tensor, A.div.Tensor}
    | {operator.add, operator.sub, operator.mul, operator.truediv}
    | {torch.add, torch.sub, torch.mul, torch.div, "add", "sub", "mul", "div"}
)
"""Ops whose result is a new tensor whatever their inputs: the rows' view stops there."""


def _escapes(node: torch.fx.Node) -> bool:
    """Whether `node`'s value may leave the graph as itself or an alias of it:
    eager's `embedding` makes a new tensor, and a view of the table handed out
    would let a write to it change the weights. Every reader but `_FRESH`'s
    arithmetic may return an alias (a view, `.to()` of the same device,
    dropout in eval), so the walk goes on through it."""
    seen: set[torch.fx.Node] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        for user in n.users:
            if user.op == "output":
                return True
            if user.target not in _FRESH and user not in seen:
                seen.add(user)
                stack.append(user)
    return False


def embedding_of_consecutive_ids(ctx: Importer, weight: Any, ids: Any) -> SSAValue | None:
    """`embedding(weight, ids)` as a narrow view of `weight` reshaped to the
    result's shape, when `consecutive_ids` reads `ids`, they are rows of a 2-d
    `weight` of static row count, and only arithmetic reads the rows (the view
    never leaves the graph: `_escapes`); else None."""
    assert ctx.node is not None
    pos = consecutive_ids(ctx, ids)
    w = ctx.tensor(weight)
    t = w.type
    if pos is None or not isinstance(t, TensorType) or t.get_num_dims() != 2:
        return None
    # The graph walk last: most lookups (token ids) are no `arange` at all.
    if _escapes(ctx.node):
        return None
    first, count = pos
    rows = t.get_shape()[0]
    if rows < 0 or first < 0 or first + count > rows:
        return None
    props = {
        "dim": IntegerAttr(0, inf.I64),
        "start": IntegerAttr(first, inf.I64),
        "length": IntegerAttr(count, inf.I64),
    }
    narrow = torch_shapes.typed(ctx, aten.NarrowOp, w, props, [count, t.get_shape()[1]])
    out = list(ctx.real[ctx.node].shape)  # type: ignore[index]
    return ctx.add_op(aten.ReshapeOp(narrow, out)).results[0]


@register_aten(A.embedding)
def _aten_embedding(
    ctx: Importer,
    weight: Any,
    ids: Any,
    padding_idx: Any = -1,
    scale: Any = False,
    sparse: Any = False,
) -> SSAValue:
    """Rows picked by a step-1 `arange` are a narrow view of the table; other
    ids are an `aten.embedding`, which a kernel reading the rows gathers
    (`fuse-gathers`; the padding and gradient flags change only the backward)."""
    rows = embedding_of_consecutive_ids(ctx, weight, ids)
    if rows is not None:
        return rows
    w, i = ctx.tensor(weight), ctx.tensor(ids)
    if not isinstance(w.type, TensorType) or w.type.get_num_dims() != 2:
        raise NotMapped("embedding of a table that is not 2-d")
    if not isinstance(i.type, TensorType) or i.type.get_element_type() not in (inf.I64, i32):
        raise NotMapped("embedding with indices that are not i64 or i32")
    return ctx.add_op(aten.EmbeddingOp(w, i)).results[0]


@register(F.embedding)
def _embedding(
    ctx: Importer,
    ids: Any,
    weight: Any,
    padding_idx: Any = None,
    max_norm: Any = None,
    *_: Any,
    **__: Any,
) -> SSAValue:
    """`F.embedding` as Dynamo's torch-level graphs call it; a `max_norm`
    renormalizes the table's rows in place first: left to PyTorch."""
    if ctx.const(max_norm) is not None:
        raise NotMapped("embedding with max_norm")
    return _aten_embedding(ctx, weight, ids)


def adds_int_zero(ctx: Importer, a: Any, b: Any) -> bool:
    """`a + 0` of an integer `arange` that only this add reads (HF's position
    ids, `arange(n) + past_length` at length 0): the add changes no value or
    dtype, and the arange is a new tensor no one else sees, so no one can tell
    the add's result from it. (Not for a view, which would alias its base; not
    for floats: `-0.0 + 0` is `0.0`.)"""
    if not (isinstance(a, torch.fx.Node) and a.target in _ARANGES and len(a.users) == 1):
        return False
    try:
        zero = ctx.const(b)
    except NotMapped:
        return False
    t = ctx.tensor(a).type
    return (
        type(zero) is int
        and zero == 0
        and isinstance(t, TensorType)
        and isinstance(t.get_element_type(), IntegerType)
        and DTYPES_OF_TORCH.get(ctx.real[ctx.node].dtype) == t.get_element_type()  # type: ignore[index]
    )
