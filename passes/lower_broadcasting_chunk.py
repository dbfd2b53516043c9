"""`lower-broadcasting-chunk`: a `fusion.broadcasting_chunk` becomes one `aten.chunk`
per input that spans the chunked dim; the pieces of an input broadcast along it are
the input itself. No `aten.expand` is needed: the pieces' types are already the
un-broadcast ones, and their pointwise users broadcast them implicitly. `fuse`
absorbs the resulting chunks as views once a group holds all their uses.

    %x0, %x1, %b0, %b1, %c0, %c1 = fusion.broadcasting_chunk %x, %b, %c chunks = 2 dim = -1
        : tensor<8x64xf32>, tensor<64xf32>, tensor<8x1xf32>
        -> tensor<8x32xf32>, tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>,
           tensor<8x1xf32>, tensor<8x1xf32>
    ->
    %x0, %x1 = aten.chunk %x chunks = 2 dim = 1 : tensor<8x64xf32> -> tensor<8x32xf32>, tensor<8x32xf32>
    %b0, %b1 = aten.chunk %b chunks = 2 dim = 0 : tensor<64xf32> -> tensor<32xf32>, tensor<32xf32>
    (uses of %c0 and %c1 read %c)
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import ChunkOp
from fusec.dialects.fusion import BroadcastingChunkOp
from fusec.dialects.inference import I64, normalize_dim
from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)


@dataclass
class SplitBroadcastingChunk(RewritePattern):
    """One `aten.chunk` per spanning input; broadcast inputs stand for their pieces.

    %x0, %x1, %c0, %c1 = fusion.broadcasting_chunk %x, %c chunks = 2 dim = -1
        : tensor<8x64xf32>, tensor<8x1xf32> -> ...
    -> %x0, %x1 = aten.chunk %x chunks = 2 dim = 1 : ... ; %c0, %c1 -> %c
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastingChunkOp, rewriter: PatternRewriter) -> None:
        inputs = list(op.inputs)
        n = len(op.outputs) // len(inputs)
        ranks = [_rank(v) for v in inputs]
        rank = max(ranks)
        dim = normalize_dim(op.dim.value.data, rank)
        new_ops: list[Operation] = []
        results: list[SSAValue] = []
        for i, v in enumerate(inputs):
            pieces = op.outputs[i * n : (i + 1) * n]
            if all(p.type == v.type for p in pieces):
                results.extend([v] * n)
                continue
            chunk = ChunkOp(
                [v],
                {
                    "chunks": op.chunks,
                    "dim": IntegerAttr(dim - (rank - ranks[i]), I64),
                },
            )
            new_ops.append(chunk)
            results.extend(chunk.results)
        rewriter.replace(op, new_ops, results)


def _rank(v: SSAValue) -> int:
    t = v.type
    assert isinstance(t, TensorType)
    return t.get_num_dims()


@dataclass(frozen=True)
class LowerBroadcastingChunkPass(ModulePass):
    """Replace every `fusion.broadcasting_chunk` by `aten.chunk`s (module docstring).

    fusec-opt -p lower-broadcasting-chunk
    """

    name = "lower-broadcasting-chunk"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SplitBroadcastingChunk()).rewrite_module(op)
