"""`batch-shared-matmul`: thin matrix products with one right operand, none
of which depends on another, become one product over the stacked left operands.

An unrolled recurrence multiplies every step's input by the same weight:
`x_t @ W_ih^T` for t = 0..T-1. Those products do not depend on the recurrence,
so, as cuDNN and oneDNN do with an RNN's input projection, they can run as one
`[T*B, I] @ [I, 4H]` product before the loop; each step reads its rows, a view:

    %x0 = aten.squeeze %n0 dim = 0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
    %p = aten.mm %x0, %w : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    ...
    %x1 = aten.squeeze %n1 dim = 0 : tensor<1x4x8xf32> -> tensor<4x8xf32>
    %q = aten.mm %x1, %w : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
->
    %x = aten.cat %x0, %x1 dim = 0 : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<8x8xf32>
    %pq = aten.mm %x, %w : tensor<8x8xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
    %p = aten.narrow %pq dim = 0 start = 0 length = 4 : tensor<8x32xf32> -> tensor<4x32xf32>
    %q = aten.narrow %pq dim = 0 start = 4 length = 4 : tensor<8x32xf32> -> tensor<4x32xf32>

When the left operands are consecutive rows `xs[t]` of one 3-d tensor
(`squeeze(narrow(xs, 0, t, 1), 0)`), the stack is a reshape of
`narrow(xs, 0, t0, n)` instead of a copy.

The batched product goes where the first of the products was, so a left
operand must be known there: computed before it, or a view (narrow, squeeze,
...) of values known there, which moves up with it. A left operand computed
from another product's result (the recurrence's `h_t @ W_hh^T`) is not, and
that product stays. It fires for products with all sizes known at compile time
and fewer rows than the right operand's rows and columns: there the BLAS call
spends its time packing the shared right operand (and in the call itself), not
in arithmetic, and one call packs it once. Each result row is the same dot
product as before, so results are unchanged.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from fusec.dialects.aten import (
    CatOp,
    MmOp,
    NarrowOp,
    ReshapeOp,
    ShapeUnaryOp,
    SqueezeOp,
    TransposeOp,
)
from fusec.dialects.inference import tensor_type
from fusec.passes.concat_matmul_sum import static_matrix, swapped_input
from fusec.passes.fusion_remarks import derived_from
from fusec.passes.fusion_utils import in_group
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

_MAX_VIEW_DEPTH = 4
"""How long a chain of views a left operand may move up with it (`xs[t]` is two)."""


def _views_to_move(v: SSAValue, anchor: int, index: dict[Operation, int]) -> list[Operation] | None:
    """The view ops, operands first, that must move above the op at `anchor`
    for `v` to be known there; None when `v` depends on something computed
    after it."""
    chain: list[Operation] = []
    while True:
        op = v.owner
        # A value from an enclosing block is known everywhere in this one.
        if isinstance(op, Block) or op not in index or index[op] < anchor:
            return chain[::-1]
        if not isinstance(op, ShapeUnaryOp) or len(chain) == _MAX_VIEW_DEPTH:
            return None
        chain.append(op)
        v = op.operands[0]


def _row_of(v: SSAValue) -> tuple[SSAValue, int] | None:
    """`(xs, t)` when `v` is `squeeze(narrow(xs, 0, t, 1), 0)` of a 3-d `xs`."""
    sq = v.owner
    if not isinstance(sq, SqueezeOp) or sq.dim is None or sq.dim.value.data != 0:
        return None
    nr = sq.input.owner
    if not isinstance(nr, NarrowOp) or nr.dim.value.data != 0 or nr.length.value.data != 1:
        return None
    t = nr.input.type
    if not isinstance(t, TensorType) or t.get_num_dims() != 3:
        return None
    return nr.input, nr.start.value.data


def _stacked(parts: list[SSAValue], new_ops: list[Operation]) -> SSAValue:
    """`cat(parts, dim=0)`, or a reshape of rows t0..t0+n-1 of one 3-d tensor."""
    rows = [_row_of(p) for p in parts]
    first = rows[0]
    if first is not None and all(
        r is not None and r[0] == first[0] and r[1] == first[1] + i for i, r in enumerate(rows)
    ):
        xs, t0 = first
        part = parts[0].type
        assert isinstance(part, TensorType)
        m, k = part.get_shape()
        if t0 == 0 and tensor_type(xs.type).get_shape()[0] == len(parts):
            flat = ReshapeOp(xs, [m * len(parts), k])
            new_ops.append(flat)
            return flat.result
        rows_op = NarrowOp(
            [xs],
            {
                "dim": IntegerAttr(0, i64),
                "start": IntegerAttr(t0, i64),
                "length": IntegerAttr(len(parts), i64),
            },
        )
        flat = ReshapeOp(rows_op.result, [m * len(parts), k])
        new_ops += [rows_op, flat]
        return flat.result
    cat = CatOp(parts, 0)
    new_ops.append(cat)
    return cat.result


def _thin(mm: MmOp) -> bool:
    """Sizes known, no dtype promotion, fewer rows than the right operand has
    rows or columns."""
    lhs, rhs = static_matrix(mm.lhs), static_matrix(mm.rhs)
    if lhs is None or rhs is None:
        return False
    dtypes = {tensor_type(v.type).get_element_type() for v in (mm.lhs, mm.rhs, mm.result)}
    return len(dtypes) == 1 and lhs[0] < rhs[0] and lhs[0] < rhs[1]


def _batch(block: Block, mms: list[MmOp]) -> None:
    index = {op: i for i, op in enumerate(block.ops)}
    anchor = mms[0]
    chosen: list[tuple[MmOp, list[Operation]]] = []
    for mm in mms:
        moves = _views_to_move(mm.lhs, index[anchor], index)
        if moves is not None:
            chosen.append((mm, moves))
    if len(chosen) < 2:
        return
    moved: set[Operation] = set()
    for _, moves in chosen:
        for view in moves:
            if view not in moved:
                moved.add(view)
                view.detach()
                block.insert_op_before(view, anchor)
    new_ops: list[Operation] = []
    stack = _stacked([mm.lhs for mm, _ in chosen], new_ops)
    product = MmOp(stack, anchor.rhs)
    new_ops.append(product)
    start = 0
    for mm, _ in chosen:
        rows = static_matrix(mm.lhs)
        assert rows is not None
        piece = NarrowOp(
            [product.result],
            {
                "dim": IntegerAttr(0, i64),
                "start": IntegerAttr(start, i64),
                "length": IntegerAttr(rows[0], i64),
            },
        )
        start += rows[0]
        new_ops.append(piece)
        derived_from([piece], mm)
    derived_from(new_ops, anchor)
    Rewriter.insert_op(new_ops, InsertPoint.before(anchor))
    pieces = [op for op in new_ops if isinstance(op, NarrowOp) and op.input == product.result]
    for (mm, _), piece in zip(chosen, pieces, strict=True):
        mm.result.replace_all_uses_with(piece.result)
        rhs = mm.rhs.owner
        Rewriter.erase_op(mm)
        # A step's own `w.t()` is dead once its product reads the first one.
        if isinstance(rhs, TransposeOp) and not rhs.result.uses:
            Rewriter.erase_op(rhs)


def _operand_key(v: SSAValue) -> tuple[bool, SSAValue]:
    """Right operands that are the same matrix: a torch-level trace writes
    `w.t()` anew at every step, so `transpose(w)` stands for `w`, transposed."""
    inner = swapped_input(v)
    return (False, v) if inner is None else (True, inner)


@dataclass(frozen=True)
class BatchSharedMatmulPass(ModulePass):
    """Stack thin independent products with a shared right operand into one
    product (see the module docstring).

    fusec-opt -p batch-shared-matmul
    """

    name = "batch-shared-matmul"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        by_block: dict[Block, dict[tuple[bool, SSAValue], list[MmOp]]] = defaultdict(
            lambda: defaultdict(list)
        )
        for mm in op.walk():
            if isinstance(mm, MmOp) and not in_group(mm) and _thin(mm):
                block = mm.parent_block()
                assert block is not None
                by_block[block][_operand_key(mm.rhs)].append(mm)
        for block, groups in by_block.items():
            for mms in groups.values():
                if len(mms) >= 2:
                    _batch(block, mms)
