"""Eager PyTorch for every `aten` op: how the host program runs what is not fused.

`TORCH_STEPS` says, per op class, which PyTorch call runs the op (a `TorchStep`:
the shape of the call and the torch callables, as plain data). `torch_callable(op)`
reads an op's properties and operand types once and returns a plain Python
callable over the op's runtime operands that returns its results as a tuple, so
the per-call path does no IR inspection at all:

    %r = aten.add %a, %b alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
    TORCH_STEPS[aten.AddOp] == TorchStep("alpha", "torch.add")
    torch_callable(op)(a, b) == (torch.add(a, b, alpha=2),)

What it reads is plain data (`op_info(op)`, an `OpInfo` holding the step), and the
callables are made from that in `fusec.runtime.torch_steps`, which needs no xDSL
and knows no op: a host program loaded from the warm-start cache makes them from
its entry.

Ops this table does not know (`KeyError`) have no eager meaning; `aten.opaque` is
run by the program itself, which keeps the original PyTorch target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from fusec.dialects import aten, fusion
from fusec.dialects import inference as inf
from fusec.runtime import cpu_pool
from fusec.runtime.pooled_products import SMALL_PRODUCT
from fusec.runtime.torch_steps import (
    REUSED_ZEROS,
    OpFn,
    OpInfo,
    TorchStep,
    dtype_name,
    step_callable,
)
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, IntegerAttr, TensorType
from xdsl.ir import Attribute, Operation
from xdsl.traits import Pure

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


def _calls(fns: dict[type[Operation], str], kind: str = "call") -> dict[type[Operation], TorchStep]:
    return {cls: TorchStep(kind, fn) for cls, fn in fns.items()}


_COMPARISONS: dict[type[Operation], tuple[str, str]] = {
    aten.EqOp: ("torch.eq", "torch.eq"),
    aten.NeOp: ("torch.ne", "torch.ne"),
    aten.LtOp: ("torch.lt", "torch.gt"),
    aten.LeOp: ("torch.le", "torch.ge"),
    aten.GtOp: ("torch.gt", "torch.lt"),
    aten.GeOp: ("torch.ge", "torch.le"),
    aten.LogicalAndOp: ("torch.logical_and", "torch.logical_and"),
    aten.LogicalOrOp: ("torch.logical_or", "torch.logical_or"),
    aten.LogicalXorOp: ("torch.logical_xor", "torch.logical_xor"),
}
"""Binary ops whose tensor may come second: (callable, the one with the operands
swapped)."""

TORCH_STEPS: dict[type[Operation], TorchStep] = {
    **_calls({
        aten.NegOp: "torch.neg", aten.AbsOp: "torch.abs", aten.ReluOp: "torch.relu",
        aten.ExpOp: "torch.exp", aten.Expm1Op: "torch.expm1", aten.LogOp: "torch.log",
        aten.Log1pOp: "torch.log1p", aten.SqrtOp: "torch.sqrt", aten.RsqrtOp: "torch.rsqrt",
        aten.ReciprocalOp: "torch.reciprocal", aten.SigmoidOp: "torch.sigmoid",
        aten.TanhOp: "torch.tanh", aten.SiluOp: "torch.nn.functional.silu",
        aten.ErfOp: "torch.erf", aten.SinOp: "torch.sin", aten.CosOp: "torch.cos",
        aten.LogicalNotOp: "torch.logical_not", aten.WhereOp: "torch.where",
        aten.MatmulOp: "torch.matmul",
    }),
    # Large results into the output pool (`fusec.runtime.pooled_products`).
    aten.MmOp: TorchStep("mm"),
    aten.LinearOp: TorchStep("linear"),
    # `torch.mul(s, x)` rounds a Python scalar to a half `x`'s dtype first, while
    # `s * x` (that is `x.__rmul__(s)`) computes in float32: random graph 3777.
    aten.MulOp: TorchStep("binary", "torch.mul", "torch.mul"),
    **_calls({aten.PowOp: "torch.pow", aten.MaximumOp: "torch.maximum",
              aten.MinimumOp: "torch.minimum"}, "binary"),
    **{cls: TorchStep("binary", fn, swapped) for cls, (fn, swapped) in _COMPARISONS.items()},
    **_calls({aten.AddOp: "torch.add", aten.SubOp: "torch.sub"}, "alpha"),
    aten.DivOp: TorchStep("rounding", "torch.div"),
    **_calls({aten.SumOp: "torch.sum", aten.MeanOp: "torch.mean"}, "reduction"),
    **_calls({aten.AmaxOp: "torch.amax", aten.AminOp: "torch.amin"}, "extremum"),
    **_calls({aten.VarOp: "torch.var", aten.StdOp: "torch.std"}, "variance"),
    **_calls({aten.SoftmaxOp: "torch.softmax", aten.LogSoftmaxOp: "torch.log_softmax"}, "softmax"),
    aten.ToOp: TorchStep("to"),
    aten.ClampOp: TorchStep("clamp"),
    aten.LeakyReluOp: TorchStep("leaky_relu"),
    aten.GeluOp: TorchStep("gelu"),
    aten.FullLikeOp: TorchStep("full_like"),
    aten.ExpandOp: TorchStep("expand"),
    aten.ViewOp: TorchStep("reshape"),
    aten.ReshapeOp: TorchStep("reshape"),
    aten.UnsqueezeOp: TorchStep("unsqueeze"),
    aten.SqueezeOp: TorchStep("squeeze"),
    aten.PermuteOp: TorchStep("permute"),
    aten.TransposeOp: TorchStep("transpose"),
    aten.ChunkOp: TorchStep("chunk"),
    aten.SplitOp: TorchStep("split"),
    aten.CatOp: TorchStep("cat"),
    aten.NarrowOp: TorchStep("narrow"),
    aten.SliceOp: TorchStep("slice"),
    aten.AddmmOp: TorchStep("addmm"),
    aten.LayerNormOp: TorchStep("layer_norm"),
    aten.ScaledDotProductAttentionOp: TorchStep("attention"),
    aten.GatherOp: TorchStep("gather"),
    aten.EmbeddingOp: TorchStep("embedding"),
    aten.EmbeddingDenseBackwardOp: TorchStep("embedding_dense_backward"),
    aten.CopyOp: TorchStep("copy"),
    aten.ForeachCopyOp: TorchStep("foreach_copy"),
    aten.ForeachAddOp: TorchStep("foreach_add"),
    aten.SizeOp: TorchStep("size"),
    aten.SymSizeOp: TorchStep("sym_size"),
    aten.PositionsOp: TorchStep("positions"),
    fusion.BroadcastSizesOp: TorchStep("broadcast_sizes"),
    fusion.ZerosLikeOp: TorchStep("zeros_like"),
}  # fmt: skip
"""Op class -> the PyTorch call that runs it unfused (`aten.opaque` has none: the
program runs its original target). Every pointwise op of the dialect has one
(`tests/test_op_homes.py`)."""


def op_info(op: Operation) -> OpInfo:
    """What `op`'s eager callable needs of the IR, read once."""
    props = {}
    for name, attr in op.properties.items():
        value = _plain(attr)
        if value is not _SKIP:
            props[name] = value
    operand_types = [o.type for o in op.operands]
    result_types = [r.type for r in op.results]
    step = TORCH_STEPS[type(op)]
    if isinstance(op, fusion.ZerosLikeOp) and _only_read(op):
        props[REUSED_ZEROS] = True
    if isinstance(op, aten.LinearOp | aten.MmOp) and _small_result(result_types[0]):
        props[SMALL_PRODUCT] = True
    reshape = None
    if step.kind == "reshape" and isinstance(result_types[0], TensorType):
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
        step,
    )


def _small_result(t: Attribute) -> bool:
    """A static tensor type under the output pool's `MIN_BYTES`: its product runs
    as the plain PyTorch call, with no check per call."""
    if not isinstance(t, TensorType) or not t.has_static_shape():
        return False
    return math.prod(t.get_shape()) * torch_dtype(t).itemsize < cpu_pool.MIN_BYTES


def _only_read(op: Operation) -> bool:
    """Whether every user of `op`'s results reads them into fresh results: a group
    (its kernel's inputs are read-only), a guard, or a pointwise op."""
    return all(
        isinstance(u.operation, fusion.GroupOp | fusion.GuardOp)
        or (u.operation.has_trait(aten.Pointwise) and u.operation.has_trait(Pure))
        for r in op.results
        for u in r.uses
    )


CONSTANT_FACTORIES = frozenset(
    {"aten.arange.default", "aten.arange.start", "aten.arange.start_step", "torch.arange"}
)
"""`aten.opaque` targets whose result, called with no tensor or size operand,
depends on nothing but the call's constant arguments."""


def reusable(op: aten.OpaqueOp) -> bool:
    """Whether one result of `op` can serve every call: a `CONSTANT_FACTORIES`
    call of constant arguments whose result only reads see (groups, guards,
    pure aten ops, fresh opaque calls, and views only they read); never one the
    program returns, whose caller could write to it."""
    return (
        op.target.data in CONSTANT_FACTORIES
        and not op.operands
        and all(_read_only(u.operation) for r in op.results for u in r.uses)
    )


def _read_only(user: Operation) -> bool:
    if isinstance(user, fusion.GroupOp | fusion.GuardOp):
        return True
    if isinstance(user, aten.OpaqueOp) and aten.OPAQUE_FRESH in user.attributes:
        return True  # its operands only read, its results fresh
    if user.has_trait(aten.ShapeOp):  # a view: read-only where its uses are
        return all(_read_only(u.operation) for r in user.results for u in r.uses)
    # Any other pure aten op (pointwise, a reduction, a lookup, a product) makes
    # fresh results of what it reads.
    return isinstance(user, aten.AtenOp) and user.has_trait(Pure)


def has_torch_callable(op: Operation) -> bool:
    return type(op) in TORCH_STEPS


def torch_callable(op: Operation) -> OpFn:
    """An eager callable for `op` over its runtime operands, returning a tuple."""
    if not has_torch_callable(op):
        raise KeyError(f"no eager PyTorch implementation for {op.name}")
    return step_callable(op_info(op))


SHAPE_BAKING_OPS: Sequence[str] = ("aten.view", "aten.reshape", "aten.expand", "aten.split")
"""Ops whose eager form carries sizes from the example inputs: a program with one
of them is specialized on exact input shapes, not just their broadcast pattern."""
