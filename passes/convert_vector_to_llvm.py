"""convert-vector-to-llvm: the 1-D `vector` ops of the loop level (the tiled
CPU nest's block transposes, `fusec.passes.lowering.cpu_loop_nest`) to the `llvm`
dialect. Loads and stores address a flat `memref<?xT>` as scalar loads do
(`convert-memref-to-llvm`), aligned to one element only: a block starts
anywhere in the operand.

    %v = vector.load %m[%i] : memref<?xf32>, vector<8xf32>
    ->
    %p = llvm.getelementptr inbounds %m1[%i1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v1 = llvm.load %p {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>

    vector.store %v, %m[%i] : memref<?xf32>, vector<8xf32>
    ->
    %p = llvm.getelementptr inbounds %m1[%i1] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %q = llvm.getelementptr %p[0] : (!llvm.ptr) -> !llvm.ptr, vector<8xf32>
    llvm.store %v1, %q {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr

    %s = vector.shuffle %a, %b [0, 8, 2, 10, 4, 12, 6, 14] : vector<8xf32>, vector<8xf32>
    ->
    %s1 = llvm.shufflevector %a, %b [0, 8, 2, 10, 4, 12, 6, 14] : vector<8xf32>

bf16 vectors are vectors of i16, as bf16 scalars are (`convert-arith-to-llvm`);
bool vectors (i1 in registers, a byte in memory) are not lowered here.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.passes.convert_arith_to_llvm import llvm_type, replace_with_llvm, to_llvm
from xdsl.context import Context
from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerType,
    MemRefType,
    ModuleOp,
    VectorType,
    i32,
)
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.utils.exceptions import DiagnosticException


def _element_address(
    ref: SSAValue, index: SSAValue, vec_t: VectorType, rewriter: PatternRewriter
) -> tuple[llvm.GEPOp, int]:
    """The address of element `index` of flat memref `ref`, and the alignment
    of one element in bytes."""
    t = ref.type
    assert isinstance(t, MemRefType) and t.get_num_dims() == 1, "flat memrefs only"
    et = llvm_type(t.get_element_type())
    if isinstance(et, IntegerType) and et.width.data == 1:
        raise DiagnosticException("convert-vector-to-llvm: vectors of i1 are not supported")
    assert vec_t.get_num_dims() == 1, "1-D vectors only"
    gep = llvm.GEPOp(
        to_llvm(ref, rewriter),
        [llvm.GEP_USE_SSA_VAL],
        et,
        ssa_indices=[to_llvm(index, rewriter)],
        inbounds=True,
    )
    return gep, max(1, getattr(et, "bitwidth", 8) // 8)


class VectorLoadToLLVM(RewritePattern):
    """`vector.load %m[%i]` -> `llvm.getelementptr` + a vector `llvm.load`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.LoadOp, rewriter: PatternRewriter, /):
        vec_t = op.result.type
        assert isinstance(vec_t, VectorType)
        gep, align = _element_address(op.base, op.indices[0], vec_t, rewriter)
        load = llvm.LoadOp(gep.result, llvm_type(vec_t), alignment=align)
        replace_with_llvm(op, [gep, load], load.dereferenced_value, rewriter)


class VectorStoreToLLVM(RewritePattern):
    """`vector.store %v, %m[%i]` -> `llvm.getelementptr` + a vector `llvm.store`."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.StoreOp, rewriter: PatternRewriter, /):
        vec_t = op.vector.type
        assert isinstance(vec_t, VectorType)
        gep, align = _element_address(op.base, op.indices[0], vec_t, rewriter)
        value = to_llvm(op.vector, rewriter)
        # The same address typed as the vector's: llvmlite's typed-pointer
        # store wants the value's type as the pointee.
        at = llvm.GEPOp(gep.result, [0], value.type)
        store = llvm.StoreOp(value, at.result, alignment=align)
        rewriter.replace(op, [gep, at, store], [])


class ShuffleToLLVM(RewritePattern):
    """1-D `vector.shuffle` -> `llvm.shufflevector` (the same mask, as i32)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: vector.ShuffleOp, rewriter: PatternRewriter, /):
        a, b = to_llvm(op.v1, rewriter), to_llvm(op.v2, rewriter)
        mask = DenseArrayBase.from_list(i32, list(op.mask.get_values()))
        new = llvm.ShuffleVectorOp(a, b, mask, llvm_type(op.result.type))
        replace_with_llvm(op, [new], new.res, rewriter)


_PATTERNS: dict[type[Operation], RewritePattern] = {
    vector.LoadOp: VectorLoadToLLVM(),
    vector.StoreOp: VectorStoreToLLVM(),
    vector.ShuffleOp: ShuffleToLLVM(),
}


@dataclass(frozen=True)
class ConvertVectorToLLVMPass(ModulePass):
    """Lowers the loop level's 1-D vector loads, stores and shuffles; see the
    module docstring.

    One walk that rewrites the vector ops it meets, not a greedy rewrite
    walker: by this point the module is the whole kernel in the llvm dialect
    (thousands of ops, a few hundred of them vector ops), and the walker's
    worklist over every op took 1.2 s of the LSTM tail's tiled variant."""

    name = "convert-vector-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in [o for o in op.walk() if type(o) in _PATTERNS]:
            _PATTERNS[type(inner)].match_and_rewrite(inner, PatternRewriter(inner))
