"""guard: each `fusion.group` runs only on inputs it was specialized for.

As the seeds' `guardFusionGroup`: a `fusion.guard` checks every tensor input
against the group's specialization (dtype and rank from its type, which dims are
1, layout, device), and an `scf.if` on it runs the group or, when the check
fails, the group's ops unfused (the body cloned, block arguments replaced by the
group's operands), which the runtime runs through PyTorch:

    %r = fusion.group (%x = %a, %y = %b) : (tensor<4x1xf32>, tensor<3xf32>)
        -> (tensor<4x3xf32>) {
      %0 = aten.add %x, %y : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
      fusion.yield %0 : tensor<4x3xf32>
    }
->
    %ok = fusion.guard (%a : tensor<4x1xf32> <ones = [1], layout = any, device = "cpu">,
                        %b : tensor<3xf32> <ones = [], layout = any, device = "cpu">)
    %r = scf.if %ok -> (tensor<4x3xf32>) {
      %g = fusion.group (%x = %a, %y = %b) ... { ... }
      scf.yield %g : tensor<4x3xf32>
    } else {
      %0 = aten.add %a, %b : tensor<4x1xf32>, tensor<3xf32> -> tensor<4x3xf32>
      scf.yield %0 : tensor<4x3xf32>
    }

Layout: fusec's kernels take a runtime stride per operand and dim (broadcast dims
are stride 0, views are strides over the base tensor), so any layout is correct
for them and the default `layout=any` never trades a kernel for the fallback over
strides alone. `layout=contiguous` is for kernels that index their operands flat.

Groups without tensor inputs have nothing to check and stay as they are; a group
already in the then-branch of a guarded `scf.if` is left alone, so the pass is
idempotent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fusec.dialects.aten import EmbeddingOp, Pointwise
from fusec.dialects.fusion import LAYOUTS, GroupOp, GuardOp, InputSpecAttr, YieldOp
from fusec.passes.fusion_remarks import cloned_from
from xdsl.context import Context
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException


def is_guarded(group: GroupOp) -> bool:
    """Whether `group` is the then-branch of an `scf.if` on a `fusion.guard`."""
    parent = group.parent_op()
    return (
        isinstance(parent, scf.IfOp)
        and isinstance(parent.cond.owner, GuardOp)
        and group.parent_region() is parent.true_region
    )


def input_spec(value: SSAValue, layout: str, device: str) -> InputSpecAttr:
    """The spec a tensor input of type `value.type` is compiled for."""
    t = value.type
    assert isinstance(t, TensorType)
    return InputSpecAttr([d for d, s in enumerate(t.get_shape()) if s == 1], layout, device)


def _gathered_tables(group: GroupOp) -> set[SSAValue]:
    """The group's inputs that an `aten.embedding` in it reads as its table: its
    kernel reads row `i` at `i * row size`, so they must be contiguous."""
    args: dict[SSAValue, SSAValue] = dict(zip(group.body.block.args, group.inputs, strict=True))
    return {
        args[op.weight]
        for op in group.body.block.ops
        if isinstance(op, EmbeddingOp) and op.weight in args
    }


@dataclass
class GuardGroup(RewritePattern):
    """`%r = fusion.group (...)` -> `%ok = fusion.guard (...)` +
    `%r = scf.if %ok { fusion.group; scf.yield } else { body ops; scf.yield }`."""

    layout: str
    device: str

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GroupOp, rewriter: PatternRewriter) -> None:
        if is_guarded(op):
            return
        tensors = [v for v in op.inputs if isinstance(v.type, TensorType)]
        if not tensors:
            return
        tables = _gathered_tables(op)
        guard = GuardOp(
            tensors,
            [
                input_spec(v, "contiguous" if v in tables else self.layout, self.device)
                for v in tensors
            ],
        )
        guard.ok.name_hint = "ok"
        fallback = Block()
        mapping: dict[SSAValue, SSAValue] = dict(zip(op.body.block.args, op.inputs, strict=True))
        for inner in op.body.block.ops:
            if isinstance(inner, YieldOp):
                fallback.add_op(scf.YieldOp(*[mapping.get(v, v) for v in inner.values]))
                break
            fallback.add_op(inner.clone(value_mapper=mapping))
        group = op.clone()
        cloned_from(group, op)
        kernel = Block([group, scf.YieldOp(*group.outputs)])
        branch = scf.IfOp(guard.ok, [r.type for r in op.outputs], Region(kernel), Region(fallback))
        rewriter.replace(op, [guard, branch], list(branch.results))


@dataclass(frozen=True)
class GuardPass(ModulePass):
    """Guard every `fusion.group` with `fusion.guard` + `scf.if` (module docstring).

    fusec-opt -p 'fuse,guard{device=cuda}' model.mlir
    fusec-opt -p 'fuse,guard{device="cuda:1"}' model.mlir   # an indexed device is quoted
    """

    name = "guard"

    device: str = "cpu"
    """The device the kernels are compiled for: `cpu`, `cuda` or e.g. `cuda:1`."""
    layout: str = "any"
    """What the guard requires of input strides: `any` or `contiguous`."""

    def __post_init__(self) -> None:
        if re.fullmatch(r"cpu|cuda(:\d+)?", self.device) is None:
            raise ValueError(f"guard: device must be cpu, cuda or cuda:N, got {self.device!r}")
        if self.layout not in LAYOUTS:
            raise ValueError(
                f"guard: layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.layout not in LAYOUTS:
            raise DiagnosticException(
                f"guard: layout must be one of {', '.join(LAYOUTS)}, got {self.layout!r}"
            )
        PatternRewriteWalker(
            GuardGroup(self.layout, self.device), apply_recursively=False
        ).rewrite_module(op)


_GENERIC_BARRIERS = frozenset(
    {
        "aten.mm",
        "aten.matmul",
        "aten.linear",
        "aten.addmm",
        "aten.scaled_dot_product_attention",
        "aten.sym_size",
    }
)
"""Non-pointwise ops whose eager form reads nothing from the example inputs."""


def why_not_input_generic(function: func.FuncOp) -> str | None:
    """Why `function` could compute a wrong result for inputs of another
    specialization (dtype, rank, broadcast pattern, layout, device), or None.

    Guards cover the groups; everything that runs unguarded (ops outside groups and
    the fallbacks) must then not carry anything from the example inputs: only
    pointwise ops (except `aten.to`, whose dtype may come from an input) and
    matrix products qualify. View, chunk and reduction ops bake dims or sizes of
    the example shapes, `aten.opaque` may hold folded values."""
    for op in function.walk():
        if isinstance(op, GroupOp):
            if not is_guarded(op):
                return "a fusion.group is not guarded"
            continue
        parent = op.parent_op()
        if isinstance(parent, GroupOp):
            continue
        if isinstance(op, func.FuncOp | GuardOp | scf.IfOp | scf.YieldOp | arith.ConstantOp):
            continue
        if isinstance(op, func.ReturnOp) or op.name in _GENERIC_BARRIERS:
            continue
        if op.has_trait(Pointwise) and op.name != "aten.to":
            continue
        return f"{op.name} runs unguarded and may depend on the example inputs"
    return None
