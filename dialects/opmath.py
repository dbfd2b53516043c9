"""Op math: which `aten` ops are inner steps of one eager operator.

PyTorch's CPU kernels compute a float16/bfloat16 operator in float32 ("op math")
and round its result to the half type once. A fused kernel rounds every
half-typed op result the same way (`lower-group-to-loops`), so a chain of ops
gives eager's values, overflow to inf included. An operator that fusec writes
out as several `aten` ops (softmax, layer norm, hardswish, mish, ...) is one
kernel in eager: its inner steps carry the unit attribute `fusion.opmath_step`,
and a kernel keeps their results, and their Python-scalar operands, in float32:

    %s = aten.add %x, %c3 {fusion.opmath_step} : tensor<4xf16>, f64 -> tensor<4xf16>
    %c = aten.clamp %s min = 0.0 : f64 max = 6.0 : f64 {fusion.opmath_step} : ...
    %r = aten.mul %x, %c : ...        (hardswish's last step: rounded to f16)
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import BFloat16Type, Float16Type, TensorType, UnitAttr
from xdsl.ir import Operation, SSAValue

OPMATH_STEP = "fusion.opmath_step"


def _touches_half(op: Operation) -> bool:
    types = [v.type for v in (*op.operands, *op.results)]
    return any(
        isinstance(t, TensorType) and isinstance(t.get_element_type(), Float16Type | BFloat16Type)
        for t in types
    )


def mark_steps(ops: Iterable[Operation], results: Iterable[SSAValue]) -> None:
    """Marks the `aten` ops of one eager operator, except those computing `results`
    (the operator's own results, which eager rounds), as op-math steps. Only ops
    with a half-typed operand or result: float32 and wider compute in their own
    type, so the mark would change nothing there."""
    kept = set(results)
    for op in ops:
        if (
            op.name.startswith("aten.")
            and _touches_half(op)
            and not any(r in kept for r in op.results)
        ):
            op.attributes[OPMATH_STEP] = UnitAttr()


def is_step(op: Operation) -> bool:
    """Whether `op` is an inner step of an operator computed in op math."""
    return OPMATH_STEP in op.attributes
