"""The CPU expansions of `math` ops, by op name (`convert-math-to-llvm`):

    UNARY["math.exp"](Emitter(f32), x)   # straight-line llvm-dialect ops
    tables_used("math.erf", f64, fast=False)  # the constant globals it loads

The expansions live in `math_polynomials` (exp, log, tanh, pow), `math_sincos`
and `math_erf`.
"""

from __future__ import annotations

from collections.abc import Callable

from fusec.passes.lowering.math_erf import (
    ERF_F32_TABLE,
    ERF_TABLE,
    erf,
    erf_f32_table_global,
    erf_table_global,
)
from fusec.passes.lowering.math_polynomials import (
    EXP_RANGE,
    Emitter,
    exp,
    exp2,
    exp_normal,
    expm1,
    log,
    log1p,
    log2,
    log10,
    powf,
    tanh,
)
from fusec.passes.lowering.math_sincos import (
    SINCOS_RANGE,
    TWO_OVER_PI_TABLE,
    cos,
    sin,
    two_over_pi_global,
)
from xdsl.dialects import llvm
from xdsl.dialects.builtin import Float32Type, Float64Type
from xdsl.ir import Attribute, SSAValue

__all__ = ["EXP_RANGE", "SINCOS_RANGE", "Emitter", "exp_normal"]


def tables_used(
    op_name: str, ftype: Attribute, fast: bool
) -> list[tuple[str, Callable[[], llvm.GlobalOp]]]:
    """The constant globals the expansion of `op_name` loads from: (symbol,
    maker of the `llvm.mlir.global` a module needs once)."""
    if op_name in ("math.sin", "math.cos") and not fast:
        return [(TWO_OVER_PI_TABLE, two_over_pi_global)]
    if op_name == "math.erf" and isinstance(ftype, Float32Type):
        return [(ERF_F32_TABLE, erf_f32_table_global)]
    if op_name == "math.erf":
        return [(ERF_TABLE, erf_table_global)]
    return []


UNARY: dict[str, Callable[[Emitter, SSAValue], SSAValue]] = {
    "math.exp": exp,
    "math.exp2": exp2,
    "math.expm1": expm1,
    "math.log": log,
    "math.log10": log10,
    "math.log1p": log1p,
    "math.log2": log2,
    "math.tanh": tanh,
    "math.erf": erf,
    "math.sin": sin,
    "math.cos": cos,
}
"""Expansions of unary `math` ops, by op name."""

BINARY: dict[str, Callable[[Emitter, SSAValue, SSAValue], SSAValue]] = {"math.powf": powf}
"""Expansions of binary `math` ops, by op name."""

SUPPORTED_TYPES = (Float32Type, Float64Type)
