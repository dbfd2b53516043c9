"""`&`, `|`, `^` of bool tensors: the logical ops, so masks combine inside a kernel.

On bool tensors the bitwise ops are the logical ones (`torch.bitwise_and(p, q)` ==
`torch.logical_and(p, q)`, both bool); on integers they are not, and stay opaque:

    m = (a > 0) & (b > 0)
->
    %gt = aten.gt %a, %0 : tensor<4xf32>, i64 -> tensor<4xi1>
    %gt_1 = aten.gt %b, %0 : tensor<4xf32>, i64 -> tensor<4xi1>
    %and = aten.logical_and %gt, %gt_1 : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>

The ATen forms (`aten.__and__.Tensor`, `aten.bitwise_and.Tensor`, ...) take the
same handlers.
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

import torch
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend.imported import NotMapped
from fusec.frontend.registry import Handler, register, register_aten
from fusec.frontend.torch_table import binary
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer

A = torch.ops.aten


def bool_bitwise(op_cls: type[Operation]) -> Handler:
    """The handler of a bitwise op that is `op_cls` (a logical op) on bool tensors."""

    def handle(ctx: Importer, a: Any, b: Any) -> SSAValue:
        for v in (ctx.operand(a), ctx.operand(b)):
            if not isinstance(v.type, TensorType) or inf.element_type(v.type) != inf.BOOL:
                raise NotMapped("a bitwise op of a tensor that is not bool")
        return binary(ctx, op_cls, a, b)

    return handle


AND = bool_bitwise(aten.LogicalAndOp)
OR = bool_bitwise(aten.LogicalOrOp)
XOR = bool_bitwise(aten.LogicalXorOp)

register(torch.bitwise_and, operator.and_, operator.iand, "bitwise_and", "bitwise_and_",
         "__and__")(AND)  # fmt: skip
register(torch.bitwise_or, operator.or_, operator.ior, "bitwise_or", "bitwise_or_",
         "__or__")(OR)  # fmt: skip
register(torch.bitwise_xor, operator.xor, operator.ixor, "bitwise_xor", "bitwise_xor_",
         "__xor__")(XOR)  # fmt: skip
# The ATen forms, in place too (`m &= mask` keeps `aten.__iand__` in an export).
register_aten(A.__and__, A.__iand__, A.bitwise_and, A.bitwise_and_)(AND)
register_aten(A.__or__, A.__ior__, A.bitwise_or, A.bitwise_or_)(OR)
register_aten(A.__xor__, A.__ixor__, A.bitwise_xor, A.bitwise_xor_)(XOR)
