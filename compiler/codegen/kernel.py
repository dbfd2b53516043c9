"""Code generation: a `fusion.group` to a kernel artifact (host LLVM IR or PTX).

    group --lower-group-to-loops--> loop level (scf/memref/arith/math)
          --convert-*-to-llvm, reconcile-unrealized-casts--> llvm dialect
          --xdsl.backend.llvm.convert--> llvmlite IR --O3 (host cpu)--> artifact

Kernels take runtime sizes and strides (see `KernelSignature`), so one artifact
serves every shape of its canonical key.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from functools import cache

from fusec.dialects.fusion import GroupOp
from fusec.passes.lower_group_to_loops import build_loop_kernel
from fusec.runtime.kernel_signature import (
    TILED_CPU,
    KernelArtifact,
    KernelSignature,
    OperandSpec,
    OutputSpec,
    is_gpu_target,
)
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, VectorType
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

__all__ = [
    "TILED_CPU",
    "KernelArtifact",
    "KernelSignature",
    "OperandSpec",
    "OutputSpec",
    "build_gpu_kernels",
    "build_kernel",
    "is_gpu_target",
    "kernel_llvm_ir",
    "llvm_pipeline",
    "lower_to_llvm_dialect",
    "translate_to_llvm_ir",
]


def _math_pass(target: str) -> str:
    return f"convert-math-to-llvm{{target={'cpu' if target == 'cpu' else 'nvptx'}}}"


def llvm_pipeline(target: str = "cpu") -> str:
    """The `-p` pipeline from the loop level to the llvm dialect (on the CPU,
    loops over sin/cos first get their fast path: `sincos-fast-path`).

    The math lowering comes after the memref, cf and func conversions: on the
    CPU it expands each transcendental op into some twenty llvm ops, which the
    passes after it would only walk past (the IR is the same either way)."""
    return ",".join(
        ([] if target != "cpu" else ["sincos-fast-path"])
        + [
            "convert-scf-to-cf",
            "convert-arith-to-llvm",
            "convert-memref-to-llvm",
            "convert-vector-to-llvm",
            "convert-cf-to-llvm",
            "convert-func-to-llvm",
            _math_pass(target),
            "reconcile-unrealized-casts",
        ]
    )


@cache
def _passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from fusec.passes import FUSEC_PASSES
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **FUSEC_PASSES}


def lower_to_llvm_dialect(module: ModuleOp, target: str = "cpu") -> None:
    """Runs the loop-level-to-llvm-dialect pipeline on `module` in place."""
    from xdsl.passes import PassPipeline

    PassPipeline.parse_spec(_passes(), llvm_pipeline(target)).apply(Context(), module)


def _mangle_intrinsics(module: ModuleOp) -> None:
    """`llvm.intr.copysign` etc. -> `llvm.call_intrinsic "llvm.copysign.f64"`.

    xDSL's translation declares these intrinsics without the type suffix, so a
    module using one at both f32 and f64 gets a mistyped call; the explicit,
    mangled name is what LLVM expects anyway."""
    from fusec.passes.xdsl_compat import llvm_intrinsic_names
    from xdsl.dialects import llvm

    names = llvm_intrinsic_names()
    for op in list(module.walk()):
        base = names.get(type(op))
        if base is None:
            continue
        t = op.results[0].type
        suffix = str(t) if not isinstance(t, VectorType) else f"v{t.get_shape()[0]}{t.element_type}"
        call = llvm.CallIntrinsicOp(f"{base}.{suffix}", list(op.operands), [t])
        Rewriter.replace_op(op, call)


def translate_to_llvm_ir(module: ModuleOp, target: str = "cpu") -> str:
    """llvm-dialect module -> LLVM IR text (host triple, or nvptx64 for GPUs)."""
    from xdsl.backend.llvm.convert import convert_module

    _mangle_intrinsics(module)
    triple = None if target == "cpu" else "nvptx64-nvidia-cuda"
    return str(convert_module(module, fallback_target_triple=triple))


def _kernel_name(group: GroupOp, target: str) -> str:
    # Every sm_XX shares one name: the LLVM IR does not depend on the arch.
    from fusec.codegen.ir_text import generic_text

    body = generic_text(group.body.block)
    text = body + str(group.outputs.types) + ("cpu" if target == "cpu" else "nvptx")
    return "fusec_" + hashlib.sha256(text.encode()).hexdigest()[:16]




def kernel_llvm_ir(
    group: GroupOp, target: str = "cpu", tile: bool = False
) -> tuple[str, str, KernelSignature]:
    """(kernel name, unoptimized LLVM IR text, signature) of one group: the
    arch-independent half of `build_kernel` (the same for every `sm_XX`); `tile`
    adds the CPU nest's tiled version (`TILED_CPU`)."""
    if target != "cpu" and not is_gpu_target(target):
        raise ValueError(f"build_kernel: unknown target '{target}' (expected 'cpu' or 'sm_XX')")
    name = _kernel_name(group, target) + ("_tiled" if tile else "")
    bits = 256
    if tile:
        from fusec.backends.llvm_jit import host_vector_width

        bits = host_vector_width() or 256
    fn, sig = build_loop_kernel(
        name, group.body.block, group.outputs.types, "cpu" if target == "cpu" else "nvptx", tile,
        bits,
    )  # fmt: skip
    module = ModuleOp([fn])
    lower_to_llvm_dialect(module, target)
    return name, translate_to_llvm_ir(module, target), sig


def build_kernel(group: GroupOp, target: str = "cpu") -> KernelArtifact:
    """Compiles one `fusion.group` for `target` ("cpu", `TILED_CPU` or "sm_XX").

    For "sm_XX" the artifact's `code` is PTX with one `.entry` named
    `artifact.name`, libdevice linked and inlined; its launch ABI is described
    in `KernelSignature` (any 1-D grid works: the kernel grid-strides)."""
    if target in ("cpu", TILED_CPU):
        from fusec.backends.llvm_jit import optimize_for_host

        name, ir_text, sig = kernel_llvm_ir(group, "cpu", tile=target == TILED_CPU)
        return KernelArtifact(name, "cpu", optimize_for_host(ir_text).encode(), sig)
    (artifact,) = build_gpu_kernels([group], target)
    return artifact


def build_gpu_kernels(groups: Sequence[GroupOp], target: str = "sm_80") -> list[KernelArtifact]:
    """Compiles several groups into ONE PTX module for `target` ("sm_XX"):
    libdevice is linked and the module optimized once, which is what makes
    compiling many kernels cheap. Each artifact's `code` is that whole module
    (load it once, look each kernel up by `artifact.name`)."""
    import llvmlite.binding as llvm
    from fusec.backends.ptx import emit_ptx

    if not is_gpu_target(target):
        raise ValueError(f"build_gpu_kernels: '{target}' is not an sm_XX target")
    built = [kernel_llvm_ir(g, target) for g in groups]
    if not built:
        return []
    # Same-named kernels (identical groups) are one function.
    unique = {name: ir for name, ir, _ in built}
    texts = list(unique.values())
    if len(texts) == 1:
        merged = texts[0]
    else:
        module = llvm.parse_assembly(texts[0])
        for text in texts[1:]:
            module.link_in(llvm.parse_assembly(text))
        merged = str(module)
    code = emit_ptx(merged, target, kernel_names=list(unique)).encode()
    return [KernelArtifact(name, target, code, sig) for name, _, sig in built]
