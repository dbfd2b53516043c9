"""The torch-level table, shape part: views and cuts (`view`, `reshape`,
`chunk`, `split`, slicing and integer indices), matrix products and sums.

    x.view(4, -1)        ->  %v = aten.view %x : tensor<4x8xf32> -> tensor<4x8xf32>
    x[:, 1:3]            ->  %s = aten.slice %x dim = 1 start = 1 end = 3 step = 1
    torch.chunk(x, 2, 1) ->  %a, %b = aten.chunk %x chunks = 2 dim = 1

Cuts record which argument dims they cut (`Importer.size_check`), and a size
baked into the IR marks the import shape-dependent (`Importer.bakes_size`).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
import torch.nn.functional as F
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend.graph_values import Const
from fusec.frontend.imported import NotMapped
from fusec.frontend.registry import Handler, register
from fusec.frontend.size_folding import skipped_by_cat
from fusec.frontend.value_types import static_dim
from torch import nn
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, Operation, SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer


def _dims(args: Sequence[Any]) -> list[int]:
    if len(args) == 1 and isinstance(args[0], tuple | list | torch.Size):
        return list(args[0])
    return list(args)


@register(torch.chunk, "chunk")
def chunk(ctx: Importer, x: Any, chunks: Any, dim: Any = 0) -> tuple[SSAValue, ...]:
    v = ctx.tensor(x)
    ctx.size_check(v, ctx.const(dim), "chunk", (ctx.const(chunks),))
    op = aten.ChunkOp.create(
        operands=[v],
        properties={
            "chunks": IntegerAttr(ctx.const(chunks), inf.I64),
            "dim": IntegerAttr(ctx.const(dim), inf.I64),
        },
        result_types=result_types(ctx),
    )
    return tuple(ctx.add_op(op).results)


@register(torch.split, "split")
def _split(
    ctx: Importer, x: Any, split_size_or_sections: Any, dim: Any = 0
) -> tuple[SSAValue, ...]:
    s = ctx.const(split_size_or_sections)
    v, d = ctx.tensor(x), ctx.const(dim)
    props: dict[str, Attribute] = {"dim": IntegerAttr(d, inf.I64)}
    if isinstance(s, int):
        # How many pieces there are depends on the size of `dim` (unless the
        # graph records that size as fixed).
        if not (ctx.symbolic and static_dim(x, d)):
            ctx.bakes_size("split by a piece size")
        props["split_size"] = IntegerAttr(s, inf.I64)
        ctx.size_check(v, d, "split", (s,))
    else:
        props["sizes"] = int_array(list(s))
        ctx.size_check(v, d, "exact")
    op = aten.SplitOp.create(operands=[v], properties=props, result_types=result_types(ctx))
    return tuple(ctx.add_op(op).results)


def int_array(values: list[int]) -> Attribute:

    return DenseArrayBase.from_list(i64, values)


def result_types(ctx: Importer) -> list[Attribute]:
    return ctx.result_types()


@register(torch.cat, torch.concat)
def cat(ctx: Importer, tensors: Any, dim: Any = 0) -> SSAValue:
    # PyTorch skips 1-D tensors of no elements; they still take part in promotion.
    kept = [t for t in tensors if not _skipped_by_cat(ctx, t)]
    if len(kept) < len(tensors):
        out = ctx.real[ctx.node]  # type: ignore[index]
        skipped = [ctx.env[t].value for t in tensors if t not in kept]
        if not kept or any(e.dtype != out.dtype for e in skipped):
            raise NotMapped("cat whose skipped empty tensors decide its dtype")
    return ctx.add_op(aten.CatOp([ctx.tensor(t) for t in kept], ctx.const(dim))).results[0]


def _skipped_by_cat(ctx: Importer, t: Any) -> bool:
    """`t` is a constant that `cat` skips (`size_folding.is_legacy_empty`)."""
    v = ctx.env.get(t) if isinstance(t, torch.fx.Node) else None
    return isinstance(v, Const) and skipped_by_cat(v.value)


def _reshape_like(op_cls: type[aten.ReshapeLikeOp]) -> Handler:
    def handle(ctx: Importer, x: Any, *shape: Any) -> SSAValue:
        reshaped = ctx.symbolic_reshape(x, op_cls)
        if reshaped is not None:
            return reshaped
        sizes = ctx.const(shape)
        if any(isinstance(s, torch.dtype) for s in sizes):
            raise NotMapped("view as dtype")
        if -1 in _dims(sizes):
            ctx.bakes_size("a -1 size")
        out = ctx.real[ctx.node]  # type: ignore[index]
        return ctx.add_op(op_cls(ctx.tensor(x), list(out.shape))).results[0]

    return handle


register("view")(_reshape_like(aten.ViewOp))
register(torch.reshape, "reshape")(_reshape_like(aten.ReshapeOp))


@register(torch.flatten, "flatten")
def _flatten(ctx: Importer, x: Any, start_dim: Any = 0, end_dim: Any = -1) -> SSAValue:
    ctx.const((start_dim, end_dim))
    reshaped = ctx.symbolic_reshape(x)
    if reshaped is not None:
        return reshaped
    # The flattened size is a product of this call's sizes.
    ctx.bakes_size("flatten")
    out = ctx.real[ctx.node]  # type: ignore[index]
    return ctx.add_op(aten.ReshapeOp(ctx.tensor(x), list(out.shape))).results[0]


@register(nn.Flatten)
def _flatten_module(ctx: Importer, mod: nn.Flatten, x: Any) -> SSAValue:
    return _flatten(ctx, x, mod.start_dim, mod.end_dim)


@register(torch.unsqueeze, "unsqueeze")
def unsqueeze(ctx: Importer, x: Any, dim: Any) -> SSAValue:
    op = aten.UnsqueezeOp.create(
        operands=[ctx.tensor(x)],
        properties={"dim": IntegerAttr(ctx.const(dim), inf.I64)},
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


@register(torch.squeeze, "squeeze")
def squeeze(ctx: Importer, x: Any, dim: Any = None) -> SSAValue:
    d = ctx.const(dim)
    if not (d is None or isinstance(d, int)):
        raise NotMapped("squeeze over several dims")
    props = {} if d is None else {"dim": IntegerAttr(d, inf.I64)}
    op = aten.SqueezeOp.create(
        operands=[ctx.tensor(x)], properties=props, result_types=_result_types_one(ctx)
    )
    return ctx.add_op(op).results[0]


def _result_types_one(ctx: Importer) -> list[Attribute]:
    return [ctx.result_type()]


def permute_op(ctx: Importer, x: Any, dims: list[int]) -> SSAValue:
    op = aten.PermuteOp.create(
        operands=[ctx.tensor(x)],
        properties={"dims": int_array(dims)},
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


@register(torch.permute, "permute")
def _permute(ctx: Importer, x: Any, *dims: Any) -> SSAValue:
    return permute_op(ctx, x, _dims(ctx.const(dims)))


@register(torch.transpose, "transpose")
def transpose(ctx: Importer, x: Any, dim0: Any, dim1: Any) -> SSAValue:
    op = aten.TransposeOp.create(
        operands=[ctx.tensor(x)],
        properties={
            "dim0": IntegerAttr(ctx.const(dim0), inf.I64),
            "dim1": IntegerAttr(ctx.const(dim1), inf.I64),
        },
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


@register(torch.t, "t")
def t(ctx: Importer, x: Any) -> SSAValue:
    rank = len(ctx.real[ctx.node].shape)  # type: ignore[index]
    if rank < 2:
        return ctx.tensor(x)
    return transpose(ctx, x, 0, 1)


@register("expand")
def expand(ctx: Importer, x: Any, *size: Any) -> SSAValue:
    sizes = _dims(ctx.const(size))
    if -1 in sizes and not ctx.symbolic:
        # With symbolic sizes a -1 keeps a `?` dim `?` (the type says so).
        ctx.bakes_size("a -1 size")
    op = aten.ExpandOp.create(
        operands=[ctx.tensor(x)],
        properties={"size": int_array(sizes)},
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


@register("expand_as")
def _expand_as(ctx: Importer, x: Any, other: Any) -> SSAValue:
    ctx.bakes_size("expand_as")
    return expand(ctx, x, list(ctx.real[ctx.node].shape))  # type: ignore[index]


@register(torch.narrow, "narrow")
def narrow(ctx: Importer, x: Any, dim: Any, start: Any, length: Any) -> SSAValue:
    v, s0, n = ctx.tensor(x), ctx.const(start), ctx.const(length)
    if s0 >= 0:
        ctx.size_check(v, ctx.const(dim), "fits", (s0 + n,))
    else:
        ctx.size_check(v, ctx.const(dim), "exact")
    op = aten.NarrowOp.create(
        operands=[v],
        properties={
            "dim": IntegerAttr(ctx.const(dim), inf.I64),
            "start": IntegerAttr(ctx.const(start), inf.I64),
            "length": IntegerAttr(ctx.const(length), inf.I64),
        },
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


def typed(
    ctx: Importer,
    op_cls: type[Operation],
    operand: SSAValue,
    props: dict[str, Attribute],
    shape: list[int],
) -> SSAValue:
    t = operand.type
    assert isinstance(t, TensorType)
    op = op_cls.create(
        operands=[operand],
        properties=props,
        result_types=[TensorType(t.get_element_type(), shape)],
    )
    ctx.add_op(op)
    op.verify()
    return op.results[0]


@register(operator.getitem)
def getitem(ctx: Importer, base: Any, index: Any) -> Any:
    v = ctx.env[base] if isinstance(base, torch.fx.Node) else None
    if isinstance(v, tuple):
        return v[ctx.const(index)]
    x = ctx.tensor(base)
    index = ctx.const(index)
    items = list(index) if isinstance(index, tuple) else [index]
    assert isinstance(x.type, TensorType)
    shape = list(x.type.get_shape())
    if items.count(Ellipsis) > 1:
        raise NotMapped("several ellipses")
    if Ellipsis in items:
        pos = items.index(Ellipsis)
        named = len([i for i in items if i is not None and i is not Ellipsis])
        items[pos : pos + 1] = [slice(None)] * (len(shape) - named)
    dim = 0
    for item in items:
        if item is None:
            shape.insert(dim, 1)
            x = typed(ctx, aten.UnsqueezeOp, x, {"dim": IntegerAttr(dim, inf.I64)}, shape)
            dim += 1
        elif isinstance(item, slice):
            if item == slice(None):
                dim += 1
                continue
            step = 1 if item.step is None else item.step
            start = 0 if item.start is None else item.start
            end = 2**63 - 1 if item.stop is None else item.stop
            if not all(isinstance(s, int) for s in (start, end, step)):
                raise NotMapped("slice bounds")
            ctx.size_check(x, dim, "slice", (start, end, step))
            shape[dim] = len(range(*slice(start, end, step).indices(shape[dim])))
            props = {
                "dim": IntegerAttr(dim, inf.I64),
                "start": IntegerAttr(start, inf.I64),
                "end": IntegerAttr(end, inf.I64),
                "step": IntegerAttr(step, inf.I64),
            }
            x = typed(ctx, aten.SliceOp, x, props, list(shape))
            dim += 1
        elif isinstance(item, int) and not isinstance(item, bool):
            size = shape[dim]
            if item < 0:
                if ctx.symbolic:
                    ctx.bakes_size("a negative index")
                ctx.size_check(x, dim, "exact")
            else:  # an index past a smaller size must raise
                ctx.size_check(x, dim, "fits", (item + 1,))
            i = item + size if item < 0 else item
            if not 0 <= i < size:
                raise NotMapped("index out of range")
            shape[dim] = 1
            props = {
                "dim": IntegerAttr(dim, inf.I64),
                "start": IntegerAttr(i, inf.I64),
                "length": IntegerAttr(1, inf.I64),
            }
            x = typed(ctx, aten.NarrowOp, x, props, list(shape))
            del shape[dim]
            x = typed(ctx, aten.SqueezeOp, x, {"dim": IntegerAttr(dim, inf.I64)}, list(shape))
        else:
            raise NotMapped("advanced indexing")
    return x


@register(getattr)
def _getattr(ctx: Importer, base: Any, name: Any) -> Any:
    """A field of a named tuple result (`torch.topk(x, 2).values`)."""
    v = ctx.env[base] if isinstance(base, torch.fx.Node) else None
    if isinstance(v, tuple):
        target = ctx.real[ctx.node]  # type: ignore[index]
        for i, r in enumerate(ctx.real[base]):
            if r is target:
                return v[i]
    raise NotMapped(f"attribute {name}")


def _mm_like(op_cls: type[Operation]) -> Handler:
    def handle(ctx: Importer, a: Any, b: Any) -> SSAValue:
        return ctx.add_op(op_cls(ctx.tensor(a), ctx.tensor(b))).results[0]

    return handle


register(torch.matmul, operator.matmul, "matmul")(_mm_like(aten.MatmulOp))
register(torch.mm, "mm")(_mm_like(aten.MmOp))


@register(torch.addmm, "addmm")
def addmm(ctx: Importer, bias: Any, a: Any, b: Any, *, beta: Any = 1, alpha: Any = 1) -> SSAValue:
    beta, alpha = ctx.const(beta), ctx.const(alpha)
    op = aten.AddmmOp.create(
        operands=[ctx.tensor(bias), ctx.tensor(a), ctx.tensor(b)],
        properties={
            k: aten.number_attr(v) for k, v in (("beta", beta), ("alpha", alpha)) if v != 1
        },
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


def _linear_op(ctx: Importer, x: SSAValue, w: SSAValue, b: SSAValue | None) -> SSAValue:
    operands = [x, w] if b is None else [x, w, b]
    op = aten.LinearOp.create(operands=operands, result_types=_result_types_one(ctx))
    return ctx.add_op(op).results[0]


@register(F.linear)
def linear(ctx: Importer, x: Any, weight: Any, bias: Any = None) -> SSAValue:
    return _linear_op(
        ctx, ctx.tensor(x), ctx.tensor(weight), None if bias is None else ctx.tensor(bias)
    )


@register(nn.Linear)
def _linear_module(ctx: Importer, mod: nn.Linear, x: Any) -> SSAValue:
    path = str(ctx.node.target)  # type: ignore[union-attr]
    w = ctx.attr_operand(path, "weight", mod.weight)
    b = ctx.attr_operand(path, "bias", mod.bias)
    assert w is not None
    return _linear_op(ctx, ctx.tensor(x), w, b)


def reduction(op_cls: type[Operation]) -> Handler:
    def handle(
        ctx: Importer, x: Any, dim: Any = None, keepdim: Any = False, *, dtype: Any = None
    ) -> SSAValue:
        d, keep, dt = ctx.const(dim), ctx.const(keepdim), ctx.const(dtype)
        props: dict[str, Attribute] = {}
        if d is not None:
            props["dims"] = int_array([d] if isinstance(d, int) else list(d))
        if keep:
            props["keepdim"] = IntegerAttr(1, inf.BOOL)
        if dt is not None and not isinstance(dt, torch.dtype):
            raise NotMapped("dtype")
        op = op_cls.create(
            operands=[ctx.tensor(x)], properties=props, result_types=_result_types_one(ctx)
        )
        return ctx.add_op(op).results[0]

    return handle


register(torch.sum, "sum")(reduction(aten.SumOp))
register(torch.mean, "mean")(reduction(aten.MeanOp))
