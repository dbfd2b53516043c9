"""`fuse-gathers`: an embedding lookup joins the group that reads its rows, so
the kernel gathers them from the table instead of PyTorch copying them out
first (an ATen call and a write and read of every row per call).

A language model's first kernel adds its token embeddings (and learned
positions) and normalizes them; the lookup `aten.embedding` ran through
PyTorch before it. Here the group takes the table and the indices instead of
the rows, and computes the lookup itself:

    %e = aten.embedding %w, %ids : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
    %r = fusion.group (%a = %e, %b = %p) : (tensor<2x8x32xf32>, tensor<1x8x32xf32>) -> (tensor<2x8x32xf32>) {
      %s = aten.add %a, %b : ...
      fusion.yield %s : tensor<2x8x32xf32>
    }
->
    %r = fusion.group (%b = %p, %t = %w, %i = %ids) : (tensor<1x8x32xf32>, tensor<100x32xf32>, tensor<2x8xi64>) -> (tensor<2x8x32xf32>) {
      %a = aten.embedding %t, %i : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
      %s = aten.add %a, %b : ...
      fusion.yield %s : tensor<2x8x32xf32>
    }

The lookup joins the first group reading it; readers after that group read
the rows as an extra output of it (AOTAutograd saves a norm's input for the
backward). It stays out when a reader comes before that group, when an
`aten.copy_` between them may write the table or the indices, when the table's
sizes are not static, or when the group would pass the argument limit. The
kernel reads the table as a contiguous one (`guard` checks it per call, and
runs the ops unfused otherwise). CPU kernels only: they flag indices out of
range, so the call raises eager's `IndexError` (`compile_pipeline` leaves the
pass out for CUDA devices).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusec.dialects.aten import CopyOp, EmbeddingOp
from fusec.dialects.fusion import GroupOp, YieldOp
from fusec.dialects.inference import DYNAMIC
from fusec.passes.aliasing import alias_root, may_alias, tensor_roots
from fusec.passes.fusion_utils import DEFAULT_ARG_LIMIT, check_arg_limit
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint


def _first_group_reader(op: EmbeddingOp) -> GroupOp | None:
    """The first group reading `op`'s rows, if every other reader comes after it
    and no `aten.copy_` between them may write the table or the indices (the
    lookup would read them after the write)."""
    block = op.parent_block()
    readers = {u.operation for u in op.result.uses}
    if block is None or any(r.parent_block() is not block for r in readers):
        return None
    reads = tensor_roots([op.weight, op.indices])
    o = op.next_op
    while o is not None and o not in readers:
        if isinstance(o, CopyOp) and any(may_alias(alias_root(o.dst), r) for r in reads):
            return None
        o = o.next_op
    return o if isinstance(o, GroupOp) else None


def _with_lookup(group: GroupOp, op: EmbeddingOp, extra_output: bool) -> GroupOp:
    """`group` taking the table and indices for `op`'s rows, and computing them
    (also yielding them when `extra_output`)."""
    rows = op.result
    inputs = [v for v in group.inputs if v != rows]
    for v in (op.weight, op.indices):
        if v not in inputs:
            inputs.append(v)
    old = group.body.block
    block = Block(arg_types=[v.type for v in inputs])
    arg_of = dict(zip(inputs, block.args, strict=True))
    lookup = EmbeddingOp(arg_of[op.weight], arg_of[op.indices])
    block.add_op(lookup)
    for ov, arg in zip(group.inputs, old.args, strict=True):
        arg.replace_all_uses_with(lookup.result if ov == rows else arg_of[ov])
    term = old.last_op
    assert isinstance(term, YieldOp)
    for inner in list(old.ops)[:-1]:
        inner.detach()
        block.add_op(inner)
    # The old yield goes with the old group, through the rewriter.
    extra = [lookup.result] if extra_output else []
    block.add_op(YieldOp(*term.operands, *extra))
    result_types = [*group.result_types, *(rows.type for _ in extra)]
    return GroupOp(inputs, result_types, Region(block))


@dataclass
class LookupIntoReader(RewritePattern):
    """`group(embedding(w, ids), ...)` -> `group(..., w, ids) { embedding(...) ... }`."""

    arg_limit: int

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: EmbeddingOp, rewriter: PatternRewriter) -> None:
        w = op.weight.type
        if not isinstance(w, TensorType) or DYNAMIC in w.get_shape():
            return
        if isinstance(op.parent_op(), GroupOp):
            return
        group = _first_group_reader(op)
        if group is None:
            return
        others = [u for u in op.result.uses if u.operation is not group]
        inputs = {v for v in group.inputs if v != op.result} | {op.weight, op.indices}
        if len(inputs) + len(group.results) + bool(others) > self.arg_limit:
            return
        new = _with_lookup(group, op, bool(others))
        new.verify()
        rewriter.insert(new, InsertPoint.before(group))
        n = len(group.results)
        rewriter.replace(group, [], list(new.results[:n]))
        if others:
            op.result.replace_all_uses_with(new.results[n])
        rewriter.erase(op)


@dataclass(frozen=True)
class FuseGathersPass(ModulePass):
    """An embedding lookup joins the first group reading its rows (see the
    module docstring).

    fusec-opt -p 'fuse-gathers{arg-limit=128}'
    """

    name = "fuse-gathers"
    arg_limit: int = field(default=DEFAULT_ARG_LIMIT)
    """Most inputs + outputs the group's kernel may take once the lookup has joined."""

    def __post_init__(self) -> None:
        check_arg_limit(self.name, self.arg_limit)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            LookupIntoReader(self.arg_limit), apply_recursively=False
        ).rewrite_module(op)
