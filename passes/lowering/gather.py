"""Rows of an embedding table read in a kernel (`aten.embedding`, moved into
the group reading it by `fuse-gathers`).

The table is an operand of its own, row 0 broadcast over the index space (its
offset walks the row), and the indices another, with a trailing dim of 1 (one
index per row of the result); `kernel_args.gather_operands` plans both. At each
element the kernel loads the index and reads the table `index * row size` past
its offset; the guard checked the table is contiguous:

    %e = aten.embedding %w, %ids : tensor<100x32xf32>, tensor<2x8xi64> -> tensor<2x8x32xf32>
->
    %i = memref.load %ids[%ids_off] : memref<?xi64>
    %bad = arith.cmpi uge, %i, %c100 : i64          (negative indices too)
    scf.if %bad { memref.store %c2, %flag[%c0] : memref<?xi8> }
    %safe = arith.select %bad, %c0_i64, %i : i64
    %row = arith.index_cast %safe : i64 to index
    %off = arith.addi %w_off, %row * %c32 : index
    %v = memref.load %w[%off] : memref<?xf32>

An index out of range reads row 0 instead and sets the kernel's flag byte to 2,
and the host raises eager's `IndexError` after the launch
(`fusec.runtime.cpu`); only CPU kernels have the flag.
"""

from __future__ import annotations

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.passes.lowering.emitter import INDEX, LoopEmitter
from fusec.passes.lowering.kernel_args import KernelPlan
from xdsl.dialects import arith, memref, scf
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import DiagnosticException

OUT_OF_RANGE = 2
"""The flag byte's value for an index out of range (1: an integer division by 0)."""


def cpu_only(plan: KernelPlan) -> None:
    """Refuses a GPU kernel with lookups: only CPU kernels have the flag byte."""
    if plan.gathers:
        raise DiagnosticException(
            "lower-group-to-loops: aten.embedding in a kernel is CPU-only "
            "(indices out of range are flagged to the host)"
        )


def _flag_if(b: LoopEmitter, bad: SSAValue, flag: SSAValue, c0: SSAValue) -> None:
    """Sets the flag byte when `bad`: one `scf.if` per element for all its lookups
    (the one already emitted moves after this lookup, on the `or` of both
    conditions). A branch per lookup kept LLVM from unswitching the loop: BERT's
    three lookups before a LayerNorm ran 3x slower than eager, not vectorized."""
    pending = b.out_of_range
    if pending is not None and pending[0].parent is None and pending[0] in b.ops:
        b.ops.remove(pending[0])
        pending[0].erase()  # and its store's use of the flag
        bad = b.add(arith.OrIOp(pending[1], bad))
    # Only ever stores OUT_OF_RANGE, so threads racing on the byte agree.
    store = memref.StoreOp.get(b.const(OUT_OF_RANGE, inf.I8), flag, [c0])
    guard = scf.IfOp(bad, [], [store, scf.YieldOp()])
    b.add(guard)
    b.out_of_range = (guard, bad)


def gather(
    b: LoopEmitter,
    op: aten.EmbeddingOp,
    table: tuple[SSAValue, SSAValue],
    indices: tuple[SSAValue, SSAValue],
    flag: SSAValue,
    c0: SSAValue,
) -> SSAValue:
    """The element of `op`'s result at this index, given the (memref, offset) of
    its table and of its indices; sets the byte `flag` to `OUT_OF_RANGE` when
    the index is out of the table's range."""
    rows, width = inf.tensor_type(op.weight.type).get_shape()
    it = inf.tensor_type(op.indices.type).get_element_type()
    index = b.load(indices[0], [indices[1]], it)
    if it != inf.I64:
        index = b.add(arith.ExtSIOp(index, inf.I64))
    bad = b.add(arith.CmpiOp(index, b.const(rows, inf.I64), "uge"))
    _flag_if(b, bad, flag, c0)
    safe = b.add(arith.SelectOp(bad, b.const(0, inf.I64), index))
    row = b.add(arith.IndexCastOp(safe, INDEX))
    offset = b.add(arith.AddiOp(table[1], b.add(arith.MuliOp(row, b.const(width, INDEX)))))
    return b.load(table[0], [offset], inf.tensor_type(op.weight.type).get_element_type())
