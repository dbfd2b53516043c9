"""The IR types of the values an fx graph computes, and what its nodes recorded
(`meta['val']`, Dynamo's `example_value`): symbolic sizes become dynamic dims.

    value: f32[4, 16], recorded: FakeTensor f32[s0, 16]  ->  tensor<?x16xf32>
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx
from fusec.codegen.torch_ops import DTYPES_OF_TORCH
from fusec.dialects import inference as inf
from fusec.frontend.imported import NotMapped
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute


def tensor_type(t: torch.Tensor) -> TensorType:
    try:
        dt = DTYPES_OF_TORCH[t.dtype]
    except KeyError:
        raise NotMapped(f"dtype {t.dtype}") from None
    return TensorType(dt, list(t.shape))


def value_type(v: Any) -> Attribute:
    """The IR type of a runtime value (a tensor or a Python scalar)."""
    if isinstance(v, torch.Tensor):
        return tensor_type(v)
    if isinstance(v, bool):
        return inf.BOOL
    if isinstance(v, int):
        return inf.I64
    if isinstance(v, float):
        return inf.F64
    raise NotMapped(f"value of type {type(v).__name__}")


def recorded_value(node: torch.fx.Node | None) -> Any:
    """What Dynamo (`example_value`) or make_fx/export/AOTAutograd (`val`)
    recorded for `node`: FakeTensors whose sizes may be SymInts."""
    if node is None:
        return None
    return node.meta.get("val", node.meta.get("example_value"))


def is_symbol(size: Any) -> bool:
    """A recorded size that is a symbol, not a size Dynamo specialized."""
    return isinstance(size, torch.SymInt) and size.node.maybe_as_int() is None


def symbolic_type(value: Any, recorded: Any) -> Attribute:
    """`value_type(value)` with a dynamic dim (`?`) wherever the recorded value's
    size is a symbol: the size is a runtime value of the program, not this call's.
    A size 1 stays 1: programs are selected by their inputs' size-1 dims (and
    guarded on them), so every call this program serves has a 1 there.

        value: f32[4, 16], recorded: FakeTensor f32[s0, 16]  ->  tensor<?x16xf32>
    """
    t = value_type(value)
    if not isinstance(t, TensorType) or not isinstance(recorded, torch.Tensor):
        return t
    sizes = list(recorded.shape)
    if len(sizes) != t.get_num_dims():
        return t
    shape = [
        inf.DYNAMIC if d != 1 and is_symbol(s) else d
        for d, s in zip(t.get_shape(), sizes, strict=True)
    ]
    return TensorType(t.get_element_type(), shape)


def is_scalar(v: Any) -> bool:
    return isinstance(v, bool | int | float)


def holds_symbol(v: Any) -> bool:
    """Whether a recorded value is, or holds, a SymInt (a size Dynamo kept symbolic;
    a SymInt that is a known constant, such as a specialized dim, is not)."""
    if isinstance(v, torch.SymInt):
        return is_symbol(v)
    if isinstance(v, torch.SymFloat | torch.SymBool):
        return True
    if isinstance(v, torch.Size | tuple | list):
        return any(holds_symbol(x) for x in v)
    return False


def has_symbolic_sizes(gm: torch.fx.GraphModule) -> bool:
    """Whether Dynamo or make_fx captured `gm` with symbolic sizes (SymInt
    placeholders or tensors whose recorded sizes are symbols)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        v = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(v, torch.SymInt):
            return True
        if isinstance(v, torch.Tensor) and any(
            isinstance(s, torch.SymInt) for s in (*v.shape, *v.stride())
        ):
            return True
    return False


def static_dim(x: Any, dim: int) -> bool:
    """Whether the graph records dim `dim` of `x` as a fixed size (an int in its
    `meta['val']`), so no other size can reach this op."""
    val = recorded_value(x) if isinstance(x, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() == 0:
        return False
    return not is_symbol(val.shape[inf.normalize_dim(dim, val.dim())])
