"""convert-memref-to-llvm: loads and stores of the loop level's flat
`memref<?xT>` (a bare data pointer; strides live in the index arithmetic) to
`llvm.getelementptr` + `llvm.load`/`llvm.store`.

    %v = memref.load %m[%i] : memref<?xf32>
    ->
    %p = llvm.getelementptr %m1[%i1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32

bool is a byte in memory (as in PyTorch): loaded as i8 and compared with 0,
stored zero-extended.

A `memref.alloca` of a flat memref (a tile buffer of the CPU loop nest, sized
by a constant) is a stack slot:

    %b = memref.alloca(%n) {alignment = 64 : i64} : memref<?xf32>
    ->
    %b1 = "llvm.alloca"(%n1) <{alignment = 64 : i64, elem_type = f32}> : (i64) -> !llvm.ptr

A memref's address as an integer (a GPU kernel's test that its accesses are
aligned vectors, `fusec.passes.lowering.gpu_loop`):

    %a = memref.extract_aligned_pointer_as_index %m : memref<?xf32> -> index
    ->
    %a1 = llvm.ptrtoint %m1 : !llvm.ptr to i64
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.passes.convert_arith_to_llvm import (
    I1,
    I8,
    icmp,
    memory_type,
    replace_with_llvm,
    to_llvm,
)
from xdsl.context import Context
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


def _address(
    ref: SSAValue, indices: tuple[SSAValue, ...], rewriter: PatternRewriter
) -> tuple[llvm.GEPOp, MemRefType]:
    t = ref.type
    assert isinstance(t, MemRefType) and t.get_num_dims() == 1, "flat memrefs only"
    ptr = to_llvm(ref, rewriter)
    idx = to_llvm(indices[0], rewriter)
    gep = llvm.GEPOp(
        ptr,
        [llvm.GEP_USE_SSA_VAL],
        memory_type(t.get_element_type()),
        ssa_indices=[idx],
        inbounds=True,
    )
    return gep, t


def _alignment(op: Operation) -> int | None:
    """An access's `alignment` attribute in bytes (as upstream MLIR's
    `memref.load %m[%i] {alignment = 16 : i64}`), else None: one element."""
    attr = op.attributes.get("alignment")
    return attr.value.data if isinstance(attr, IntegerAttr) else None


class LoadToLLVM(RewritePattern):
    """`memref.load %m[%i]` -> `llvm.getelementptr` + `llvm.load` (an
    `alignment` attribute kept)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter, /):
        gep, t = _address(op.memref, tuple(op.indices), rewriter)
        et = t.get_element_type()
        load = llvm.LoadOp(gep.result, memory_type(et), alignment=_alignment(op))
        ops: list[Operation] = [gep, load]
        if et == I1:
            zero = llvm.ConstantOp(IntegerAttr(0, I8), I8)  # bool's memory type
            ne = icmp(load.dereferenced_value, zero.result, "ne")
            ops += [zero, ne]
        replace_with_llvm(op, ops, ops[-1].results[0], rewriter)


class StoreToLLVM(RewritePattern):
    """`memref.store %v, %m[%i]` -> `llvm.getelementptr` + `llvm.store` (an
    `alignment` attribute kept)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter, /):
        gep, t = _address(op.memref, tuple(op.indices), rewriter)
        value = to_llvm(op.value, rewriter)
        ops: list[Operation] = [gep]
        if t.get_element_type() == I1:
            ext = llvm.ZExtOp(value, memory_type(I1))
            ops.append(ext)
            value = ext.res
        ops.append(llvm.StoreOp(value, gep.result, alignment=_alignment(op)))
        rewriter.replace(op, ops, [])


class AllocaToLLVM(RewritePattern):
    """`memref.alloca(%n) : memref<?xT>` -> `llvm.alloca %n x T` (its alignment kept)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter, /):
        t = op.memref.type
        assert isinstance(t, MemRefType) and t.get_num_dims() == 1, "flat memrefs only"
        if len(op.dynamic_sizes) != 1:
            return
        size = to_llvm(op.dynamic_sizes[0], rewriter)
        align = op.alignment.value.data if op.alignment is not None else 16
        new = llvm.AllocaOp(size, memory_type(t.get_element_type()), alignment=align)
        replace_with_llvm(op, [new], new.res, rewriter)


class AlignedPointerToLLVM(RewritePattern):
    """`memref.extract_aligned_pointer_as_index %m` -> `llvm.ptrtoint`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: memref.ExtractAlignedPointerAsIndexOp, rewriter: PatternRewriter, /
    ):
        new = llvm.PtrToIntOp(to_llvm(op.source, rewriter))
        replace_with_llvm(op, [new], new.results[0], rewriter)


@dataclass(frozen=True)
class ConvertMemrefToLLVMPass(ModulePass):
    """Lowers loads and stores of flat memrefs to pointer arithmetic; see the
    module docstring."""

    name = "convert-memref-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [LoadToLLVM(), StoreToLLVM(), AllocaToLLVM(), AlignedPointerToLLVM()]
            )
        ).rewrite_module(op)
