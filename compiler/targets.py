"""Output targets `fusec-opt -t <name>` adds to xdsl-opt's: LLVM IR and PTX of the
module's `llvm.func`s (what `--emit=llvmir` and `--emit=ptx` end with)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target


def _llvm_funcs(module: ModuleOp) -> list[llvm.FuncOp]:
    """Copies of the module's `llvm.func`s; host-side ops stay out."""
    return [op.clone() for op in module.ops if isinstance(op, llvm.FuncOp)]


@dataclass(frozen=True)
class LLVMIRTarget(Target):
    """The module's `llvm.func` kernels as LLVM IR text.

    fusec-opt --fuse --emit=llvmir model.mlir
    """

    name = "llvmir"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from fusec.codegen import translate_to_llvm_ir

        print(translate_to_llvm_ir(ModuleOp(_llvm_funcs(module))), file=output)


@dataclass(frozen=True)
class PTXTarget(Target):
    """The module's defined `llvm.func`s as one PTX module, each a `.entry`
    kernel, libdevice linked (needs fusec's `cuda` extra for libdevice).

        fusec-opt --fuse --emit=ptx model.mlir                # sm_80
        fusec-opt --fuse --emit=ptx -t 'ptx{arch=sm_90}' model.mlir
    """

    name = "ptx"

    arch: str = "sm_80"
    """The `sm_XX` the PTX is generated for (`.target`)."""

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from fusec.codegen import is_gpu_target, translate_to_llvm_ir
        from fusec.cuda_toolchain import CudaToolchainError
        from fusec.ptx import emit_ptx

        if not is_gpu_target(self.arch):
            raise DiagnosticException(f"ptx target: arch '{self.arch}' is not sm_XX")
        funcs = _llvm_funcs(module)
        kernels = [f.sym_name.data for f in funcs if f.body.blocks]
        ir = translate_to_llvm_ir(ModuleOp(funcs), self.arch)
        try:
            ptx = emit_ptx(ir, self.arch, kernel_names=kernels)
        except CudaToolchainError as e:
            # A missing libdevice is a usage problem, not an internal error.
            raise DiagnosticException(f"ptx target: {e}") from None
        print(ptx, file=output, end="")


FUSEC_TARGETS: dict[str, Callable[[], type[Target]]] = {
    "llvmir": lambda: LLVMIRTarget,
    "ptx": lambda: PTXTarget,
}
