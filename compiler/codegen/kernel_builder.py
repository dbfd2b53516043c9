"""The compiler's answers to the kernel cache's questions about a group.

`fusec.runtime.cache` imports no compiler module, so a warm-started program
runs without xDSL; what it must ask about a `fusion.group` goes through the
`KernelBuilder` installed here when `fusec.codegen` is imported (any path that
makes a group, compiles a program or starts `fusec.compile` imports it first):

    KernelCache.kernel_for(group, "cpu")
      key:    KERNEL_BUILDER.digest(group)         canonical key (`fusec.passes.canonical`)
      build:  KERNEL_BUILDER.build(group, "cpu")   `fusec.codegen.kernel.build_kernel`
      entry:  KERNEL_BUILDER.text(group)           kept for the tiled variant
    KernelCache.kernel_by_key(key)                 a warm start: no group, no builder
      tiled variant: KERNEL_BUILDER.parse(text), then build

Each method imports what it needs when first called, so installing the builder
imports no xDSL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fusec.runtime.cache import set_kernel_builder

if TYPE_CHECKING:
    from fusec.dialects.fusion import GroupOp


class CodegenKernelBuilder:
    """`fusec.runtime.cache.KernelBuilder` over fusec's code generator."""

    def build(self, group: GroupOp, target: str) -> Any:
        from fusec.codegen.kernel import build_kernel

        return build_kernel(group, target=target)

    def digest(self, group: GroupOp) -> str:
        from fusec.passes.canonical import canonical_key

        return canonical_key(group).digest

    def operand_types(self, group: GroupOp) -> tuple[tuple[str, ...], int]:
        from fusec.passes.lowering.emitter import dtype_name

        return tuple(dtype_name(a.type) for a in group.body.block.args), len(group.outputs)

    def text(self, group: GroupOp) -> str:
        from fusec.codegen import ir_text

        return ir_text.group_text(group)

    def parse(self, text: str) -> GroupOp | None:
        from fusec.codegen import ir_text

        return ir_text.group_from_text(text)


KERNEL_BUILDER = CodegenKernelBuilder()
set_kernel_builder(KERNEL_BUILDER)
