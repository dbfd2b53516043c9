"""`fuse`: pointwise producers fuse into their consumers' `fusion.group`s.

The semantics are those of the seeds' `CudaGraphFuser`: ops are scanned in reverse
topological order; a consumer tries its producers in reverse topological order (so
in `f(a, a + b)` the `a + b` fusion is seen before `a` looks used twice); a
producer whose results are also used outside joins only if those uses come after
the group (so the graph stays acyclic), and they then read extra group outputs;
a producing group merges into its consuming group; the walk repeats until nothing
changes. Constants are cloned into groups, `aten.chunk` joins when the group holds
all its uses (`aten.transpose`/`aten.permute` too, into a group already formed),
and a group never exceeds `arg-limit` inputs + outputs nor
`max-group-ops` ops. A reduction of a tensor no fusible op produces (an
argument, a matmul's result) joins a reducing group over the same domain that
reads that tensor (`sibling-reductions`: a layer norm's bias gradient beside
its weight gradient); one that fuses with nothing and keeps some dims is a
group of its own (`lone-reductions`: ViT's q/k/v bias gradients).

    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
      %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
      func.return %1 : tensor<4xf32>
    }
    ->
    func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %1 = fusion.group (%a = %x) : (tensor<4xf32>) -> (tensor<4xf32>) {
        %0 = aten.exp %a : tensor<4xf32> -> tensor<4xf32>
        %2 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
        fusion.yield %2 : tensor<4xf32>
      }
      func.return %1 : tensor<4xf32>
    }
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusec.dialects.aten import CatOp, ChunkOp, PermuteOp, ToOp, TransposeOp
from fusec.dialects.fusion import GroupOp
from fusec.dialects.inference import broadcast_shapes
from fusec.passes.aliasing import is_view_op
from fusec.passes.fuse_concat_exits import reads_cat_exit
from fusec.passes.fusion_remarks import RejectionLog, collecting
from fusec.passes.fusion_utils import (
    DEFAULT_ARG_LIMIT,
    FusionState,
    absorb_op,
    arg_count_after,
    check_arg_limit,
    consumer_inputs,
    in_group,
    is_consumer,
    is_pointwise,
    merge_groups,
    wrap_in_group,
)
from fusec.passes.lowering.reduction_domain import fusion_shape, is_fusible_reduction
from fusec.passes.view_placement import move_views_to_first_use
from xdsl.context import Context
from xdsl.dialects.builtin import AnyFloat, ModuleOp, TensorType
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.transforms.common_subexpression_elimination import cse
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.utils.exceptions import VerifyException

DEFAULT_MAX_GROUP_OPS = 512
"""The default cap on a group's ops: far above any real fused tail, low enough
that a 10,000-op chain compiles in seconds, not hours."""


def _is_producer_for(consumer: Operation, producer: Operation) -> bool:
    """Pointwise ops and groups fuse; a chunk fuses only if `consumer` holds all its
    uses (its outputs become views inside the group, as the seeds' ConstantChunk);
    so does a transpose or permute, into a group already formed (strides the
    kernel's launch plan works out once per input layout, where outside the group
    they were a PyTorch call per call; a view and one op alone stay with ATen, as
    one op alone does)."""
    if isinstance(producer, GroupOp) or is_pointwise(producer) or is_fusible_reduction(producer):
        return (
            not in_group(producer)
            and not reads_cat_exit(consumer, producer)
            and not _transposed_inside(consumer, producer)
        )
    if isinstance(producer, TransposeOp | PermuteOp) and not isinstance(consumer, GroupOp):
        return False
    if isinstance(producer, ChunkOp | TransposeOp | PermuteOp):
        return all(u.operation is consumer for r in producer.results for u in r.uses)
    return False


def _transposed_inside(consumer: Operation, producer: Operation) -> bool:
    """Does a transpose or permute in `consumer`'s group read a result of
    `producer`? It would read a computed value after the merge, and a kernel
    takes strides only of its inputs (a view of an argument)."""
    if not isinstance(consumer, GroupOp):
        return False
    block = consumer.body.block
    for result in producer.results:
        for use in result.uses:
            if use.operation is consumer and any(
                isinstance(u.operation, TransposeOp | PermuteOp)
                for u in block.args[use.index].uses
            ):
                return True
    return False


def try_fuse(
    consumer: Operation,
    producer: Operation,
    rewriter: PatternRewriter,
    state: FusionState,
    inputs: set[SSAValue] | None = None,
    rejections: RejectionLog | None = None,
) -> bool:
    """The seeds' `tryFuse`: move `producer` into `consumer`'s group if that is legal.
    A refusal of a fusable pair is noted in `rejections` (see `fusion_remarks`)."""
    if producer is consumer:
        return False
    if not _is_producer_for(consumer, producer):
        if (
            rejections is not None
            and (isinstance(producer, GroupOp) or is_pointwise(producer))
            and reads_cat_exit(consumer, producer)
        ):
            rejections.refused(
                consumer,
                producer,
                "cat-exit",
                f"{_what(producer, state)} reads a cat exit of the group",
            )
        return False
    if any(state.has_user_before(r, consumer) for r in producer.results):
        if rejections is not None:
            rejections.refused(
                consumer,
                producer,
                "cycle",
                f"another user of {_what(producer, state)} comes before {_what(consumer, state)}",
            )
        return False
    if state.crosses_write(producer, consumer):
        if rejections is not None:
            rejections.refused(
                consumer,
                producer,
                "alias-write",
                f"an aten.copy_ between {_what(producer, state)} and {_what(consumer, state)} "
                "may write what it reads",
            )
        return False
    count = arg_count_after(consumer, producer, inputs)
    if count > state.arg_limit:
        if rejections is not None:
            rejections.refused(
                consumer,
                producer,
                "arg-limit",
                f"fusing {_what(producer, state)} into {_what(consumer, state)} needs {count} kernel "
                f"arguments (arg-limit={state.arg_limit})",
            )
        return False
    size = _ops(consumer, state) + _ops(producer, state) if state.max_group_ops else 0
    if size > state.max_group_ops:
        if rejections is not None:
            rejections.refused(
                consumer,
                producer,
                "group-size",
                f"fusing {_what(producer, state)} into {_what(consumer, state)} makes a group of "
                f"{size} ops (max-group-ops={state.max_group_ops})",
            )
        return False
    # One kernel loops over one reduction domain (see `reduction_domain`).
    shapes = state.fusion_shapes
    mine, theirs = fusion_shape(consumer, shapes), fusion_shape(producer, shapes)
    joined = mine.join(theirs) if mine is not None and theirs is not None else None
    if joined is None:
        return False
    reducing = state.reduces(consumer) or state.reduces(producer)
    if not reducing and not _outputs_broadcast(consumer, producer):
        return False
    group = consumer if isinstance(consumer, GroupOp) else wrap_in_group(consumer, rewriter, state)
    if isinstance(producer, GroupOp):
        # The larger body is kept, so the group that remains may be `producer`.
        group = merge_groups(group, producer, rewriter, state)
    else:
        absorb_op(group, producer, rewriter, state)
    shapes[group] = joined
    state.fused(group, reducing)
    return True


def _what(op: Operation, state: FusionState) -> str:
    """The op's name, or a group's first op and size (O(1): refusals are many)."""
    if isinstance(op, GroupOp):
        first = op.body.block.first_op
        return f"a group of {state.size(op) - 1} op(s) from {getattr(first, 'name', '?')}"
    return op.name


def _ops(op: Operation, state: FusionState) -> int:
    return state.size(op) - 1 if isinstance(op, GroupOp) else 1  # less its yield


def _outputs_broadcast(*ops: Operation) -> bool:
    """Can one kernel compute the results of `ops` (none of which reduces:
    for reduction groups `reduction_domain` decides what fits)? It runs over a
    single index space, so their shapes must broadcast together: a producer
    feeding `a + y` (2x3) and `a * z` (5x3) stays out of a group holding both.
    (A cat exit's result is written part by part and does not count.)"""
    shapes: list[tuple[int, ...]] = []
    for op in ops:
        yielded = op.yield_op.values if isinstance(op, GroupOp) else op.results
        for r, v in zip(op.results, yielded, strict=True):
            if isinstance(r.type, TensorType) and not isinstance(v.owner, CatOp):
                shapes.append(tuple(r.type.get_shape()))
    try:
        broadcast_shapes(*shapes)
    except VerifyException:
        return False
    return True


@dataclass
class FuseProducerIntoConsumer(RewritePattern):
    """Fuse one producer (op or group) into a consumer, creating its group if needed.

        %0 = aten.exp %x ; %1 = aten.neg %0
        -> %1 = fusion.group (%a = %x) { aten.exp ; aten.neg ; fusion.yield }

    Producers are tried latest first; the new group is rescanned by the walker.
    """

    state: FusionState
    rejections: RejectionLog | None = None

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        block = op.parent_block()
        if block is None or in_group(op) or not is_consumer(op):
            return
        retry = self.state.producers_to_retry(op)
        if retry == []:
            return
        # Producers are found among the inputs: scalar constants are never producers.
        inputs = consumer_inputs(op)
        if retry is None:
            producers = {
                v.op: None for v in inputs if isinstance(v, OpResult) and v.op.parent is block
            }
        else:
            producers = {
                p: None for p in retry if p.parent is block and any(r in inputs for r in p.results)
            }
        for producer in sorted(producers, key=self.state.position, reverse=True):
            if try_fuse(op, producer, rewriter, self.state, inputs, self.rejections):
                return
        self.state.scanned(op)


@dataclass
class FuseSiblingsHorizontally(RewritePattern):
    """Fuse an earlier op that reads the same tensor into this consumer's group,
    so the tensor is read once.

        %0 = aten.exp %x ; %1 = aten.neg %x
        -> %0, %1 = fusion.group (%a = %x) { aten.exp %a ; aten.neg %a ; fusion.yield }
    """

    state: FusionState
    rejections: RejectionLog | None = None

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        block = op.parent_block()
        if block is None or in_group(op) or not is_consumer(op):
            return
        here = self.state.position(op)
        for value in dict.fromkeys(op.operands):
            if not isinstance(value.type, TensorType) or value.type.get_num_dims() == 0:
                continue
            siblings = {
                anc: None
                for use in value.uses
                if (anc := block.find_ancestor_op_in_block(use.operation)) is not None
                and anc is not op
            }
            for sib in siblings:
                if (isinstance(sib, GroupOp) or is_pointwise(sib)) and self.state.position(
                    sib
                ) < here:
                    if try_fuse(op, sib, rewriter, self.state, None, self.rejections):
                        return


@dataclass
class FuseReductionIntoSibling(RewritePattern):
    """A reduction whose input no fusible op produces (a function argument, a
    matmul's result) joins a group that reads the same tensor and reduces over
    the same domain, moving up to it: the tensor is read once, and the
    reduction is no PyTorch call of its own. A layer norm's backward sums its
    incoming gradient for the bias beside the weight gradient's group:

        %gw = fusion.group (%a = %g, %b = %h) { %p = aten.mul %a, %b
                                                aten.sum %p dims = [0, 1] keepdim = true }
        %gb = aten.sum %g dims = [0, 1] keepdim = true
        ->
        %gb, %gw = fusion.group (%a = %g, %b = %h) { aten.sum %a dims = [0, 1] ...
                                                     %p = aten.mul %a, %b ; aten.sum %p ... }

    (A reduction whose input a fusible op produces fuses with that producer
    instead; `horizontal` joins pointwise siblings too.)
    """

    state: FusionState
    rejections: RejectionLog | None = None
    settled: bool = False
    """After the fusion walk: a reduction whose producer could have taken it but
    did not (a group whose exit is a `cat`) looks for a sibling too."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        block = op.parent_block()
        if block is None or in_group(op) or not is_fusible_reduction(op):
            return
        value = op.operands[0]
        if isinstance(value, OpResult) and value.op.parent is block and not self.settled:
            if _is_producer_for(op, value.op):
                return
        domain = fusion_shape(op, self.state.fusion_shapes)
        for use in list(value.uses):
            sib = block.find_ancestor_op_in_block(use.operation)
            if not isinstance(sib, GroupOp) or sib is op or not self.state.reduces(sib):
                continue
            theirs = fusion_shape(sib, self.state.fusion_shapes)
            if domain is None or theirs is None or theirs.domain != domain.domain:
                continue
            if try_fuse(sib, op, rewriter, self.state, None, self.rejections):
                return


@dataclass
class WrapSingleOpInGroup(RewritePattern):
    """Put every pointwise op in a group of its own (only with `singleton-groups`).

    %0 = aten.exp %x -> %0 = fusion.group (%a = %x) { aten.exp %a ; fusion.yield }
    """

    state: FusionState

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.parent_block() is None or in_group(op) or not is_pointwise(op):
            return
        wrap_in_group(op, rewriter, self.state)


@dataclass
class WrapLoneReductionInGroup(RewritePattern):
    """A reduction that fused with nothing (its input an argument, a matmul's or
    an opaque op's result) and keeps some dims becomes a group of its own, so it
    runs as a kernel rather than a PyTorch call (only with `lone-reductions`,
    after the fusion walk). ViT's q/k/v bias gradients are such column sums of
    the attention backward's output:

        %db = aten.sum %g dims = [0] keepdim = true : tensor<148x192xf32> -> tensor<1x192xf32>
        ->
        %db = fusion.group (%a = %g) : (tensor<148x192xf32>) -> (tensor<1x192xf32>) {
          %s = aten.sum %a dims = [0] keepdim = true : tensor<148x192xf32> -> tensor<1x192xf32>
          fusion.yield %s : tensor<1x192xf32>
        }

    A reduction to one value stays PyTorch's: ATen splits it over threads,
    where a kernel splits only the dims it keeps.
    """

    state: FusionState

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if op.parent_block() is None or in_group(op) or not is_fusible_reduction(op):
            return
        kept = [r.type for r in op.results]
        if not all(isinstance(t, TensorType) and _keeps_a_dim(t) for t in kept):
            return
        self.state.fused(wrap_in_group(op, rewriter, self.state), True)


@dataclass
class WrapLoneCopyInGroup(RewritePattern):
    """A copy (`aten.to`: `contiguous()`, `clone()`, a float cast) that fused with
    nothing becomes a group of its own, so it runs as a kernel rather than a
    PyTorch call (only with `lone-copies`, after the fusion walk). AOTAutograd's
    graphs copy attention outputs and gradients to contiguous memory before the
    products read them; the kernel copies any strides:

        %c = aten.to %t : tensor<2x8x4x8xf32> -> tensor<2x8x4x8xf32>
        ->
        %c = fusion.group (%a = %t) : (tensor<2x8x4x8xf32>) -> (tensor<2x8x4x8xf32>) {
          %r = aten.to %a : tensor<2x8x4x8xf32> -> tensor<2x8x4x8xf32>
          fusion.yield %r : tensor<2x8x4x8xf32>
        }
    """

    state: FusionState

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not isinstance(op, ToOp) or op.parent_block() is None or in_group(op):
            return
        types = (op.input.type, op.result.type)
        if not is_pointwise(op) or not all(
            isinstance(t, TensorType) and isinstance(t.get_element_type(), AnyFloat) for t in types
        ):
            return
        self.state.fused(wrap_in_group(op, rewriter, self.state), True)


def _keeps_a_dim(t: TensorType) -> bool:
    """Whether a reduction's result of type `t` holds more than one value, or may
    (a symbolic size)."""
    return any(n != 1 for n in t.get_shape())


@dataclass(frozen=True)
class FusePass(ModulePass):
    """Form `fusion.group`s of pointwise work (see the module docstring).

    fusec-opt -p 'fuse{arg-limit=128 max-group-ops=512 horizontal=false singleton-groups=false sibling-reductions=true lone-reductions=true lone-copies=false}'
    """

    name = "fuse"

    arg_limit: int = field(default=DEFAULT_ARG_LIMIT)
    """Most inputs + outputs a group (one kernel) may take."""

    max_group_ops: int = field(default=DEFAULT_MAX_GROUP_OPS)
    """Most ops one group may hold, not counting the scalar constants cloned in
    (0: no cap). Compiling a kernel grows faster than linearly in its size
    (lowering, LLVM's O3), so long chains are cut into kernels of at most this
    many ops; identical pieces share one kernel (constants do not count, so a
    chain repeating a pattern of k ops is cut into identical pieces whenever k
    divides the cap)."""

    horizontal: bool = field(default=False)
    """Also fuse siblings that read the same tensor."""

    sibling_reductions: bool = field(default=True)
    """A reduction of an unfused tensor joins a reducing group over the same
    domain that reads it (`FuseReductionIntoSibling`)."""

    singleton_groups: bool = field(default=False)
    """Give pointwise ops that fuse with nothing a group of their own."""

    lone_reductions: bool = field(default=True)
    """Give reductions that fuse with nothing and keep some dims a group of
    their own (`WrapLoneReductionInGroup`): a bias gradient's column sum of a
    matmul's or an opaque op's result is then a kernel, not a PyTorch call."""

    lone_copies: bool = field(default=False)
    """Give copies and float casts that fuse with nothing a group of their own
    (`WrapLoneCopyInGroup`). On for the graphs AOTAutograd hands `torch.compile`'s
    backend, where a model's step pays each PyTorch call (as Inductor, which makes
    every copy a kernel); off elsewhere, where one op alone stays with PyTorch."""

    def __post_init__(self) -> None:
        check_arg_limit(self.name, self.arg_limit)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        move_views_to_first_use(op)
        state = FusionState(arg_limit=self.arg_limit, max_group_ops=self.max_group_ops)
        # Why ops stay unfused is noted only when someone collects it (fusion_remarks).
        rejections = RejectionLog() if collecting() else None
        patterns: list[RewritePattern] = []
        if self.singleton_groups:
            patterns.append(WrapSingleOpInGroup(state))
        patterns.append(FuseProducerIntoConsumer(state, rejections))
        if self.horizontal:
            patterns.append(FuseSiblingsHorizontally(state, rejections))
        if self.sibling_reductions:
            patterns.append(FuseReductionIntoSibling(state, rejections))

        def next_walk(_region: object, _listener: object) -> bool:
            state.new_walk()
            return False  # it changes no IR

        def walk(patterns: list[RewritePattern], reverse: bool) -> None:
            PatternRewriteWalker(
                GreedyRewritePatternApplier(patterns),
                walk_reverse=reverse,
                apply_recursively=True,
                post_walk_func=next_walk,
            ).rewrite_module(op)

        walk(patterns, reverse=True)
        if self.lone_reductions:
            # After the walk, when what fused is settled, in program order: a lone
            # reduction joins the group an earlier sibling was wrapped in (its
            # users all come after that group) instead of wrapping alone.
            lone: list[RewritePattern] = [WrapLoneReductionInGroup(state)]
            if self.sibling_reductions:
                lone.insert(0, FuseReductionIntoSibling(state, rejections, settled=True))
            walk(lone, reverse=False)
        if self.lone_copies:
            walk([WrapLoneCopyInGroup(state)], reverse=False)
        self._clean_up(op, state)
        if rejections is not None:
            rejections.finish(op, is_pointwise)

    @staticmethod
    def _clean_up(module: ModuleOp, state: FusionState) -> None:
        # Merging groups and cloning constants leaves duplicates and dead values
        # behind, inside groups (CSE, DCE) and outside (constants now cloned in).
        for group in [g for g in module.walk() if isinstance(g, GroupOp)]:
            cse(group.body)
            _recompute_repeated_results(group)
            region_dce(group.body)
        for const in state.cloned_constants:
            if const.parent is not None and not any(r.uses for r in const.results):
                const.erase()


def _recompute_repeated_results(group: GroupOp) -> None:
    """A fresh tensor yielded twice after CSE is computed once per result again.

    Eager PyTorch made two tensors of `x - y` written twice, so an in-place write
    to one must not show in the other; a group that runs through PyTorch (no
    kernel, or its guard's fallback copy) would hand out one tensor twice. Views
    stay shared: two equal views of one tensor alias in eager too.

        %a = aten.sub(%x, %y)            %a = aten.sub(%x, %y)
        %b = aten.sub(%x, %y)    ->      %b = aten.sub(%x, %y)
        fusion.yield(%a, %b)             fusion.yield(%a, %b)
    (after CSE: `fusion.yield(%a, %a)`, which this undoes)
    """
    yield_op = group.yield_op
    seen: set[SSAValue] = set()
    for i, value in enumerate(yield_op.operands):
        if (
            value in seen
            and isinstance(value, OpResult)
            and value.op.parent is group.body.block
            and not is_view_op(value.op)
        ):
            copy = value.op.clone()
            group.body.block.insert_op_before(copy, yield_op)
            yield_op.operands[i] = copy.results[value.index]
        seen.add(value)
