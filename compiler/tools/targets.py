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
    """Copies of the `llvm.func`s of the module and of the modules nested in it;
    host-side ops stay out. A located error for a symbol defined twice, or for an
    op in a function that LLVM IR cannot express (not lowered to the llvm dialect,
    e.g. a vector `math.exp`, which `convert-math-to-llvm` leaves alone)."""
    from fusec.tools.diagnostics import LocatedError, op_location

    funcs: dict[str, llvm.FuncOp] = {}
    pending = [module]
    while pending:
        for op in pending.pop(0).ops:
            if isinstance(op, ModuleOp):
                pending.append(op)
            elif isinstance(op, llvm.FuncOp):
                name = op.sym_name.data
                if name in funcs:
                    raise LocatedError(
                        f"{op_location(op)}: error: '@{name}' is defined in two modules"
                    )
                for inner in op.walk():
                    if inner is not op and inner.dialect_name() != "llvm":
                        raise LocatedError(
                            f"{op_location(inner)}: error: '{inner.name}' op cannot be "
                            "translated to LLVM IR (only llvm dialect ops can; "
                            "convert-math-to-llvm lowers scalar f32/f64 math ops)"
                        )
                funcs[name] = op
    return [f.clone() for f in funcs.values()]


@dataclass(frozen=True)
class LLVMIRTarget(Target):
    """The module's `llvm.func` kernels as LLVM IR text.

    fusec-opt --fuse --emit=llvmir model.mlir
    """

    name = "llvmir"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from fusec.codegen.kernel import translate_to_llvm_ir

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
        from fusec.backends.cuda_toolchain import CudaToolchainError
        from fusec.backends.ptx import emit_ptx
        from fusec.codegen.kernel import is_gpu_target, translate_to_llvm_ir

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
