"""`NvptxScalarOps`: the scalar semantics of GPU kernels, where they differ from
the CPU's (`CpuScalarOps`): CUDA eager's max/min/clamp are fmaxf/fminf, which
order -0.0 below +0.0, its relu is fmaxf(x, 0), and an integer division by 0
raises nothing (PTX gives an unspecified quotient), so there is no flag to set.

    %r = aten.maximum %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    maximum(-0.0, 0.0):  CPU (std::max) -0.0,  CUDA (fmaxf) +0.0
"""

from __future__ import annotations

from fusec.dialects.inference import BOOL
from fusec.passes.lowering.emitter import LoopEmitter
from fusec.passes.lowering.scalar_ops import CpuScalarOps
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.ir import SSAValue


class NvptxScalarOps(CpuScalarOps):
    """Scalar semantics on NVIDIA GPUs: what PyTorch's CUDA kernels compute."""

    target = "nvptx"

    def signed_zero_tie(
        self, e: LoopEmitter, a: SSAValue, b: SSAValue, is_max: bool
    ) -> SSAValue | None:
        """fmaxf(-0.0, 0.0) is +0.0 (and fminf -0.0) whichever comes first: on
        equal operands max takes `b` when `a` is negative, min when it is not."""
        t = a.type
        one = e.const(1.0, t)
        a_negative = e.add(arith.CmpfOp(e.add(mathd.CopySignOp(one, a)), one, "olt"))
        tie_sign = a_negative if is_max else e.add(arith.XOrIOp(a_negative, e.const(1, BOOL)))
        return e.add(arith.AndIOp(e.add(arith.CmpfOp(a, b, "oeq")), tie_sign))

    def relu_takes_zero(self, e: LoopEmitter, x: SSAValue, zero: SSAValue) -> SSAValue:
        """CUDA's relu is fmaxf(x, 0): -0.0 gives +0.0."""
        return e.add(arith.CmpfOp(x, zero, "ole"))

    def flag_zero_divisor(self, e: LoopEmitter, zero: SSAValue) -> None:
        """CUDA eager does not raise on an integer division by 0, so a GPU kernel
        neither flags it nor makes the host synchronize to read a flag."""


NVPTX_SCALAR_OPS = NvptxScalarOps()
