"""The value of a boolean mask computed only from positions and constants, at
compile time: what `raise-attention` reads to tell a causal mask.

A causal mask built per call (`torch.ones_like(att, dtype=torch.bool).tril()`,
then `att.masked_fill(~mask, -inf)`) imports as positions compared, which
reads nothing of the scores but their sizes:

    %c = aten.positions %s dim = -1 : tensor<2x8x8xf32> -> tensor<8xi32>
    %r = aten.positions %s dim = -2 : tensor<2x8x8xf32> -> tensor<8xi32>
    %u = aten.unsqueeze %r dim = 1 : tensor<8xi32> -> tensor<8x1xi32>
    %d = aten.sub %c, %u : tensor<8xi32>, tensor<8x1xi32> -> tensor<8x8xi32>
    %k = aten.le %d, %zero : tensor<8x8xi32>, i64 -> tensor<8x8xi1>

`mask_value(%k)` is then `torch.ones(8, 8, dtype=torch.bool).tril()`. Ops other
than those below, a value of dynamic sizes or a mask of more than
`MAX_ELEMENTS` give None.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from fusec.dialects import inference as inf
from fusec.dialects.aten import (
    AddOp,
    EqOp,
    ExpandOp,
    FullLikeOp,
    GeOp,
    GtOp,
    LeOp,
    LogicalAndOp,
    LogicalNotOp,
    LogicalOrOp,
    LtOp,
    NeOp,
    PositionsOp,
    SubOp,
    UnsqueezeOp,
    WhereOp,
    number_value,
)
from fusec.runtime.operands import TORCH_DTYPES
from xdsl.dialects.arith import ConstantOp
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Operation, SSAValue

MAX_ELEMENTS = 1 << 24
"""The largest mask evaluated (a bool each): a causal mask of 4096 x 4096."""

_BINARY: dict[type[Operation], Callable[[Any, Any], Any]] = {
    EqOp: torch.eq,
    NeOp: torch.ne,
    LtOp: torch.lt,
    LeOp: torch.le,
    GtOp: torch.gt,
    GeOp: torch.ge,
    LogicalAndOp: torch.logical_and,
    LogicalOrOp: torch.logical_or,
}


def _static_shape(v: SSAValue) -> list[int] | None:
    t = v.type
    if not isinstance(t, TensorType):
        return None
    shape = list(t.get_shape())
    if inf.DYNAMIC in shape or math.prod(shape) > MAX_ELEMENTS:
        return None
    return shape


def _tensor(x: Any) -> torch.Tensor:
    return x if isinstance(x, torch.Tensor) else torch.tensor(x)


def mask_value(v: SSAValue, _memo: dict[SSAValue, Any] | None = None) -> Any:
    """`v`'s value (a tensor, or a Python scalar for a constant), or None where
    it depends on anything but positions, sizes and constants."""
    memo = {} if _memo is None else _memo
    if v in memo:
        return memo[v]
    op = v.owner
    value: Any = None
    if isinstance(op, ConstantOp) and inf.is_scalar(v.type):
        attr = op.value
        if isinstance(attr, FloatAttr | IntegerAttr):
            value = attr.value.data
            if v.type == inf.BOOL:
                value = bool(value)
    elif _static_shape(v) is not None and isinstance(op, Operation):
        value = _evaluate(op, v, memo)
    memo[v] = value
    return value


def _evaluate(op: Operation, v: SSAValue, memo: dict[SSAValue, Any]) -> Any:
    t = v.type
    assert isinstance(t, TensorType)
    if isinstance(op, PositionsOp):
        size = _size(op.input, op.dim.value.data)
        return None if size is None else torch.arange(size, dtype=torch.int32)
    if isinstance(op, FullLikeOp):
        shape = _static_shape(op.input)
        dtype = TORCH_DTYPES.get(str(t.get_element_type()))
        if shape is None or dtype is None:
            return None
        return torch.full(shape, number_value(op.value, 0), dtype=dtype)
    args = [mask_value(o, memo) for o in op.operands]
    if any(a is None for a in args):
        return None
    if isinstance(op, UnsqueezeOp):
        return _tensor(args[0]).unsqueeze(op.dim.value.data)
    if isinstance(op, ExpandOp):
        return _tensor(args[0]).expand(list(op.size.get_values()))
    if isinstance(op, LogicalNotOp):
        return torch.logical_not(_tensor(args[0]))
    if isinstance(op, WhereOp):
        return torch.where(_tensor(args[0]), _tensor(args[1]), _tensor(args[2]))
    if isinstance(op, AddOp | SubOp):
        fn = torch.add if isinstance(op, AddOp) else torch.sub
        return fn(_tensor(args[0]), args[1], alpha=number_value(op.alpha, 1))
    binary = _BINARY.get(type(op))
    if binary is not None:
        return binary(_tensor(args[0]), args[1])
    return None


def _size(v: SSAValue, dim: int) -> int | None:
    shape = _static_shape(v)
    if shape is None or not -len(shape) <= dim < len(shape):
        return None
    return shape[dim]


def is_causal(masked: SSAValue, scores: TensorType, kept: bool = False) -> bool:
    """Whether the bool `masked` marks exactly the scores above the diagonal
    (column past row, counted from the top left), the same for every batch:
    what `F.scaled_dot_product_attention(..., is_causal=True)` leaves out
    (with `kept`, whether it marks exactly the others)."""
    shape = list(scores.get_shape())
    if len(shape) < 2 or inf.DYNAMIC in shape:
        return False
    value = mask_value(masked)
    if not isinstance(value, torch.Tensor) or value.dtype != torch.bool:
        return False
    try:
        full = value.expand(shape)
    except RuntimeError:
        return False
    rows, cols = shape[-2:]
    above = torch.ones(rows, cols, dtype=torch.bool).triu(1)
    if kept:
        above = ~above
    return bool(torch.equal(full, above.expand(shape)))
