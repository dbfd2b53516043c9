"""`concat-matmul-sum`: a sum of small-K matrix products becomes one product
over concatenated operands.

`sum_i A_i @ B_i` is `cat(A_i, dim=1) @ cat(B_i, dim=0)`: the K dims of the
products line up one after another. An unrolled recurrence's backward is such
a sum: a weight shared by T steps gets the gradient `sum_t g_t^T @ x_t`, each
term a product with K = batch (32 in the LSTM benchmark) that writes the whole
weight-sized result, which an add then reads again. One product with
K = T * batch reads each operand once, writes the result once and gives the
BLAS kernel a K it can block on:

    %ta = aten.transpose %g0 dim0 = 0 dim1 = 1 : tensor<4x64xf32> -> tensor<64x4xf32>
    %p = aten.mm %ta, %x0 : tensor<64x4xf32>, tensor<4x16xf32> -> tensor<64x16xf32>
    %tb = aten.transpose %g1 dim0 = 0 dim1 = 1 : tensor<4x64xf32> -> tensor<64x4xf32>
    %q = aten.mm %tb, %x1 : tensor<64x4xf32>, tensor<4x16xf32> -> tensor<64x16xf32>
    %r = aten.add %p, %q : tensor<64x16xf32>, tensor<64x16xf32> -> tensor<64x16xf32>
->
    %g = aten.cat %g0, %g1 dim = 0 : tensor<4x64xf32>, tensor<4x64xf32> -> tensor<8x64xf32>
    %gt = aten.transpose %g dim0 = 0 dim1 = 1 : tensor<8x64xf32> -> tensor<64x8xf32>
    %x = aten.cat %x0, %x1 dim = 0 : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<8x16xf32>
    %r = aten.mm %gt, %x : tensor<64x8xf32>, tensor<8x16xf32> -> tensor<64x16xf32>

(`cat` of transposes is the transpose of a `cat` along the other dim: the
copy then reads and writes contiguous rows.) AOTAutograd writes each term as
`t(t(mm(t(g), x)))`; a term under an odd number of transposes is
`mm(a, b)^T = mm(b^T, a^T)`. Terms that are not products stay as adds after
the one product.

It fires on a tree of `add`s (alpha 1, each inner sum used once, all of one
type) with at least two product terms, each used only by the sum, when the
result's sizes are known at compile time and each term's share of the copies,
`K_i * (M + N)`, is at most the `M * N` elements the separate term would write
and the add read back (a K known only at run time, a symbolic batch, is taken:
`_pays_off`). The result equals the sum up to summation order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusec.dialects import inference as inf
from fusec.dialects.aten import AddOp, CatOp, MmOp, TransposeOp, number_value
from fusec.passes.fusion_remarks import derived_from
from fusec.passes.fusion_utils import in_group
from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint, Rewriter


def float_matrix(v: SSAValue) -> tuple[int, int] | None:
    """`v`'s sizes when it is a 2-d float tensor (`inf.DYNAMIC` for a size
    known only at run time)."""
    t = v.type
    if not isinstance(t, TensorType) or t.get_num_dims() != 2:
        return None
    if not isinstance(t.get_element_type(), AnyFloat):
        return None
    rows, cols = t.get_shape()
    return rows, cols


def static_matrix(v: SSAValue) -> tuple[int, int] | None:
    """`v`'s sizes when it is a 2-d float tensor with both sizes known."""
    sizes = float_matrix(v)
    return None if sizes is None or inf.DYNAMIC in sizes else sizes


def swapped_input(v: SSAValue) -> SSAValue | None:
    """`x` when `v` is `transpose(x)` of a 2-d float `x`."""
    op = v.owner
    if isinstance(op, TransposeOp) and float_matrix(op.input) is not None:
        dims = {op.dim0.value.data % 2, op.dim1.value.data % 2}
        if dims == {0, 1}:
            return op.input
    return None


def transposed(v: SSAValue, new_ops: list[Operation]) -> SSAValue:
    """`v^T`, reusing `x` when `v` is already `transpose(x)`."""
    inner = swapped_input(v)
    if inner is not None:
        return inner
    op = TransposeOp([v], {"dim0": IntegerAttr(0, i64), "dim1": IntegerAttr(1, i64)})
    new_ops.append(op)
    return op.result


def concatenated(parts: list[SSAValue], dim: int, new_ops: list[Operation]) -> SSAValue:
    """`cat(parts, dim)` of 2-d parts; when every part is a transpose, the
    transpose of the `cat` of their inputs along the other dim (contiguous
    copies)."""
    inner = [swapped_input(p) for p in parts]
    if all(i is not None for i in inner):
        cat = CatOp([i for i in inner if i is not None], 1 - dim)
        new_ops.append(cat)
        return transposed(cat.result, new_ops)
    cat = CatOp(parts, dim)
    new_ops.append(cat)
    return cat.result


@dataclass
class _Sum:
    """The leaves of a tree of adds: products (with whether an odd number of
    transposes lies over each) and other terms, plus every op of the tree."""

    products: list[tuple[MmOp, bool]]
    others: list[SSAValue]
    ops: list[Operation]


def _inner_add(v: SSAValue, root: AddOp) -> AddOp | None:
    op = v.owner
    if (
        isinstance(op, AddOp)
        and v.has_one_use()
        and op.result.type == root.result.type
        and number_value(op.alpha, 1) == 1
        and not in_group(op)
    ):
        return op
    return None


def _collect(root: AddOp) -> _Sum:
    found = _Sum([], [], [root])
    stack = [root.rhs, root.lhs]
    while stack:
        v = stack.pop()
        inner = _inner_add(v, root)
        if inner is not None:
            found.ops.append(inner)
            stack += [inner.rhs, inner.lhs]
            continue
        # Peel single-use transposes down to a single-use product.
        flipped, base, peeled = False, v, []
        while base.has_one_use() and (below := swapped_input(base)) is not None:
            assert isinstance(base.owner, Operation)
            peeled.append(base.owner)
            flipped, base = not flipped, below
        if isinstance(base.owner, MmOp) and base.has_one_use() and not in_group(base.owner):
            found.products.append((base.owner, flipped))
            found.ops += peeled + [base.owner]
        else:
            found.others.append(v)
    return found


def _pays_off(m: int, n: int, k: int) -> bool:
    """The term's operands, copied into the cats, are no more than the result
    it would write (and the add read back) on its own. A K known only at run
    time (a symbolic batch) is taken: whatever K is, the copies are
    `K * (M + N)` elements against the product's `2 * M * N * K` flops, at most
    `1/M + 1/N` of an element per flop, while at a batch-sized K (a
    recurrence's steps) they save the terms' writes and the adds' reads as
    with static sizes, and the kernels stay those of the static graph."""
    return k == inf.DYNAMIC or k * (m + n) <= m * n


@dataclass
class ConcatProducts(RewritePattern):
    """`mm(a0, b0) + mm(a1, b1) + ...` -> `mm(cat(a0, a1, ..., dim=1), cat(b0, b1, ..., dim=0))`."""

    cats: list[CatOp] = field(default_factory=list[CatOp])
    """The `cat`s made, for `share_cats`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter) -> None:
        if in_group(op) or number_value(op.alpha, 1) != 1:
            return
        out = static_matrix(op.result)
        if out is None or op.lhs.type != op.result.type or op.rhs.type != op.result.type:
            return
        # Only the top of a tree: an inner sum is taken in with its root.
        if op.result.has_one_use():
            user = next(iter(op.result.uses)).operation
            if isinstance(user, AddOp) and _inner_add(op.result, user) is op:
                return
        found = _collect(op)
        if len(found.products) < 2:
            return
        m, n = out
        dtype = op.result.type.get_element_type()
        if any(inf.tensor_type(o.type).get_element_type() != dtype for o in found.others):
            return  # a promoting add: leave the sum as written
        lhs: list[SSAValue] = []
        rhs: list[SSAValue] = []
        new_ops: list[Operation] = []
        for mm, flipped in found.products:
            lhs_sizes, rhs_sizes = float_matrix(mm.lhs), float_matrix(mm.rhs)
            want = out[::-1] if flipped else out
            if (
                lhs_sizes is None
                or rhs_sizes is None
                or static_matrix(mm.result) != want
                or mm.result.type.get_element_type() != dtype
            ):
                for new in new_ops:
                    new.erase()
                return
            a, b = (
                (transposed(mm.rhs, new_ops), transposed(mm.lhs, new_ops))
                if flipped
                else (mm.lhs, mm.rhs)
            )
            k = lhs_sizes[1]
            if not _pays_off(m, n, k):
                for new in new_ops:
                    new.erase()
                return
            lhs.append(a)
            rhs.append(b)
        product = MmOp(concatenated(lhs, 1, new_ops), concatenated(rhs, 0, new_ops))
        new_ops.append(product)
        total: SSAValue = product.result
        for other in found.others:
            add = AddOp(total, other)
            new_ops.append(add)
            total = add.result
        self.cats += [c for c in new_ops if isinstance(c, CatOp)]
        derived_from(new_ops, op)
        rewriter.insert(new_ops, InsertPoint.before(op))
        rewriter.replace_all_uses_with(op.result, total)
        # Users before producers: each op of the tree is dead once its user is gone.
        fed = {o.owner for mm, _ in found.products for o in mm.operands}
        for dead in sorted(found.ops, key=_position, reverse=True):
            rewriter.erase(dead)
        # A transpose that only fed the products (`t(g_t)`) is dead too.
        for view in fed:
            if isinstance(view, TransposeOp) and not view.result.uses:
                rewriter.erase(view)


def _position(op: Operation) -> int:
    block = op.parent_block()
    assert block is not None
    return block.get_operation_index(op)


@dataclass(frozen=True)
class ConcatMatmulSumPass(ModulePass):
    """Turn sums of small-K matrix products into one product over concatenated
    operands (see the module docstring).

    fusec-opt -p concat-matmul-sum
    """

    name = "concat-matmul-sum"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        pattern = ConcatProducts()
        PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
        share_cats(pattern.cats)


def share_cats(cats: list[CatOp]) -> None:
    """One copy of each concatenation: the weights of one recurrence (`w_ih`
    and `w_hh` of an LSTM) get their gradients from the same `g_t`, so their
    sums concatenate the same operands. The first of equal `cat`s in a block
    comes before the others and takes their uses."""
    first: dict[tuple[object, int, tuple[SSAValue, ...]], CatOp] = {}
    for cat in sorted(cats, key=_position):
        key = (cat.parent_block(), cat.dim.value.data, tuple(cat.inputs))
        kept = first.setdefault(key, cat)
        if kept is not cat:
            cat.result.replace_all_uses_with(kept.result)
            Rewriter.erase_op(cat)
