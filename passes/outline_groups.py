"""outline-groups: each `fusion.group` becomes a kernel function and a host-side
`fusion.launch` of it.

    func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
      %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
        %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
        fusion.yield %0 : tensor<4xf32>
      }
      func.return %r : tensor<4xf32>
    }
->
    func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
      %r = fusion.launch @f_group0(%a) : (tensor<4xf32>) -> tensor<4xf32>
      func.return %r : tensor<4xf32>
    }
    func.func private @f_group0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {fusion.kernel} {
      %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
      func.return %0 : tensor<4xf32>
    }
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.fusion import GroupOp, LaunchOp
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint


class OutlineGroup(RewritePattern):
    """`fusion.group` -> `fusion.launch @<func>_group<N>` + a private kernel function
    holding the group body (its `fusion.yield` turned into `func.return`)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GroupOp, rewriter: PatternRewriter, /):
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, func.FuncOp):
            parent = parent.parent_op()
        owner = parent.sym_name.data if isinstance(parent, func.FuncOp) else "kernel"
        n = self.counts.get(owner, 0)
        self.counts[owner] = n + 1
        name = f"{owner}_group{n}"
        body = op.body.clone()
        term = body.block.last_op
        assert term is not None
        ret = func.ReturnOp(*term.operands)
        body.block.insert_op_before(ret, term)
        body.block.erase_op(term)
        kernel = func.FuncOp(
            name,
            ([a.type for a in op.inputs], [r.type for r in op.outputs]),
            body,
            visibility="private",
        )
        kernel.attributes["fusion.kernel"] = UnitAttr()
        kernel.location = op.location  # diagnostics about the kernel point at the group
        anchor = parent if parent is not None else op
        rewriter.insert(kernel, InsertPoint.after(anchor))
        rewriter.replace(op, LaunchOp(name, list(op.inputs), [r.type for r in op.outputs]))


@dataclass(frozen=True)
class OutlineGroupsPass(ModulePass):
    """Outlines every `fusion.group` into a `fusion.kernel` function launched by
    `fusion.launch`; see the module docstring for the IR."""

    name = "outline-groups"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(OutlineGroup(), apply_recursively=False).rewrite_module(op)
