"""A pointwise op's scalar computation as the emitter's target computes it:
`NvptxScalarOps` for a GPU kernel's emitter (`LoopEmitter.gpu`), `CpuScalarOps`
otherwise. (Apart from `scalar_ops`, which `scalar_ops_nvptx` imports.)

    emit_pointwise(e, op, args)   # == scalar_ops_for(e).emit(e, op, args)
"""

from __future__ import annotations

from fusec.passes.lowering.emitter import LoopEmitter
from fusec.passes.lowering.scalar_ops import CPU_SCALAR_OPS, Args, CpuScalarOps
from fusec.passes.lowering.scalar_ops_nvptx import NVPTX_SCALAR_OPS
from xdsl.ir import Operation, SSAValue


def scalar_ops_for(e: LoopEmitter) -> CpuScalarOps:
    """The scalar semantics `e`'s kernel follows: its target's handler."""
    return NVPTX_SCALAR_OPS if e.gpu else CPU_SCALAR_OPS


def emit_pointwise(e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
    """The scalar computation of one `aten` pointwise op on compute-typed values,
    as `e`'s target computes it."""
    return scalar_ops_for(e).emit(e, op, args)


def maximum(e: LoopEmitter, a: SSAValue, b: SSAValue, is_max: bool) -> SSAValue:
    """`max(a, b)` (`is_max`) or `min(a, b)` as `e`'s target computes it."""
    return scalar_ops_for(e).extremum(e, a, b, is_max)
