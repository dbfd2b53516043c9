"""Eager PyTorch for every `aten` op: how the host program runs what is not fused.

`torch_callable(op)` reads an op's properties and operand types once and returns a
plain Python callable over the op's runtime operands that returns its results as a
tuple, so the per-call path does no IR inspection at all:

    %r = aten.add %a, %b alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    torch_callable(op)(a, b) == (torch.add(a, b, alpha=2),)

What it reads is plain data (`op_info(op)`, an `OpInfo`), and the callables are
made from that in `fusec.runtime.torch_steps`, which needs no xDSL: a host program
loaded from the warm-start cache makes them from its entry.

Ops this table does not know (`KeyError`) have no eager meaning; `aten.opaque` is
run by the program itself, which keeps the original PyTorch target.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from fusec.dialects import inference as inf
from fusec.runtime.torch_steps import (
    RESHAPE_OPS,
    OpFn,
    OpInfo,
    dtype_name,
    has_step,
    step_callable,
)
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation

TORCH_DTYPES: dict[Attribute, torch.dtype] = {
    inf.BOOL: torch.bool,
    inf.U8: torch.uint8,
    inf.I8: torch.int8,
    inf.I16: torch.int16,
    inf.I32: torch.int32,
    inf.I64: torch.int64,
    inf.F16: torch.float16,
    inf.BF16: torch.bfloat16,
    inf.F32: torch.float32,
    inf.F64: torch.float64,
}
"""fusec element type -> torch dtype."""

DTYPES_OF_TORCH: dict[torch.dtype, Attribute] = {v: k for k, v in TORCH_DTYPES.items()}
"""torch dtype -> fusec element type."""


def torch_dtype(t: Attribute) -> torch.dtype:
    """The torch dtype of a tensor type or element type."""
    return TORCH_DTYPES[inf.element_type(t)]


def _plain(attr: Attribute) -> Any:
    """A property as a Python value (`OpInfo.props`), or `_SKIP` for one no eager
    callable reads (e.g. a type)."""
    if isinstance(attr, FloatAttr | IntegerAttr):
        value = attr.value.data
        if isinstance(attr, IntegerAttr) and attr.type == inf.BOOL:
            return bool(value)
        return value
    if isinstance(attr, DenseArrayBase):
        return list(attr.get_values())
    data = getattr(attr, "data", None)
    if isinstance(data, str | int | float | bool):
        return data
    return _SKIP


_SKIP = object()


def op_info(op: Operation) -> OpInfo:
    """What `op`'s eager callable needs of the IR, read once."""
    props = {}
    for name, attr in op.properties.items():
        value = _plain(attr)
        if value is not _SKIP:
            props[name] = value
    operand_types = [o.type for o in op.operands]
    result_types = [r.type for r in op.results]
    reshape = None
    if op.name in RESHAPE_OPS and isinstance(result_types[0], TensorType):
        reshape = inf.reshape_sizes(result_types[0].get_shape())
    return OpInfo(
        op.name,
        props,
        tuple(isinstance(t, TensorType) for t in operand_types),
        tuple(t.get_num_dims() if isinstance(t, TensorType) else None for t in operand_types),
        tuple(
            dtype_name(torch_dtype(t)) if isinstance(t, TensorType) else None for t in result_types
        ),
        reshape,
    )


def has_torch_callable(op: Operation) -> bool:
    return has_step(op.name)


def torch_callable(op: Operation) -> OpFn:
    """An eager callable for `op` over its runtime operands, returning a tuple."""
    if not has_step(op.name):
        raise KeyError(f"no eager PyTorch implementation for {op.name}")
    return step_callable(op_info(op))


SHAPE_BAKING_OPS: Sequence[str] = ("aten.view", "aten.reshape", "aten.expand", "aten.split")
"""Ops whose eager form carries sizes from the example inputs: a program with one
of them is specialized on exact input shapes, not just their broadcast pattern."""
