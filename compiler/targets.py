"""Output targets `fusec-opt -t <name>` adds to xdsl-opt's (filled by code generation)."""

from collections.abc import Callable
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

FUSEC_TARGETS: dict[str, Callable[[ModuleOp, IO[str]], None] | Callable[[], type[Target]]] = {}


def _llvmir_target() -> type[Target]:
    from dataclasses import dataclass

    from xdsl.context import Context

    @dataclass(frozen=True)
    class LLVMIRTarget(Target):
        """The module's `llvm.func` kernels as LLVM IR text (host code stays out)."""

        name = "llvmir"

        def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
            from fusec.codegen import translate_to_llvm_ir
            from xdsl.dialects import llvm

            kernels = ModuleOp([op.clone() for op in module.ops if isinstance(op, llvm.FuncOp)])
            print(translate_to_llvm_ir(kernels), file=output)

    return LLVMIRTarget


FUSEC_TARGETS["llvmir"] = _llvmir_target
