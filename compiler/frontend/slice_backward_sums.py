"""The gradient of a `cat`, as AOTAutograd writes it, back to one `aten.cat`.

The backward of `cat([a, b], d)` slices the gradient into the parts; the backward
of each slice pads its part back to the full size with zeros
(`slice_backward`), and the two padded tensors are added. Llama's RoPE
(`rotate_half`: `cat([-x2, x1], -1)`) makes four such sums per layer in its
backward. Where the two slices are complementary (step 1, one after the other,
covering the dim), their sum is the `cat` of the parts, which `fuse` makes an
exit of the kernel computing them instead of two padded copies and an add run
through PyTorch:

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
from fusec.frontend import torch_table
from xdsl.ir import Operation, SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer

_SLICE_BACKWARD = torch.ops.aten.slice_backward.default


def _range(ctx: Importer, node: torch.fx.Node) -> tuple[list[Any], int, int, int, int] | None:
    """(sizes as written, dim, its size, start, end) of a step-1 `slice_backward`
    whose sliced dim has a size known at import time (the others may be symbolic)."""
    _, sizes, dim, start, end, step = node.args
    try:
        dim, start, end, step = ctx.const((dim, start, end, step))
        dim %= len(sizes)
        n = ctx.const(sizes[dim])
    except Exception:  # noqa: BLE001 - a symbolic size: not known at import time
        return None
    if step != 1 or not isinstance(n, int):
        return None
    start, end = (max(0, min(n, v + n if v < 0 else v)) for v in (start, end))
    return list(sizes), dim, n, start, end


def _padded(p: Any, user: torch.fx.Node) -> bool:
    """`p` is a `slice_backward` only `user` reads."""
    return isinstance(p, torch.fx.Node) and p.target is _SLICE_BACKWARD and list(p.users) == [user]


def _plain_add(node: Any, user: torch.fx.Node) -> bool:
    """`node` is an `a + b` (alpha 1) only `user` reads."""
    return (
        isinstance(node, torch.fx.Node)
        and node.target is torch.ops.aten.add.Tensor
        and not node.kwargs
        and list(node.users) == [user]
    )


def _complementary(
    ctx: Importer, parts: tuple[torch.fx.Node, torch.fx.Node]
) -> tuple[int, int] | None:
    """(dim, index of the part that comes first) when the two `slice_backward`s
    pad complementary step-1 slices of one dim, one after the other."""
    ranges = [_range(ctx, p) for p in parts]
    if ranges[0] is None or ranges[1] is None:
        return None
    (sizes, dim, n, s0, e0), (other, dim1, _, s1, e1) = ranges
    if sizes != other or dim != dim1:
        return None
    first = 0 if s0 <= s1 else 1
    (fs, fe), (ss, se) = ((s0, e0), (s1, e1)) if first == 0 else ((s1, e1), (s0, e0))
    if fs == 0 and fe == ss and se == n and fe > fs and se > ss:
        return dim, first
    return None


def cat_of_slice_backwards(ctx: Importer, a: Any, b: Any, alpha: Any) -> SSAValue | None:
    """The current node is `a + b` (alpha 1). When it adds the `slice_backward`s of
    complementary slices, each read only by it: the `cat` of the parts. When it
    adds one to a sum `t + c` with `c` the other (AOTAutograd accumulates a
    gradient term by term): `t + cat`. None otherwise (the add is imported as
    written). Only a padding zero is added to each element either way (a `-0.0`
    part comes out `-0.0`, where eager's `+ 0.0` gives `+0.0`)."""
    add = ctx.node
    if ctx.const(alpha) != 1:
        return None
    if _padded(a, add) and _padded(b, add):
        return _cat(ctx, (a, b), [a, b])
    for pad, inner in ((a, b), (b, a)):
        if not (_padded(pad, add) and _plain_add(inner, add)):
            continue
        x, y = inner.args
        for other, rest in ((x, y), (y, x)):
            if _padded(other, inner):
                cat = _cat(ctx, (other, pad), [other, inner])
                if cat is not None:
                    return torch_table.binary(ctx, aten.AddOp, rest, cat)
    return None


def _cat(
    ctx: Importer, parts: tuple[torch.fx.Node, torch.fx.Node], dead: list[torch.fx.Node]
) -> SSAValue | None:
    """`cat` of the parts the two `slice_backward`s pad; the ops of `dead` (their
    IR values now unread) are dropped."""
    found = _complementary(ctx, parts)
    if found is None:
        return None
    dim, first = found
    ordered = (parts[first], parts[1 - first])
    grads = [ctx.tensor(p.args[0]) for p in ordered]
    values = [ctx.tensor(n) for n in dead]
    if len({inf.tensor_type(v.type).get_element_type() for v in (*grads, *values)}) != 1:
        return None  # a promoting add: leave it as written
    owners = {v.owner for v in values}
    if any(not isinstance(o, Operation) or o.parent is None for o in owners):
        return None  # imported otherwise already (an earlier sum took it in)
    if any(u.operation not in owners for v in values for u in v.uses):
        return None  # an earlier node read one: it stays as computed
    cat = ctx.add_op(aten.CatOp(grads, dim)).results[0]
    for node, value in reversed(list(zip(dead, values, strict=True))):  # readers first
        op = value.owner
        assert isinstance(op, Operation)
        ctx.drop(op, node)
    return cat
