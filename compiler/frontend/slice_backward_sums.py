"""The gradient of a `cat` or a `stack`, as AOTAutograd writes it, back to one `aten.cat`.

The backward of `cat([a, b], d)` slices the gradient into the parts; the backward
of each slice pads its part back to the full size with zeros
(`slice_backward`), and the padded tensors are added. Llama's RoPE
(`rotate_half`: `cat([-x2, x1], -1)`) makes four such sums per layer in its
backward. Picking entries (`x[0], x[1], x[2]` of a fused q/k/v projection, as
`nn.MultiheadAttention` does) pads each gradient with `select_backward` the same
way. Where the padded ranges of one dim (step 1) tile it, one after the other,
their sum is the `cat` of the parts (a picked entry's gradient unsqueezed),
which `fuse` makes an exit of the kernel computing them instead of padded
copies and adds run through PyTorch:

    %p = aten.opaque "aten.slice_backward.default"(%a)   (a in [0, 4) of 8, zeros elsewhere)
    %q = aten.opaque "aten.slice_backward.default"(%b)   (b in [4, 8) of 8)
    %r = aten.add %p, %q
->
    %r = aten.cat %a, %b dim = 3
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from fusec.dialects import aten
from fusec.dialects import inference as inf
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Operation, SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer

_SLICE_BACKWARD = torch.ops.aten.slice_backward.default
_SELECT_BACKWARD = torch.ops.aten.select_backward.default
_PADS = (_SLICE_BACKWARD, _SELECT_BACKWARD)


def _range(ctx: Importer, node: torch.fx.Node) -> tuple[list[Any], int, int, int, int] | None:
    """(sizes as written, dim, its size, start, end) of the range a step-1
    `slice_backward` or a `select_backward` pads, when the padded dim has a size
    known at import time (the others may be symbolic)."""
    try:
        if node.target is _SELECT_BACKWARD:
            _, sizes, dim, index = node.args
            dim, start = ctx.const((dim, index))
            end, step = None, 1
        else:
            _, sizes, dim, start, end, step = node.args
            dim, start, end, step = ctx.const((dim, start, end, step))
        dim %= len(sizes)
        n = ctx.const(sizes[dim])
    except Exception:  # noqa: BLE001 - a symbolic size: not known at import time
        return None
    if step != 1 or not isinstance(n, int):
        return None
    if end is None:  # a picked entry: one index
        start = start + n if start < 0 else start
        return (list(sizes), dim, n, start, start + 1) if 0 <= start < n else None
    start, end = (max(0, min(n, v + n if v < 0 else v)) for v in (start, end))
    return list(sizes), dim, n, start, end


def _padded(p: Any, user: torch.fx.Node) -> bool:
    """`p` is a `slice_backward` or `select_backward` only `user` reads."""
    return isinstance(p, torch.fx.Node) and p.target in _PADS and list(p.users) == [user]


def _plain_add(node: Any, user: torch.fx.Node | None) -> bool:
    """`node` is an `a + b` (alpha 1), read only by `user` (None: by anything)."""
    return (
        isinstance(node, torch.fx.Node)
        and node.target is torch.ops.aten.add.Tensor
        and not node.kwargs
        and (user is None or list(node.users) == [user])
    )


def _terms(root: torch.fx.Node) -> tuple[list[torch.fx.Node], list[Any], list[torch.fx.Node]]:
    """The terms of the tree of plain adds at `root` (each inner one read only by
    the add above it): the padded ones, the others, and the inner adds."""
    pads: list[torch.fx.Node] = []
    others: list[Any] = []
    inner: list[torch.fx.Node] = []
    stack = list(root.args[:2])
    user = {id(a): root for a in stack}
    while stack:
        term = stack.pop()
        above = user[id(term)]
        if _plain_add(term, above):
            inner.append(term)
            for a in term.args[:2]:
                user[id(a)] = term
                stack.append(a)
        elif _padded(term, above):
            pads.append(term)
        else:
            others.append(term)
    return pads, others, inner


def _tiling(ctx: Importer, pads: list[torch.fx.Node]) -> tuple[int, list[torch.fx.Node]] | None:
    """(dim, the pads in order) when the pads' ranges tile one dim of one size,
    one after the other."""
    ranges = [_range(ctx, p) for p in pads]
    if any(r is None for r in ranges):
        return None
    known = [r for r in ranges if r is not None]
    sizes, dim = known[0][0], known[0][1]
    if any(r[0] != sizes or r[1] != dim for r in known):
        return None
    order = sorted(range(len(pads)), key=lambda i: known[i][3])
    at = 0
    for i in order:
        _, _, _, start, end = known[i]
        if start != at or end <= start:
            return None
        at = end
    return (dim, [pads[i] for i in order]) if at == known[0][2] else None


def cat_of_slice_backwards(ctx: Importer, a: Any, b: Any, alpha: Any) -> SSAValue | None:
    """The current node is `a + b` (alpha 1). When it is the root of a tree of
    adds whose terms are padded parts tiling one dim (each read only by its add)
    and at most one other term `t` (AOTAutograd accumulates a gradient term by
    term): the `cat` of the parts, or `t + cat`. None otherwise (the add is
    imported as written). Only a padding zero is added to each element either
    way (a `-0.0` part comes out `-0.0`, where eager's `+ 0.0` gives `+0.0`)."""
    add = ctx.node
    if ctx.const(alpha) != 1 or not _plain_add(add, None):
        return None
    pads, others, inner = _terms(add)
    if len(pads) < 2 or len(others) > 1:
        return None
    tiled = _tiling(ctx, pads)
    if tiled is None:
        return None
    # The other term's value first: nothing may fail once the cat replaced the pads.
    rest = ctx.operand(others[0]) if others else None
    if rest is not None and not isinstance(rest.type, TensorType):
        return None
    replaced = {*pads, *inner}
    cat = _cat(ctx, *tiled, [n for n in add.graph.nodes if n in replaced], rest)
    if cat is None or rest is None:
        return cat
    return ctx.add_op(aten.AddOp(rest, cat)).results[0]


def _cat(
    ctx: Importer,
    dim: int,
    parts: list[torch.fx.Node],
    dead: list[torch.fx.Node],
    rest: SSAValue | None,
) -> SSAValue | None:
    """`cat` along `dim` of the parts the pads `parts` pad; the ops of `dead`
    (their IR values now unread, in graph order) are dropped. `rest`, the sum's
    other term, must have their dtype too."""
    grads = [ctx.tensor(p.args[0]) for p in parts]
    values = [ctx.tensor(n) for n in dead]
    typed = (*grads, *values, *([rest] if rest is not None else []))
    if len({inf.tensor_type(v.type).get_element_type() for v in typed}) != 1:
        return None  # a promoting add: leave it as written
    owners = {v.owner for v in values}
    if any(not isinstance(o, Operation) or o.parent is None for o in owners):
        return None  # imported otherwise already (an earlier sum took it in)
    if any(u.operation not in owners for v in values for u in v.uses):
        return None  # an earlier node read one: it stays as computed
    pieces = [
        ctx.add_op(aten.UnsqueezeOp([g], {"dim": IntegerAttr(dim, inf.I64)})).results[0]
        if p.target is _SELECT_BACKWARD
        else g
        for p, g in zip(parts, grads, strict=True)
    ]
    cat = ctx.add_op(aten.CatOp(pieces, dim)).results[0]
    for node, value in reversed(list(zip(dead, values, strict=True))):  # readers first
        op = value.owner
        assert isinstance(op, Operation)
        ctx.drop(op, node)
    return cat
