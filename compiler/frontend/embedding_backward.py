"""An embedding table's gradient: AOTAutograd's `embedding_dense_backward`.

The backward of every lookup (`aten.embedding`) is one ATen call that sums the
gradient's rows into a zeroed table, row by index. It imports as the dialect's
op, which `fuse-scatters` makes a kernel (with the add of a tied weight's other
gradient as the table's starting value):

    %g = aten.opaque "aten.embedding_dense_backward.default"(%d, %ids)   (100, -1, False)
->
    %g = aten.embedding_dense_backward %d, %ids num_weights = 100 padding_idx = -1
         : tensor<2x8x32xf32>, tensor<2x8xi64> -> tensor<100x32xf32>

Gradients scaled by the ids' frequency (`scale_grad_by_freq=True`) stay opaque.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.frontend.imported import NotMapped
from fusec.frontend.registry import register_aten
from xdsl.dialects.builtin import TensorType, i32
from xdsl.ir import SSAValue

if TYPE_CHECKING:
    from fusec.frontend.importer import Importer


@register_aten(torch.ops.aten.embedding_dense_backward)
def _embedding_dense_backward(
    ctx: Importer, grad: Any, ids: Any, num_weights: Any, padding_idx: Any, scale: Any
) -> SSAValue:
    rows, padding, by_freq = ctx.const(num_weights), ctx.const(padding_idx), ctx.const(scale)
    if by_freq is not False:
        raise NotMapped("embedding_dense_backward scaled by frequency")
    if not isinstance(rows, int) or not isinstance(padding, int):
        raise NotMapped("embedding_dense_backward with a symbolic table size")
    g, i = ctx.tensor(grad), ctx.tensor(ids)
    if not isinstance(i.type, TensorType) or i.type.get_element_type() not in (inf.I64, i32):
        raise NotMapped("embedding_dense_backward with indices that are not i64 or i32")
    if not isinstance(g.type, TensorType) or g.type.get_num_dims() != i.type.get_num_dims() + 1:
        raise NotMapped("embedding_dense_backward of a gradient not shaped ids + [row size]")
    return ctx.add_op(aten.EmbeddingDenseBackwardOp(g, i, rows, padding)).results[0]
