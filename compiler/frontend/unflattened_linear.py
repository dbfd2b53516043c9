"""A linear layer's unflattening view, in a graph with symbolic sizes, as `aten.linear`.

ATen graphs flatten an N-d input around every matrix product and view the
product back: `view(addmm(b, view(x, [s0*s1, K]), w), [s0, s1, N])`. With static
sizes `raise-linear` makes that one `aten.linear`. With symbolic sizes the view
back names two runtime sizes, which `aten.reshape` cannot infer (one `?` only),
so it would run as `aten.opaque`, a barrier between the product and the
activation after it (BERT's bias add and GELU, a kernel with static sizes,
would run through PyTorch). Here the recorded sizes say more than the IR
types: the view's sizes are, symbol for symbol, `x`'s leading sizes, so the
whole pattern is `linear(x, transpose(w), b)`, whose result takes its sizes
from `x` at run time:

    %f = aten.reshape %x : tensor<?x?x32xf32> -> tensor<?x32xf32>
    %m = aten.addmm %b, %f, %w : tensor<96xf32>, tensor<?x32xf32>, tensor<32x96xf32> -> tensor<?x96xf32>
    %r = aten.opaque "aten.view.default"(%m, %s0, %s1) : ... -> tensor<?x?x96xf32>
->
    %f = aten.reshape %x : tensor<?x?x32xf32> -> tensor<?x32xf32>   (dead unless used)
    %t = aten.transpose %w dim0 = 0 dim1 = 1 : tensor<32x96xf32> -> tensor<96x32xf32>
    %r = aten.linear %x, %t, %b : ... -> tensor<?x?x96xf32>

(When `%w` is itself a transpose, the linear reads its input instead.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from fusec.dialects import aten
from fusec.frontend.value_types import recorded_value
from fusec.passes.concat_matmul_sum import transposed
from xdsl.ir import Operation, SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer

A = torch.ops.aten
_FLATTENING = (A.view.default, A._unsafe_view.default, A.reshape.default)


def _same_size(a: Any, b: Any) -> bool:
    """Are two recorded sizes the same, symbol for symbol?"""
    if isinstance(a, torch.SymInt) and (known := a.node.maybe_as_int()) is not None:
        a = known
    if isinstance(b, torch.SymInt) and (known := b.node.maybe_as_int()) is not None:
        b = known
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    if isinstance(a, torch.SymInt) and isinstance(b, torch.SymInt):
        return bool(a.node.expr == b.node.expr)
    return False


def unflattened_linear(ctx: Importer, product: Any) -> SSAValue | None:
    """`linear(x, transpose(w), b)` for the current node when it is the view back
    of `product`, an `addmm`/`mm` of `x` flattened (module docstring); None
    otherwise."""
    view = ctx.node
    if not isinstance(product, torch.fx.Node) or view not in product.users:
        return None
    if product.target is A.addmm.default and not product.kwargs:
        bias, flat, weight = product.args[:3]
    elif product.target is A.mm.default:
        bias, (flat, weight) = None, product.args
    else:
        return None
    if not isinstance(flat, torch.fx.Node) or flat.target not in _FLATTENING:
        return None
    source = flat.args[0]
    x, out = recorded_value(source), recorded_value(view)
    made = recorded_value(product)
    if not all(isinstance(t, torch.Tensor) for t in (x, out, made)):
        return None
    if x.dim() < 3 or out.dim() != x.dim() or made.dim() != 2:
        return None
    if not all(_same_size(a, b) for a, b in zip(out.shape[:-1], x.shape[:-1], strict=True)):
        return None
    if not (_same_size(out.shape[-1], made.shape[-1]) and _same_size(x.shape[-1], _flat_k(flat))):
        return None
    if any(ctx.tensor(product).uses):
        return None  # an earlier node read it: it stays as computed
    b = None if bias is None else ctx.tensor(bias)
    if b is not None and b.type.get_num_dims() != 1:  # type: ignore[attr-defined]
        return None  # `addmm` broadcasts a 2-d bias over rows; `linear` takes a vector
    flips: list[Operation] = []
    operands = [ctx.tensor(source), transposed(ctx.tensor(weight), flips)]
    for flip in flips:
        ctx.add_op(flip)
    if b is not None:
        operands.append(b)
    linear = aten.LinearOp.create(operands=operands, result_types=[ctx.result_type()])
    ctx.add_op(linear)
    # Later nodes may read the product (AOTAutograd saves it for the backward)
    # or the flattened input: the product is then a view of the linear's
    # result (one `?`, inferred), and the flattened input stays.
    product_value = ctx.tensor(product)
    product_shape = list(product_value.type.get_shape())  # type: ignore[attr-defined]
    _drop_unread(ctx, product_value)
    if len(product.users) > 1:
        rows = aten.ReshapeOp(linear.results[0], product_shape)
        ctx.env[product] = ctx.add_op(rows).results[0]
    if list(flat.users) == [product]:
        _drop_unread(ctx, ctx.tensor(flat))
    return linear.results[0]


def _flat_k(flat: torch.fx.Node) -> Any:
    """The columns of the flattened input (its recorded last size)."""
    value = recorded_value(flat)
    return value.shape[-1] if isinstance(value, torch.Tensor) else None


def _drop_unread(ctx: Importer, value: SSAValue) -> None:
    """Drop the op computing `value` when nothing reads it any more."""
    op = value.owner
    if isinstance(op, Operation) and not any(r.uses for r in op.results):
        ctx.drop(op)
