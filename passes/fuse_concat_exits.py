"""`fuse-concat-exits`: a `cat` of one group's outputs becomes an exit of that group.

As in the seeds' fuser (`fuser-concat-and-backward`): an LSTM backward ends in
`cat([di, df, dg, do], 1)` of four pointwise results; run separately, the cat is a
second pass over memory and the four parts are intermediates. Inside the group the
cat is an *exit*: the runtime allocates its result once and the kernel writes each
part straight into its slice (`lower-group-to-loops` records this as a `CatExit` in
the kernel signature, `fusec.runtime.operands.prepare` allocates and narrows).

    %r:2 = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
      %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
      %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
      fusion.yield %0, %1 : tensor<4x3xf32>, tensor<4x3xf32>
    }
    %c = aten.cat %r#0, %r#1 dim = -1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
->
    %c = fusion.group (%x = %a) : (tensor<4x3xf32>) -> (tensor<4x6xf32>) {
      %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
      %1 = aten.neg %x : tensor<4x3xf32> -> tensor<4x3xf32>
      %2 = aten.cat %0, %1 dim = 1 : tensor<4x3xf32>, tensor<4x3xf32> -> tensor<4x6xf32>
      fusion.yield %2 : tensor<4x6xf32>
    }

Parts computed by several groups (or lone pointwise ops) first merge into one
group at the latest one's place (`MergeGroupsOfCatParts`): in the seeds' LSTM
backward each gate's gradient starts a fusion group of its own, siblings with no
common pointwise consumer, and "allowing Concat nodes to be an exit node" is what
makes the backward one kernel. The merge is legal when no other op reads an
earlier part's group before the latest one (the graph stays acyclic), no kept
write lies between them, every merged group's outputs have the parts' shape (one
index space), and the group stays within `arg-limit`.

A part no group or pointwise op computes (an argument, a view, an op run
through PyTorch) is passed through: it becomes an input of the group, and the
kernel copies it into its slice, as `torch.cat` would. With symbolic sizes its
`?` dims may differ from the group's at run time: a size 1 is specialized (the
types then differ and the cat stays), other sizes that do not broadcast make
the kernel decline, and PyTorch's cat runs. Rotary embeddings'
`rotate_half`, `cat((-x2, x1))`, is then one kernel, not a `neg` and a `cat`:

    %n = aten.neg %x2 ; %c = aten.cat %n, %x1 dim = -1
    -> %c = fusion.group (%a = %x2, %b = %x1) { %n = aten.neg %a; aten.cat %n, %b; ... }

Conditions for the exit (anything else is left alone and the cat runs through PyTorch):
- every cat operand computed by a group is a result of the same `fusion.group`
  (lone pointwise ops merge or wrap into it first), every other operand is
  available at the group's place, and the cat is outside any group (so nothing
  in the group can use the cat's result);
- all parts have the same type shape, so the group's index space is the parts'
  shape and each part is one strided slice of the result along `dim`;
- the kernel stays within `arg-limit` inputs + outputs;
- no `aten.copy_` between the group and the cat may write a part (or a view of
  one): the exit writes the parts at the group's place, before such a write, while
  the cat must read the written values (`y = x.sin(); y.add_(1); cat([y, z])`).

A part that is also used outside the cat stays a group output as well: the kernel
then writes it twice (its own buffer and its slice). Handing the other users a
`narrow` of the cat instead would alias the two, which later passes and the
runtime do not model; the extra write is cheaper than a separate cat anyway.

`fuse` runs again after this pass (`FUSE_PIPELINE`):
once the cat is inside, the group may fuse into consumers that sat after the cat,
but never into one that reads the cat's result (`reads_cat_exit`).

A cat of one part no group computes is a copy kernel. With `lone-copies` (the
graphs AOTAutograd hands `torch.compile`'s backend) so is a cat of several such
parts of one type, the q/k/v gradients of a fused projection, as Inductor
makes it, instead of a `torch.cat`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusec.dialects.aten import CatOp, Reduction, ShapeOpBase
from fusec.dialects.fusion import GroupOp, YieldOp
from fusec.dialects.inference import normalize_dim
from fusec.passes.aliasing import tensor_roots, written_between
from fusec.passes.fusion_utils import (
    DEFAULT_ARG_LIMIT,
    FusionState,
    absorb_op,
    arg_count_after,
    check_arg_limit,
    in_group,
    is_pointwise,
    merge_groups,
    wrap_in_group,
)
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint


def _computed(v: SSAValue, block: Block) -> bool:
    """Is `v` computed by a group or a lone pointwise op of `block`? A cat's other
    parts (arguments, views, ops run through PyTorch) are passed through: the
    exit's kernel copies them into their slices."""
    return (
        isinstance(v, OpResult)
        and v.op.parent is block
        and (isinstance(v.op, GroupOp) or is_pointwise(v.op))
    )


def _available_at(v: SSAValue, group: GroupOp) -> bool:
    """Can `v` be an input of `group` where it stands: an argument of its block or
    of an enclosing one, or a value computed before it in its block?"""
    if isinstance(v, BlockArgument):
        return v.block.is_ancestor(group)
    return (
        isinstance(v, OpResult) and v.op.parent is group.parent and v.op.is_before_in_block(group)
    )


def _hoistable(v: SSAValue, group: GroupOp, moves: list[Operation]) -> bool:
    """Is `v` available at `group`'s place, or a view (chain) of such a value
    made between the group and the cat, which can move up to the group (then
    added to `moves`, in order)? Dynamo's `cat((-q[..., h:], q[..., :h]))`
    slices `x1` after the `neg`."""
    if _available_at(v, group):
        return True
    if not isinstance(v, OpResult) or v.op.parent is not group.parent:
        return False
    view = v.op
    if not isinstance(view, ShapeOpBase) or not _hoistable(view.input, group, moves):
        return False
    if view not in moves:
        moves.append(view)
    return True


def _exit_group(cat: CatOp) -> tuple[GroupOp, list[SSAValue], list[Operation]] | None:
    """The one group that computes `cat`'s computed parts, the parts passed
    through, and the views that must move up to the group's place for them to
    be available there, if there is such a group."""
    owners = {v.op for v in cat.inputs if isinstance(v, OpResult) and isinstance(v.op, GroupOp)}
    if len(owners) != 1:
        return None
    (owner,) = owners
    assert isinstance(owner, GroupOp)
    # A reduction kernel writes rows and full tensors in different loops: no cat exits.
    if any(op.has_trait(Reduction) for op in owner.body.block.ops):
        return None
    through = [v for v in cat.inputs if not (isinstance(v, OpResult) and v.op is owner)]
    block = cat.parent_block()
    moves: list[Operation] = []
    if block is None or any(
        _computed(v, block) or not _hoistable(v, owner, moves) for v in through
    ):
        return None
    return owner, list(dict.fromkeys(through)), moves


def _part_written_before(group: GroupOp, cat: CatOp) -> bool:
    """Does an `aten.copy_` between `group` and `cat` (same block) write a tensor that
    may share memory with one of the cat's parts? The cat would move up to the
    group's place, before the write, and read the parts unwritten."""
    return written_between(group, cat, tensor_roots(cat.inputs))


def _kernel_outputs(group: GroupOp) -> int:
    """Tensors the group's kernel writes: a cat exit writes one per part."""
    n = 0
    for v in group.yield_op.values:
        n += len(v.op.inputs) if isinstance(v, OpResult) and isinstance(v.op, CatOp) else 1
    return n


def reads_cat_exit(consumer: Operation, producer: Operation) -> bool:
    """Whether `consumer` reads a cat exit of the group `producer`: `fuse` must not
    merge them, as the cat's result is not of the group's index space (the seeds'
    condition that the concat's output is not used in the group)."""
    if not isinstance(producer, GroupOp):
        return False
    values = producer.yield_op.values
    return any(
        isinstance(v, OpResult) and v.op is producer and isinstance(values[v.index].owner, CatOp)
        for v in consumer.operands
    )


@dataclass
class MergeGroupsOfCatParts(RewritePattern):
    """The groups (and lone pointwise ops) computing a `cat`'s parts merge into one
    group at the latest one's place, so the cat can become its exit.

    %a = fusion.group (%x = %p) { %0 = aten.exp %x; fusion.yield %0 }
    %b = fusion.group (%y = %q) { %1 = aten.neg %y; fusion.yield %1 }
    %c = aten.cat %a, %b dim = 1
    -> %b, %a = fusion.group (%y = %q, %x = %p) { aten.exp; aten.neg; fusion.yield %1, %0 }
       %c = aten.cat %a, %b dim = 1
    """

    state: FusionState
    lone_copies: bool = False
    """A cat of several parts no group computes, all of one type, is a copy
    kernel too (`FuseConcatExitsPass.lone_copies`)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CatOp, rewriter: PatternRewriter, /) -> None:
        block = op.parent_block()
        if block is None or in_group(op):
            return
        owners: dict[Operation, None] = {}
        through: list[SSAValue] = []
        for v in op.inputs:
            if not _computed(v, block):
                through.append(v)  # passed through (`_computed`)
                continue
            assert isinstance(v, OpResult)
            if isinstance(v.op, GroupOp) and any(
                o.has_trait(Reduction) for o in v.op.body.block.ops
            ):
                return  # one reduction domain per group: `fuse` decides those merges
            owners[v.op] = None
        if not owners:
            # A cat of one part is a copy (a KV cache's `cat((past, k))` whose
            # empty past the import dropped): a copy kernel, as Inductor makes
            # it. Several parts no group computes stay one `torch.cat`, unless
            # copies are kernels (`lone_copies`) and the parts are one index
            # space (the q/k/v gradients of a fused projection).
            args = len(set(op.inputs)) + 1
            if len(op.inputs) == 1 or (
                self.lone_copies
                and len({v.type for v in op.inputs}) == 1
                and args <= self.state.arg_limit
            ):
                wrap_in_group(op, rewriter, self.state)
            return
        if len(owners) == 1 and through:
            # One lone op and parts passed through (rotary embeddings'
            # `cat((-x2, x1))`): its group will hold the cat.
            (only,) = owners
            if not isinstance(only, GroupOp):
                wrap_in_group(only, rewriter, self.state)
            return
        if len(owners) < 2:
            return
        # One index space: every output of every merged group has the parts' shape.
        shapes = {
            tuple(r.type.get_shape()) if isinstance(r.type, TensorType) else None
            for owner in owners
            for r in owner.results
        }
        if len(shapes) != 1 or None in shapes:
            return
        state = self.state
        ordered = sorted(owners, key=state.position)
        target = ordered[-1]
        for earlier in ordered[:-1]:
            if any(state.has_user_before(r, target) for r in earlier.results):
                return
            if state.crosses_write(earlier, target):
                return
        group = target if isinstance(target, GroupOp) else None
        for earlier in reversed(ordered[:-1]):
            if arg_count_after(group or target, earlier) > state.arg_limit:
                return  # what merged so far stays merged: legal, just no exit
            if group is None:
                group = wrap_in_group(target, rewriter, state)
            if isinstance(earlier, GroupOp):
                group = merge_groups(group, earlier, rewriter, state)
            else:
                group = absorb_op(group, earlier, rewriter, state)


@dataclass
class MoveCatIntoGroup(RewritePattern):
    """A `cat` of one group's outputs moves into the group, which yields the cat
    instead of the parts (parts with other users stay yielded too).

    %r:2 = fusion.group (...) { ...; fusion.yield %0, %1 }
    %c = aten.cat %r#0, %r#1 dim = -1
    -> %c = fusion.group (...) { ...; %2 = aten.cat %0, %1 dim = 1; fusion.yield %2 }
    """

    arg_limit: int = DEFAULT_ARG_LIMIT

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CatOp, rewriter: PatternRewriter, /) -> None:
        if in_group(op):
            return
        found = _exit_group(op)
        if found is None or found[0].parent is not op.parent:
            return
        group, through, moves = found
        if _part_written_before(group, op):
            return
        types = [t for v in op.inputs if isinstance(t := v.type, TensorType)]
        if len(types) != len(op.inputs):
            return
        if len({tuple(t.get_shape()) for t in types}) != 1:
            return
        # A part only the cat reads stops being an output of its own.
        keep = [r for r in group.results if any(u.operation is not op for u in r.uses)]
        inputs = list(group.inputs)
        added = [v for v in through if v not in inputs]
        n_args = len(inputs) + len(added) + _kernel_outputs(group) + len(op.inputs)
        n_args -= (
            len(group.results)
            - len(keep)
            + sum(isinstance(v, OpResult) and v.op is group for v in op.inputs)
        )
        if n_args > self.arg_limit:
            return

        # Views of passed-through parts move up: `_part_written_before` found no
        # write between the group and the cat to anything the parts view.
        for view in moves:
            view.detach()
            rewriter.insert(view, InsertPoint.before(group))
        rank = types[0].get_num_dims()
        body = Region()
        group.body.move_blocks(body)
        block = body.block
        old_yield = block.last_op
        assert isinstance(old_yield, YieldOp)
        # A part passed through is a block argument, an input copied to its slice.
        for v in added:
            block.insert_arg(v.type, len(block.args))
            inputs.append(v)
        arg_of = {v: block.args[inputs.index(v)] for v in through}
        parts = [
            old_yield.values[v.index] if isinstance(v, OpResult) and v.op is group else arg_of[v]
            for v in op.inputs
        ]
        inner = CatOp(parts, normalize_dim(op.dim.value.data, rank))
        inner.result.name_hint = op.result.name_hint
        yielded: list[SSAValue] = [old_yield.values[r.index] for r in keep]
        yielded.append(inner.result)
        block.insert_op_before(inner, old_yield)
        block.insert_op_before(YieldOp(*yielded), old_yield)
        block.erase_op(old_yield)

        new_group = GroupOp(inputs, [v.type for v in yielded], body)
        new_group.attributes.update(group.attributes)
        # At the group's place: kept outputs may have users before the cat.
        rewriter.insert(new_group, InsertPoint.before(group))
        rewriter.replace_all_uses_with(op.result, new_group.results[-1])
        rewriter.erase(op)
        new_results: list[SSAValue | None] = [None] * len(group.results)
        for r, new in zip(keep, new_group.results, strict=False):
            new_results[r.index] = new
        rewriter.replace(group, [], new_results)


@dataclass(frozen=True)
class FuseConcatExitsPass(ModulePass):
    """Moves each `aten.cat` of one group's equally-shaped outputs into the group as
    an exit (module docstring); runs after `fuse`.

    fusec-opt -p 'fuse,fuse-concat-exits' model.mlir
    """

    name = "fuse-concat-exits"

    arg_limit: int = field(default=DEFAULT_ARG_LIMIT)
    """Most inputs + outputs the group's kernel may take once the cat has joined."""

    lone_copies: bool = field(default=False)
    """A cat of several equally typed parts no group computes is a copy kernel
    (as `fuse{lone-copies=true}` makes a lone copy one), not a `torch.cat`."""

    def __post_init__(self) -> None:
        check_arg_limit(self.name, self.arg_limit)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        state = FusionState(arg_limit=self.arg_limit)
        PatternRewriteWalker(MergeGroupsOfCatParts(state, self.lone_copies)).rewrite_module(op)
        PatternRewriteWalker(MoveCatIntoGroup(self.arg_limit)).rewrite_module(op)
