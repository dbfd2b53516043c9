"""`hoist-reductions`: a reduction of a pointwise result moves up to just after it,
above the result's other readers, so `fuse` can make it an extra output of the
group that computes the result.

`fuse` pulls producers into consumers, and refuses when another user of the
producer comes first (the group would sit after a reader of its own output). In
the backward of every linear, AOTAutograd reads the gradient twice by matrix
products before it sums the bias gradient over the batch:

    %g = aten.where %m, %z, %d : ... -> tensor<16x64xf32>
    %a = aten.mm %g, %w : ...
    %s = aten.sum %g dims = [0] keepdim = true : tensor<16x64xf32> -> tensor<1x64xf32>
    ->
    %g = aten.where %m, %z, %d : ... -> tensor<16x64xf32>
    %s = aten.sum %g dims = [0] keepdim = true : tensor<16x64xf32> -> tensor<1x64xf32>
    %a = aten.mm %g, %w : ...

and the column sum became a separate pass over the gradient (a PyTorch call).

ATen graphs also flatten `[b, t, c]` to `[b*t, c]` around every matmul, so the
sum often reads a view of the pointwise result. A reduction whose reduced dims
are whole dims of the view's source (merged or split by the view) reduces the
source instead, and the view moves to its result (only for a result no
pointwise op reads, such as a gradient; a softmax's `amax` stays in its domain):

    %v = aten.view %g : tensor<4x5x32xf32> -> tensor<20x32xf32>
    %s = aten.sum %v dims = [0] keepdim = true : tensor<20x32xf32> -> tensor<1x32xf32>
    ->
    %r = aten.sum %g dims = [0, 1] keepdim = true : tensor<4x5x32xf32> -> tensor<1x1x32xf32>
    %s = aten.view %r : tensor<1x1x32xf32> -> tensor<1x32xf32>
Reductions are side-effect free, so moving one earlier is right as long as it
does not cross a write: the move stops at any op that is not side-effect free
(`aten.copy_`, in-place ops, regions that may write), and at the last
definition of its operands.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import ReshapeOp, ViewOp
from fusec.passes.fusion_utils import in_group, is_pointwise
from fusec.passes.lowering.reduction_domain import is_fusible_reduction, reduced_dims
from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, TensorType, i64
from xdsl.ir import Block, Operation, OpResult
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free


def _reshape_groups(
    src: tuple[int, ...], dst: tuple[int, ...]
) -> list[tuple[list[int], list[int]]] | None:
    """The dims of `src` and `dst` a reshape maps onto each other, as pairs of
    index lists with equal products, in order (size-1 dims may stand alone with
    an empty partner); None when they cannot be told apart."""
    if any(d < 0 for d in src + dst):
        return _symbolic_reshape_groups(src, dst)
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(src) or j < len(dst):
        if i < len(src) and src[i] == 1:
            groups.append(([i], []))
            i += 1
            continue
        if j < len(dst) and dst[j] == 1:
            groups.append(([], [j]))
            j += 1
            continue
        if i == len(src) or j == len(dst):
            return None
        a, b = [i], [j]
        ps, pd = src[i], dst[j]
        i, j = i + 1, j + 1
        while ps != pd:
            if ps < pd:
                if i == len(src):
                    return None
                ps, a = ps * src[i], [*a, i]
                i += 1
            else:
                if j == len(dst):
                    return None
                pd, b = pd * dst[j], [*b, j]
                j += 1
        groups.append((a, b))
    return groups


def _symbolic_reshape_groups(
    src: tuple[int, ...], dst: tuple[int, ...]
) -> list[tuple[list[int], list[int]]] | None:
    """`_reshape_groups` with symbolic (negative) sizes. A static size equal on
    both sides, matched from the back (or the front), is the same dim: in row-major
    order the last index is the flat index modulo that size on both sides (the first
    the flat index divided by the same rest). What is left between them must be
    one dim on one side, merged from or split into the other side's dims:
    `?x?x128 -> ?x128` maps dims [0, 1] onto [0], and dim 2 onto dim 1."""
    i, j = len(src), len(dst)
    tail: list[tuple[list[int], list[int]]] = []
    while i > 0 and j > 0 and src[i - 1] == dst[j - 1] >= 0:
        i, j = i - 1, j - 1
        tail.insert(0, ([i], [j]))
    head: list[tuple[list[int], list[int]]] = []
    a = b = 0
    while a < i and b < j and src[a] == dst[b] >= 0:
        head.append(([a], [b]))
        a, b = a + 1, b + 1
    left, right = list(range(a, i)), list(range(b, j))
    if not left and not right:
        middle = []
    elif left and right and (len(left) == 1 or len(right) == 1):
        middle = [(left, right)]
    else:
        return None
    return head + middle + tail


def source_dims(src: TensorType, dst: TensorType, dims: tuple[int, ...]) -> list[int] | None:
    """The dims of a reshape's source `src` that reducing its result's (`dst`)
    `dims` reduces, or None when a reduced dim shares a reshape group with a kept
    one (the sum would need a split of the source's dims)."""
    groups = _reshape_groups(tuple(src.get_shape()), tuple(dst.get_shape()))
    if groups is None:
        return None
    out: list[int] = []
    for a, b in groups:
        reduced = [d for d in b if d in dims]
        if not reduced or not a:
            continue
        if len(reduced) != len(b):
            return None
        out.extend(a)
    return out


def reduce_view_source(reduction: Operation) -> Operation | None:
    """`reduce(view(a))` -> `view(reduce(a))` when the view's producer is pointwise
    and the reduced dims are whole dims of `a` (module docstring); a chain of views
    is one reshape of its first source. Returns the new reduction, or None when
    nothing changed. The view stays for its other readers."""
    view = reduction.operands[0]
    if not isinstance(view, OpResult) or not isinstance(view.op, ViewOp | ReshapeOp):
        return None
    source = view.op.operands[0]
    while isinstance(source, OpResult) and isinstance(source.op, ViewOp | ReshapeOp):
        source = source.op.operands[0]
    if not isinstance(source, OpResult) or not is_pointwise(source.op):
        return None
    if any(is_pointwise(u.operation) for u in reduction.results[0].uses):
        # Broadcast back over the view's shape (softmax's `x - amax(x)`): the
        # reduction belongs to that domain's group, not to the source's.
        return None
    result, src, dst = reduction.results[0].type, source.type, view.type
    if not all(isinstance(t, TensorType) for t in (result, src, dst)):
        return None
    assert isinstance(result, TensorType) and isinstance(src, TensorType)
    assert isinstance(dst, TensorType)
    dims = source_dims(src, dst, reduced_dims(reduction))
    if not dims:
        return None
    shape = [1 if i in dims else s for i, s in enumerate(src.get_shape())]
    moved = type(reduction).create(
        operands=[source],
        result_types=[TensorType(result.get_element_type(), shape)],
        properties={**reduction.properties, "dims": DenseArrayBase.from_list(i64, dims)},
        attributes=dict(reduction.attributes),
    )
    back = ViewOp(moved.results[0], list(result.get_shape()))
    moved.results[0].name_hint = reduction.results[0].name_hint
    block = reduction.parent_block()
    assert block is not None
    block.insert_ops_before([moved, back], reduction)
    reduction.results[0].replace_all_uses_with(back.results[0])
    block.erase_op(reduction)
    while isinstance(view, OpResult) and isinstance(view.op, ViewOp | ReshapeOp) and not view.uses:
        inner = view.op.operands[0]
        view.op.parent_block().erase_op(view.op)  # type: ignore[union-attr]
        view = inner
    return moved


def hoist_point(reduction: Operation) -> Operation | None:
    """The op `reduction` may move to just after, or None to stay: the pointwise
    producer of its input (every reduction's one operand) when every op between
    is side-effect free and some op between reads the input (otherwise nothing
    stands between the producer and the reduction)."""
    source = reduction.operands[0]
    if not isinstance(source, OpResult) or not is_pointwise(source.op):
        return None
    producer = source.op
    block = reduction.parent_block()
    if block is None or producer.parent_block() is not block:
        return None
    reader_between = False
    op = reduction.prev_op
    while op is not None and op is not producer:
        if not is_side_effect_free(op):
            return None
        reader_between = reader_between or source in op.operands
        op = op.prev_op
    return producer if op is producer and reader_between else None


def hoist_reductions_in(block: Block) -> None:
    """Moves each fusible reduction of `block` up to its producer (module docstring)."""
    for op in list(block.ops):
        if in_group(op) or not is_fusible_reduction(op):
            continue
        op = reduce_view_source(op) or op
        point = hoist_point(op)
        if point is not None:
            op.detach()
            block.insert_op_after(op, point)


@dataclass(frozen=True)
class HoistReductionsPass(ModulePass):
    """Moves reductions of pointwise results above the results' other readers
    (module docstring), so `fuse` can join them to the producing group.

    fusec-opt -p hoist-reductions,fuse model.mlir
    """

    name = "hoist-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            for region in inner.regions:
                for block in region.blocks:
                    hoist_reductions_in(block)
