"""`raise-attention`: attention written out as products and a softmax becomes one
`aten.scaled_dot_product_attention`.

A hand-written attention (`softmax(q @ k.transpose(-2, -1) * scale) @ v`, as in
GPT-2-style blocks written before `F.scaled_dot_product_attention`, or with a
float mask added to the scores) materializes the `[L, S]` scores and
probabilities: two batched products, the softmax kernel between them, and
contiguous copies of `q` and `k` for the products. PyTorch's fused attention
kernel streams the scores through cache instead and reads `q`, `k`, `v`
strided, the way Inductor's attention patterns do:

    %kt = aten.transpose %k dim0 = -2 dim1 = -1 : tensor<2x4x6x16xf32> -> tensor<2x4x16x6xf32>
    %s = aten.matmul %q, %kt : tensor<2x4x8x16xf32>, tensor<2x4x16x6xf32> -> tensor<2x4x8x6xf32>
    %c = arith.constant 2.500000e-01 : f64
    %m = aten.mul %s, %c : tensor<2x4x8x6xf32>, f64 -> tensor<2x4x8x6xf32>
    %p = aten.softmax %m dim = -1 : tensor<2x4x8x6xf32> -> tensor<2x4x8x6xf32>
    %r = aten.matmul %p, %v : tensor<2x4x8x6xf32>, tensor<2x4x6x32xf32> -> tensor<2x4x8x32xf32>
->
    %r = aten.scaled_dot_product_attention %q, %k, %v scale = 2.500000e-01 : f64
           : tensor<2x4x8x16xf32>, tensor<2x4x6x16xf32>, tensor<2x4x6x32xf32> -> tensor<2x4x8x32xf32>

The scale is a scalar constant multiplied in (or divided by: `scale = 1 / c`), or
absent (1); a float mask of the scores' dtype may be added after it, or the
scores filled with -inf where a mask computed from positions alone marks
exactly the columns past their row (`ones_like(att, dtype=bool).tril()`, then
`masked_fill(~mask, -inf)`; evaluated at compile time by `position_masks`):
that is `is_causal = true`, and the mask's ops go with the attention. A mask
another attention also reads stays, and so does that attention. The scores,
the scaled scores, the masked ones and the probabilities must each have no other
use (a training forward saves the probabilities for the backward, so its
attention stays as written), and only f32 and f64 qualify: in half precision
the fused kernel's float accumulation would not round as the written-out
products do. The result equals the written-out one up to rounding.

ATen graphs (`torch.export`, AOTAutograd) spell each N-d product as a batched one
over flattened operands: `reshape(bmm(reshape(clone(expand(a))), ...), [*batch, L, S])`.
Where such a product feeds the softmax or reads its probabilities, it is first
raised back to the N-d `aten.matmul` (the clones were contiguous copies for the
`bmm`), so the attention of an exported program is raised as its torch-level
twin's is:

    %e = aten.expand %p size = [2, 4, 8, 6] : tensor<2x4x8x6xf32> -> tensor<2x4x8x6xf32>
    %f = aten.reshape %e : tensor<2x4x8x6xf32> -> tensor<8x8x6xf32>
    %w = aten.to %v : tensor<2x4x6x32xf32> -> tensor<2x4x6x32xf32>
    %g = aten.reshape %w : tensor<2x4x6x32xf32> -> tensor<8x6x32xf32>
    %b = aten.matmul %f, %g : tensor<8x8x6xf32>, tensor<8x6x32xf32> -> tensor<8x8x32xf32>
    %r = aten.reshape %b : tensor<8x8x32xf32> -> tensor<2x4x8x32xf32>
->
    %r = aten.matmul %p, %v : tensor<2x4x8x6xf32>, tensor<2x4x6x32xf32> -> tensor<2x4x8x32xf32>
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fusec.dialects import inference as inf
from fusec.dialects.aten import (
    AddOp,
    DivOp,
    ExpandOp,
    FullLikeOp,
    MatmulOp,
    MulOp,
    PositionsOp,
    ReshapeOp,
    ScaledDotProductAttentionOp,
    SoftmaxOp,
    ToOp,
    TransposeOp,
    ViewOp,
    WhereOp,
    number_value,
)
from fusec.passes.fusion_remarks import derived_from
from fusec.passes.fusion_utils import unswapped
from fusec.passes.position_masks import is_causal
from xdsl.context import Context
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import VerifyException

_DTYPES = (inf.F32, inf.F64)


def _constant(v: SSAValue) -> float | None:
    """The value of a scalar `arith.constant` (not bool)."""
    op = v.owner
    if not isinstance(op, ConstantOp) or not inf.is_scalar(v.type) or v.type == inf.BOOL:
        return None
    value = op.value
    if not isinstance(value, FloatAttr | IntegerAttr):
        return None
    return float(value.value.data)


@dataclass
class _Scores:
    """What stands between the softmax and the first product."""

    scores: MatmulOp
    scale: float
    mask: SSAValue | None
    causal: bool


def _scale_of(v: SSAValue) -> tuple[SSAValue, float] | None:
    """(the unscaled scores, the scale) when `v` is `s * c`, `c * s` or `s / c`."""
    op = v.owner
    if isinstance(op, MulOp):
        for s, c in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            value = _constant(c)
            if value is not None and isinstance(s.type, TensorType):
                return s, value
    if isinstance(op, DivOp) and op.rounding_mode is None:
        value = _constant(op.rhs)
        if value is not None and value != 0.0:
            return op.lhs, 1.0 / value
    return None


def _causal_fill(x: SSAValue) -> tuple[SSAValue, WhereOp] | None:
    """(the scores, the op) when `x` is `where(masked, -inf, s)` or
    `where(kept, s, -inf)` with a causal mask (`position_masks.is_causal`)."""
    op = x.owner
    scores = x.type
    if not isinstance(op, WhereOp) or not x.has_one_use() or not isinstance(scores, TensorType):
        return None
    if _constant(op.lhs) == -math.inf and is_causal(op.condition, scores):
        return op.rhs, op
    if _constant(op.rhs) == -math.inf and is_causal(op.condition, scores, kept=True):
        return op.lhs, op
    return None


def _mask_ops(v: SSAValue) -> set[Operation]:
    """The ops a mask of positions is computed by (`position_masks`), which read
    only the sizes of the values they take (positions, `full_like`)."""
    found: set[Operation] = set()
    work = [v]
    while work:
        op = work.pop().owner
        if not isinstance(op, Operation) or op in found:
            continue
        found.add(op)
        if not isinstance(op, PositionsOp | FullLikeOp):
            work += op.operands
    return found


def _used_once(v: SSAValue, besides: set[Operation]) -> bool:
    """`v` has one use, not counting those by the ops `besides`."""
    return sum(1 for u in v.uses if u.operation not in besides) == 1


def _find_scores(x: SSAValue) -> _Scores | None:
    """The product, scale and mask the softmax input `x` is made of."""
    mask: SSAValue | None = None
    causal = _causal_fill(x)
    # The causal mask's own ops read the scores' sizes: they go with the where,
    # unless something else reads them too (a mask shared by two attentions).
    besides: set[Operation] = set()
    if causal is not None:
        besides = _mask_ops(causal[1].condition)
        readers = {u.operation for op in besides for r in op.results for u in r.uses}
        if not readers <= besides | {causal[1]}:
            return None
        x = causal[0]
    add = x.owner
    if isinstance(add, AddOp) and number_value(add.alpha, 1) == 1 and _used_once(x, besides):
        for s, m in ((add.lhs, add.rhs), (add.rhs, add.lhs)):
            if isinstance(s.owner, MatmulOp | MulOp | DivOp) and isinstance(m.type, TensorType):
                x, mask = s, m
                break
        else:
            return None
    scale = 1.0
    scaled = _scale_of(x)
    if scaled is not None:
        if not _used_once(x, besides):
            return None
        x, scale = scaled
    product = x.owner
    if not isinstance(product, MatmulOp) or not _used_once(x, besides):
        return None
    if causal is not None and mask is not None:
        return None  # PyTorch's attention takes one or the other
    return _Scores(product, scale, mask, causal is not None)


@dataclass
class RaiseWrittenOutAttention(RewritePattern):
    """`matmul(softmax(matmul(q, k^T) * s + mask), v)` -> `scaled_dot_product_attention(q, k, v, mask, scale = s)`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: MatmulOp, rewriter: PatternRewriter) -> None:
        softmax = op.lhs.owner
        if not isinstance(softmax, SoftmaxOp) or not op.lhs.has_one_use():
            return
        out = op.result.type
        if not isinstance(out, TensorType) or out.get_element_type() not in _DTYPES:
            return
        probs = softmax.result.type
        assert isinstance(probs, TensorType)
        rank = probs.get_num_dims()
        if rank < 2 or softmax.dim.value.data % rank != rank - 1:
            return
        if softmax.input.type != probs:
            return  # a softmax with `dtype=`: the fused kernel has none
        found = _find_scores(softmax.input)
        if found is None:
            return
        q, kt = found.scores.lhs, found.scores.rhs
        new_ops: list[Operation] = []
        k = unswapped(kt)
        if k is None:
            swap = TransposeOp([kt], {"dim0": IntegerAttr(-2, i64), "dim1": IntegerAttr(-1, i64)})
            new_ops.append(swap)
            k = swap.result
        try:
            attention = ScaledDotProductAttentionOp(
                q, k, op.rhs, found.scale, found.mask, found.causal
            )
            for new in (*new_ops, attention):
                new.verify()
        except VerifyException:
            return
        if attention.result.type != out:
            return
        new_ops.append(attention)
        derived_from(new_ops, op)
        rewriter.replace(op, new_ops, [attention.result])
        # The softmax and what only it read: the mask fill or add, the scale, the
        # scores, the key's transpose, constants and a causal mask's ops.
        _erase_unused([softmax.result], rewriter)


def _erase_unused(values: list[SSAValue], rewriter: PatternRewriter) -> None:
    """Erases the side-effect-free ops of `values` that nothing reads any more,
    and then those of their operands. An op skipped while another still read it
    comes back when that reader is erased (a causal mask's `full_like` reads the
    scale's result), so the walk leaves nothing dead behind."""
    work = list(values)
    while work:
        v = work.pop()
        op = v.owner
        if not isinstance(op, Operation) or op.parent is None:
            continue
        if any(r.uses for r in op.results) or not is_side_effect_free(op):
            continue
        work += op.operands
        rewriter.erase(op)


def _batched(v: SSAValue, batch: list[int]) -> SSAValue | None:
    """`a` when `v` is `reshape(to(expand(a)))` (`to` and `expand` optional, each
    to `a`'s own type) flattening `a`'s `batch` dims into one."""
    op = v.owner
    if not isinstance(op, ReshapeOp | ViewOp):
        return None
    a = op.input
    src, dst = a.type, v.type
    assert isinstance(src, TensorType) and isinstance(dst, TensorType)
    shape = list(src.get_shape())
    if shape[:-2] != batch or list(dst.get_shape())[1:] != shape[-2:]:
        return None
    for kind in (ToOp, ExpandOp):
        inner = a.owner
        if isinstance(inner, kind) and inner.input.type == a.type:
            a = inner.input
    return a


def _feeds_softmax(v: SSAValue) -> bool:
    """`v` reaches a softmax through its sole uses, past a scale and a mask."""
    for _ in range(3):
        if not v.has_one_use():
            return False
        user = next(iter(v.uses)).operation
        if isinstance(user, SoftmaxOp):
            return True
        if not isinstance(user, MulOp | DivOp | AddOp):
            return False
        v = user.results[0]
    return False


@dataclass
class RaiseFlattenedBatchProduct(RewritePattern):
    """`reshape(matmul(reshape(a), reshape(b)))` -> `matmul(a, b)`, for the products of an attention."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp | ViewOp, rewriter: PatternRewriter) -> None:
        product = op.input.owner
        out = op.result.type
        if not isinstance(product, MatmulOp) or not product.result.has_one_use():
            return
        flat = product.result.type
        assert isinstance(out, TensorType) and isinstance(flat, TensorType)
        batch = list(out.get_shape())[:-2]
        if flat.get_num_dims() != 3 or not batch or inf.DYNAMIC in batch:
            return
        if list(flat.get_shape()) != [math.prod(batch), *list(out.get_shape())[-2:]]:
            return
        lhs, rhs = _batched(product.lhs, batch), _batched(product.rhs, batch)
        if lhs is None or rhs is None:
            return
        if not (isinstance(lhs.owner, SoftmaxOp) or _feeds_softmax(op.result)):
            return
        raised = MatmulOp(lhs, rhs)
        if raised.result.type != out:
            raised.erase()
            return
        derived_from([raised], op)
        rewriter.replace(op, [raised], [raised.result])
        # The batched product and the reshapes, clones and expands only it read.
        _erase_unused([product.result], rewriter)


@dataclass(frozen=True)
class RaiseAttentionPass(ModulePass):
    """Turn written-out attention into `aten.scaled_dot_product_attention` (see
    the module docstring):

        %p = aten.softmax %m dim = -1 ...        (of `q @ k^T * s`)
        %r = aten.matmul %p, %v ...
    ->
        %r = aten.scaled_dot_product_attention %q, %k, %v scale = ...
    """

    name = "raise-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for pattern in (RaiseFlattenedBatchProduct(), RaiseWrittenOutAttention()):
            PatternRewriteWalker(pattern, apply_recursively=False).rewrite_module(op)
