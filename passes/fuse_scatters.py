"""fuse-scatters: an embedding table's gradient as a kernel of its own.

AOTAutograd's backward of every lookup is `embedding_dense_backward`, one ATen
call that zeroes a table and adds the gradient's rows into it, row by index;
GPT-2 ties its token table to its output projection, so that table's gradient
is also added to the projection's (`aten.add`, a second call). Inductor makes
both one kernel. Here the op becomes a group of its own, taking such an add of
a tensor of the table's type as the table's starting value (the kernel, in
`fusec.passes.lowering.scatter`, copies or zeroes the table and then adds the
rows in token order, as PyTorch's CPU kernel does):

    %g = aten.embedding_dense_backward %d, %ids num_weights = 100 padding_idx = -1 : ...
    %s = aten.add %mm, %g : tensor<100x32xf32>, tensor<100x32xf32> -> tensor<100x32xf32>
->
    %s = fusion.group (%a = %d, %b = %ids, %c = %mm) : (...) -> tensor<100x32xf32> {
      %g = aten.embedding_dense_backward %a, %b num_weights = 100 padding_idx = -1 : ...
      %s = aten.add %c, %g : tensor<100x32xf32>, tensor<100x32xf32> -> tensor<100x32xf32>
      fusion.yield %s : tensor<100x32xf32>
    }

CPU kernels only, as `fuse-gathers` (`compile_pipeline` leaves the pass out for
CUDA devices; the GPU lowering refuses the op).
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import AddOp, EmbeddingDenseBackwardOp
from fusec.dialects.fusion import GroupOp, YieldOp
from fusec.dialects.inference import BF16, F16, F32, F64
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint


def starting_table(op: EmbeddingDenseBackwardOp) -> tuple[AddOp, SSAValue] | None:
    """The add that is the only reader of `op`'s table gradient and adds it to
    another tensor of its type, and that tensor."""
    uses = list(op.result.uses)
    if len(uses) != 1 or not isinstance(add := uses[0].operation, AddOp):
        return None
    if (
        add.parent_block() is not op.parent_block()
        or add.alpha is not None
        and not (isinstance(add.alpha, IntegerAttr) and add.alpha.value.data == 1)
    ):
        return None
    other = add.rhs if add.lhs is op.result else add.lhs
    if other is op.result or other.type != op.result.type or add.result.type != op.result.type:
        return None
    return add, other


def _kernel_can_take(op: EmbeddingDenseBackwardOp) -> bool:
    """A float gradient of ids with at least one dim (the kernel's reduced dims)."""
    g, ids = op.grad.type, op.indices.type
    return (
        isinstance(g, TensorType)
        and isinstance(ids, TensorType)
        and g.get_element_type() in (F16, BF16, F32, F64)
        and ids.get_num_dims() > 0
    )


@dataclass
class ScatterIntoKernel(RewritePattern):
    """`embedding_dense_backward(d, ids)` (`+ t`) -> `group(d, ids (, t)) { ... }`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: EmbeddingDenseBackwardOp, rewriter: PatternRewriter) -> None:
        if isinstance(op.parent_op(), GroupOp) or not _kernel_can_take(op):
            return
        init = starting_table(op)
        inputs = list(dict.fromkeys([op.grad, op.indices] + ([init[1]] if init else [])))
        block = Block(arg_types=[v.type for v in inputs])
        arg_of = dict(zip(inputs, block.args, strict=True))
        scatter = EmbeddingDenseBackwardOp(
            arg_of[op.grad],
            arg_of[op.indices],
            op.num_weights.value.data,
            op.padding_idx.value.data,
        )
        body: list[Operation] = [scatter]
        last: Operation = op
        if init is not None:
            add, start = init
            lhs: SSAValue = arg_of[start]
            rhs: SSAValue = scatter.result
            if add.lhs is op.result:
                lhs, rhs = rhs, lhs
            body.append(AddOp.build(operands=[lhs, rhs], result_types=[add.result.type]))
            last = add
        block.add_ops([*body, YieldOp(body[-1].results[0])])
        group = GroupOp(inputs, [last.results[0].type], Region(block))
        group.verify()
        rewriter.insert(group, InsertPoint.before(last))
        rewriter.replace(last, [], [group.results[0]])
        if last is not op:
            rewriter.erase(op)


@dataclass(frozen=True)
class FuseScattersPass(ModulePass):
    """Each embedding table's gradient becomes a group of its own, with the add
    of a tied weight's other gradient (see the module docstring).

    fusec-opt -p fuse-scatters
    """

    name = "fuse-scatters"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(ScatterIntoKernel(), apply_recursively=False).rewrite_module(op)
