"""`decompose-reductions`: normalizations become reductions and pointwise ops, and
every reduction keeps its dims, so `fuse` can put each normalization in one group.

- `aten.softmax` / `aten.log_softmax` -> `amax`, `sub`, `exp`, `sum`, then a product
  with the sum's `reciprocal` / the shifted input minus `log(sum)`;
- `aten.layer_norm` -> two-pass mean and variance, `rsqrt`, scale and shift;
- `pow(x, 2)` -> `x * x` (RMSNorm's square, exact and far cheaper than `pow`);
- a reduction without `keepdim` -> the same reduction keeping its dims, then an
  `aten.squeeze` per reduced dim (views, outside the group), and an `unsqueeze`
  that puts such a dim back, or a pointwise use that broadcasts the squeezed
  leading dims anyway, reads the kept-dims value directly.

    %r = aten.softmax %x dim = 1 : tensor<4x8xf32> -> tensor<4x8xf32>
    ->
    %m = aten.amax %x dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
    %d = aten.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    %e = aten.exp %d : tensor<4x8xf32> -> tensor<4x8xf32>
    %s = aten.sum %e dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
    %i = aten.reciprocal %s : tensor<4x1xf32> -> tensor<4x1xf32>
    %r = aten.mul %e, %i : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>

Sizes never become constants (a mean divides by the runtime count), so one kernel
still serves every shape of a rank and size-1 pattern.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.opmath import is_step, mark_steps
from fusec.passes.lowering.reduction_domain import is_reduction, keeps_dims, reduced_dims
from xdsl.context import Context
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


class _Builder:
    """Collects new ops in order; each helper returns the new op's result."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0]

    def reduce(
        self, cls: type[aten.ReductionOp], x: SSAValue, dims: list[int], dtype: Attribute
    ) -> SSAValue:
        t = x.type
        assert isinstance(t, TensorType)
        shape = [1 if i in dims else s for i, s in enumerate(t.get_shape())]
        return self.add(
            cls.create(
                operands=[x],
                properties={
                    "dims": DenseArrayBase.from_list(i64, dims),
                    "keepdim": IntegerAttr(1, inf.BOOL),
                },
                result_types=[TensorType(dtype, shape)],
            )
        )

    def to(self, x: SSAValue, dtype: Attribute) -> SSAValue:
        if inf.element_type(x.type) == dtype:
            return x
        return self.add(aten.ToOp(x, dtype))

    def scalar(self, value: float) -> SSAValue:
        return self.add(ConstantOp(aten.number_attr(float(value))))


def softmax_ops(
    x: SSAValue, dim: int, dtype: Attribute, log: bool
) -> tuple[list[Operation], SSAValue]:
    """Softmax (or log-softmax) of `x` along `dim` in `dtype`, as new ops."""
    b = _Builder()
    x = b.to(x, dtype)
    t = x.type
    assert isinstance(t, TensorType)
    rank = t.get_num_dims()
    if rank == 0:  # PyTorch: softmax of a 0-d tensor is 1 (log: 0), NaN stays NaN
        x = b.add(aten.UnsqueezeOp.create(operands=[x], properties={"dim": IntegerAttr(0, inf.I64)},
                                          result_types=[TensorType(dtype, [1])]))  # fmt: skip
        ops, r = softmax_ops(x, 0, dtype, log)
        b.ops += ops
        squeeze = aten.SqueezeOp.create(operands=[r], result_types=[TensorType(dtype, [])])
        return b.ops + [squeeze], squeeze.results[0]
    d = inf.normalize_dim(dim, rank)
    m = b.reduce(aten.AmaxOp, x, [d], dtype)
    shifted = b.add(aten.SubOp(x, m))
    e = b.add(aten.ExpOp(shifted))
    s = b.reduce(aten.SumOp, e, [d], dtype)
    if log:  # (x - max) - log(sum), in ATen's order: max + log(sum) first loses
        # the small log of a row whose entries are large (pytorch/pytorch#11752)
        r = b.add(aten.SubOp(shifted, b.add(aten.LogOp(s))))
    else:  # one reciprocal per row, a product per element (as ATen's kernel)
        r = b.add(aten.MulOp(e, b.add(aten.ReciprocalOp(s))))
    return b.ops, r


def layer_norm_ops(op: aten.LayerNormOp) -> tuple[list[Operation], SSAValue]:
    """`(x - mean) * rsqrt(var + eps) * w + b` over the trailing dims, the variance
    as the mean of squared deviations (two passes, no cancellation)."""
    b = _Builder()
    x = op.input
    t = x.type
    assert isinstance(t, TensorType)
    dt = t.get_element_type()
    rank = t.get_num_dims()
    dims = list(range(rank - len(op.normalized_shape.get_values()), rank))
    mean = b.reduce(aten.MeanOp, x, dims, dt)
    centered = b.add(aten.SubOp(x, mean))
    var = b.reduce(aten.MeanOp, b.add(aten.MulOp(centered, centered)), dims, dt)
    eps = aten.number_value(op.eps, 1e-5)
    inv = b.add(aten.RsqrtOp(b.add(aten.AddOp(var, b.scalar(eps)))))
    r = b.add(aten.MulOp(centered, inv))
    if op.weight is not None:
        r = b.add(aten.MulOp(r, op.weight))
    if op.bias is not None:
        r = b.add(aten.AddOp(r, op.bias))
    r = b.to(r, dt)
    return b.ops, r


def _replace(
    op: Operation, ops: list[Operation], result: SSAValue, rewriter: PatternRewriter
) -> None:
    if result.type != op.results[0].type:  # promotion disagrees: leave the op as it is
        for new in reversed(ops):
            new.erase()
        return
    # One eager kernel: its steps stay in op math, as they did in the whole op.
    mark_steps(ops, [] if is_step(op) else [result])
    _drop_unusable_hint(op)
    rewriter.replace(op, ops, [result])


def _drop_unusable_hint(op: Operation) -> None:
    """The replacement's results inherit the name hint: drop one the printer rejects
    (an imported module path such as `0`)."""
    hint = op.results[0].name_hint
    if hint is not None:
        try:
            op.results[0].name_hint = hint
        except ValueError:
            op.results[0].name_hint = None


@dataclass
class ExpandSoftmax(RewritePattern):
    """`softmax` / `log_softmax` -> max-shifted exponentials and their sum.

    %r = aten.softmax %x dim = 1 -> amax, sub, exp, sum, reciprocal, mul
    (log_softmax: amax, sub, exp, sum, log, sub)
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.SoftmaxLikeOp, rewriter: PatternRewriter) -> None:
        dtype = inf.element_type(op.result.type)
        ops, r = softmax_ops(op.input, op.dim.value.data, dtype, isinstance(op, aten.LogSoftmaxOp))
        _replace(op, ops, r, rewriter)


@dataclass
class ExpandLayerNorm(RewritePattern):
    """`layer_norm` -> mean, centered, mean of squares, rsqrt, scale, shift.

    %r = aten.layer_norm %x, %w, %b normalized_shape = [8] eps = 1.0e-05 : f64
    -> %m = aten.mean %x dims = [1] keepdim = true ; %c = aten.sub %x, %m ; ...
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.LayerNormOp, rewriter: PatternRewriter) -> None:
        ops, r = layer_norm_ops(op)
        _replace(op, ops, r, rewriter)


@dataclass
class KeepReducedDims(RewritePattern):
    """A reduction that drops its dims keeps them, and squeezes follow.

    %r = aten.sum %x dims = [1] : tensor<4x8xf32> -> tensor<4xf32>
    -> %k = aten.sum %x dims = [1] keepdim = true : ... -> tensor<4x1xf32>
       %r = aten.squeeze %k dim = 1 : tensor<4x1xf32> -> tensor<4xf32>
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not is_reduction(op) or keeps_dims(op):
            return
        t = op.operands[0].type
        if not isinstance(t, TensorType) or t.get_num_dims() == 0:
            return
        dims = list(reduced_dims(op))
        res_t = op.results[0].type
        assert isinstance(res_t, TensorType)
        dt = res_t.get_element_type()
        shape = [1 if i in dims else s for i, s in enumerate(t.get_shape())]
        props = dict(op.properties)
        props["dims"] = DenseArrayBase.from_list(i64, dims)
        props["keepdim"] = IntegerAttr(1, inf.BOOL)
        kept = type(op).create(
            operands=[op.operands[0]], properties=props, result_types=[TensorType(dt, shape)]
        )
        kept.attributes.update(op.attributes)
        ops: list[Operation] = [kept]
        value = kept.results[0]
        for d in reversed(dims):
            del shape[d]
            sq = aten.SqueezeOp.create(
                operands=[value],
                properties={"dim": IntegerAttr(d, inf.I64)},
                result_types=[TensorType(dt, list(shape))],
            )
            ops.append(sq)
            value = sq.results[0]
        _drop_unusable_hint(op)
        rewriter.replace(op, ops, [value])


def _squeezed_dim(op: Operation) -> int | None:
    if not isinstance(op, aten.SqueezeOp) or op.dim is None:
        return None
    t = op.input.type
    assert isinstance(t, TensorType)
    d = inf.normalize_dim(op.dim.value.data, max(t.get_num_dims(), 1))
    return d if t.get_num_dims() and t.get_shape()[d] == 1 else None


@dataclass
class FoldUnsqueezeOfSqueeze(RewritePattern):
    """Putting back the dim a squeeze took away gives the squeezed value.

    %s = aten.squeeze %k dim = 1 : tensor<4x1xf32> -> tensor<4xf32>
    %u = aten.unsqueeze %s dim = -1 : tensor<4xf32> -> tensor<4x1xf32>
    -> uses of %u read %k
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: aten.UnsqueezeOp, rewriter: PatternRewriter) -> None:
        src = op.input
        if not isinstance(src, OpResult) or (d := _squeezed_dim(src.op)) is None:
            return
        rank = op.result.type.get_num_dims()
        if inf.normalize_dim(op.dim.value.data, rank) != d:
            return
        rewriter.replace(op, [], [src.op.operands[0]])


@dataclass
class BroadcastSqueezedLeadingDim(RewritePattern):
    """A pointwise op reading `squeeze(k, 0)` reads `k` when its result has at least
    `k`'s rank: broadcasting adds the leading size-1 dim back by itself.

        %s = aten.squeeze %k dim = 0 : tensor<1x8xf32> -> tensor<8xf32>
        %r = aten.sub %g, %s : tensor<4x8xf32>, tensor<8xf32> -> tensor<4x8xf32>
        -> %r = aten.sub %g, %k : tensor<4x8xf32>, tensor<1x8xf32> -> tensor<4x8xf32>
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not op.has_trait(aten.Pointwise) or not op.results:
            return
        res_t = op.results[0].type
        if not isinstance(res_t, TensorType):
            return
        for i, v in enumerate(op.operands):
            if not isinstance(v, OpResult) or _squeezed_dim(v.op) != 0:
                continue
            k = v.op.operands[0]
            if inf.tensor_type(k.type).get_num_dims() > res_t.get_num_dims():
                continue
            op.operands[i] = k
            rewriter.handle_operation_modification(op)
            return


@dataclass
class SquareForPowTwo(RewritePattern):
    """`pow(x, 2)` -> `x * x` (exact: both round the same square once), as in the
    written-out RMSNorm `x.pow(2).mean(-1)`; a general `pow` costs a log and an exp.

        %r = aten.pow %x, %two : tensor<4x8xf32>, f64 -> tensor<4x8xf32>
        -> %r = aten.mul %x, %x : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        # Not `op_type_rewrite_pattern`: `aten.PowOp` is made by a factory, so a
        # type checker cannot read it as an annotation.
        if not isinstance(op, aten.PowOp):
            return
        exponent = op.operands[1]
        const = exponent.owner
        if not isinstance(const, ConstantOp) or not isinstance(op.operands[0].type, TensorType):
            return
        value = getattr(const.value, "value", None)
        if value is None or getattr(value, "data", None) != 2:
            return
        square = aten.MulOp(op.operands[0], op.operands[0])
        if square.result.type != op.results[0].type:
            square.erase()
            return
        square.attributes.update(op.attributes)
        _drop_unusable_hint(op)
        rewriter.replace(op, [square], [square.result])


@dataclass(frozen=True)
class DecomposeReductionsPass(ModulePass):
    """Normalizations to reductions + pointwise, reductions keep their dims (see the
    module docstring).

    fusec-opt -p decompose-reductions
    """

    name = "decompose-reductions"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    ExpandSoftmax(),
                    ExpandLayerNorm(),
                    KeepReducedDims(),
                    FoldUnsqueezeOfSqueeze(),
                    BroadcastSqueezedLeadingDim(),
                    SquareForPowTwo(),
                ]
            )
        ).rewrite_module(op)
