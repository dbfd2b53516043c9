"""`broadcasting-chunk`: move `aten.chunk` above pointwise producers so they fuse.

The seeds' `tryToMoveChunk`. A chunk between a pointwise producer and pointwise
consumers splits the graph in two kernels; chunking the producer's operands instead
and running the producer once per piece puts everything after the chunk's inputs
in one group. The chunk becomes a `fusion.broadcasting_chunk` (the seeds'
`prim::BroadcastingChunk`), which keeps growing as further producers move below
it, so a chunk climbs any number of pointwise levels and ends on the values no
pointwise op produces (matmul results, biases, arguments):

    %z = aten.add %x, %b : tensor<8x64xf32>, tensor<64xf32> -> tensor<8x64xf32>
    %p, %q = aten.chunk %z chunks = 2 dim = 1 : tensor<8x64xf32> -> tensor<8x32xf32>, tensor<8x32xf32>
    %r = aten.mul %p, %q : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>
    ->
    %x0, %x1, %b0, %b1 = fusion.broadcasting_chunk %x, %b chunks = 2 dim = -1 : ...
    %p = aten.add %x0, %b0 : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %q = aten.add %x1, %b1 : tensor<8x32xf32>, tensor<32xf32> -> tensor<8x32xf32>
    %r = aten.mul %p, %q : tensor<8x32xf32>, tensor<8x32xf32> -> tensor<8x32xf32>

A producer moves only when (as in the seeds) it is a single-result pointwise op in
the same block, the chunk is its only user, every piece of it feeds fusible
consumers (pointwise ops or groups: the motion pays off only if they fuse), the
chunked dim is static and not a broadcast dim of its result (size > 1), and each
tensor operand either spans that dim or is statically broadcast along it. Operands
broadcast along the dim (and Python scalars) are not chunked: every piece reads
them whole, so no explicit broadcast is ever needed. `lower-broadcasting-chunk`
then turns what is left into plain `aten.chunk`s that `fuse` absorbs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fusec.dialects.aten import AtenOp, ChunkOp
from fusec.dialects.fusion import BroadcastingChunkOp
from fusec.dialects.inference import DYNAMIC, normalize_dim, tensor_type
from fusec.passes.aliasing import tensor_roots, written_between
from fusec.passes.fusion_utils import in_group, is_consumer, is_pointwise
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Operation, OpResult, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import VerifyException


def _spans(t: Attribute, dim: int) -> bool:
    """Is tensor type `t` cut by a chunk along `dim` (negative: counted from the end)?"""
    if not isinstance(t, TensorType) or t.get_num_dims() + dim < 0:
        return False
    return t.get_shape()[dim] != 1


def _movable_producer(
    chunk: Operation, value: SSAValue, pieces: Sequence[SSAValue], chunks: int, dim: int
) -> AtenOp | None:
    """The producer of `value` if it may move below `chunk` (which cuts `value` into
    `pieces` along negative `dim`), else None."""
    if not isinstance(value, OpResult):
        return None
    producer = value.op
    if (
        not isinstance(producer, AtenOp)
        or not is_pointwise(producer)
        or len(producer.results) != 1
        or producer.parent_block() is not chunk.parent_block()
        or in_group(producer)
    ):
        return None
    uses = list(value.uses)
    if len(uses) != 1 or uses[0].operation is not chunk:
        return None
    if _written_between(producer, chunk):
        return None
    if not all(is_consumer(use.operation) for p in pieces for use in p.uses):
        return None
    result = value.type
    assert isinstance(result, TensorType)
    if result.get_num_dims() + dim < 0:
        return None
    size = result.get_shape()[dim]
    if size == DYNAMIC or size <= 1:
        return None
    for t in producer.operand_types:
        if not isinstance(t, TensorType) or t.get_num_dims() + dim < 0:
            continue
        if t.get_shape()[dim] not in (1, size):
            return None  # dynamic: it may or may not be broadcast at run time
    # Each piece of the producer must compute exactly the piece it replaces.
    for j, piece in enumerate(pieces):
        operand_types = [_piece_type(t, chunks, dim, j) for t in producer.operand_types]
        try:
            inferred = producer.infer_result_types(operand_types)
        except VerifyException:
            return None
        if inferred != [piece.type]:
            return None
    return producer


def _written_between(producer: Operation, chunk: Operation) -> bool:
    """Does an `aten.copy_` between `producer` and `chunk` (where its pieces would
    be computed) write a tensor `producer` reads? Then moving it reads too late:

        %g = aten.gelu %x ; aten.copy_ %x, %n ; aten.chunk %g   (gelu must stay first)
    """
    return written_between(producer, chunk, tensor_roots(producer.operands))


def _piece_type(t: Attribute, chunks: int, dim: int, j: int) -> Attribute:
    if not _spans(t, dim):
        return t
    return BroadcastingChunkOp.piece_types([t], chunks, dim)[j]


def _negative_dim(chunk: ChunkOp) -> int:
    rank = tensor_type(SSAValue.get(chunk.input).type).get_num_dims()
    return normalize_dim(chunk.dim.value.data, rank) - rank


@dataclass
class PromoteMovableChunk(RewritePattern):
    """A chunk whose input's producer may move becomes a broadcasting chunk (which
    `MoveProducerBelowBroadcastingChunk` then moves it through).

        %p, %q = aten.chunk %z chunks = 2 dim = 1 : tensor<8x64xf32> -> ...
        -> %p, %q = fusion.broadcasting_chunk %z chunks = 2 dim = -1 : tensor<8x64xf32> -> ...
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ChunkOp, rewriter: PatternRewriter) -> None:
        dim = _negative_dim(op)
        chunks = op.chunks.value.data
        if _movable_producer(op, op.input, list(op.outputs), chunks, dim) is None:
            return
        rewriter.replace(op, BroadcastingChunkOp([op.input], chunks, dim))


@dataclass
class MoveProducerBelowBroadcastingChunk(RewritePattern):
    """Chunk a pointwise producer's operands instead of its result, and run it per piece.

    %z = aten.sigmoid %x : tensor<8x64xf32> -> tensor<8x64xf32>
    %z0, %z1, %b0, %b1 = fusion.broadcasting_chunk %z, %b chunks = 2 dim = -1 : ...
    ->
    %b0, %b1, %x0, %x1 = fusion.broadcasting_chunk %b, %x chunks = 2 dim = -1 : ...
    %z0 = aten.sigmoid %x0 : tensor<8x32xf32> -> tensor<8x32xf32>
    %z1 = aten.sigmoid %x1 : tensor<8x32xf32> -> tensor<8x32xf32>
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: BroadcastingChunkOp, rewriter: PatternRewriter) -> None:
        inputs = list(op.inputs)
        n = len(op.outputs) // len(inputs)
        chunks = op.chunks.value.data
        rank = max(tensor_type(SSAValue.get(v).type).get_num_dims() for v in inputs)
        dim = normalize_dim(op.dim.value.data, rank) - rank
        for k, value in enumerate(inputs):
            pieces = list(op.outputs[k * n : (k + 1) * n])
            producer = _movable_producer(op, value, pieces, chunks, dim)
            if producer is not None:
                self._move(op, k, producer, chunks, dim, rewriter)
                return

    @staticmethod
    def _move(
        op: BroadcastingChunkOp,
        k: int,
        producer: AtenOp,
        chunks: int,
        dim: int,
        rewriter: PatternRewriter,
    ) -> None:
        inputs = list(op.inputs)
        n = len(op.outputs) // len(inputs)
        kept = [v for i, v in enumerate(inputs) if i != k]
        new_inputs = list(kept)
        for v in producer.operands:
            if _spans(v.type, dim) and v not in new_inputs:
                new_inputs.append(v)
        bchunk = BroadcastingChunkOp(new_inputs, chunks, dim)
        pieces_of = {v: bchunk.outputs[i * n : (i + 1) * n] for i, v in enumerate(new_inputs)}
        moved: list[Operation] = []
        for j, old in enumerate(op.outputs[k * n : (k + 1) * n]):
            operands = [pieces_of[v][j] if _spans(v.type, dim) else v for v in producer.operands]
            moved.append(
                type(producer).create(
                    operands=operands,
                    result_types=[old.type],
                    properties=dict(producer.properties),
                    attributes=dict(producer.attributes),
                )
            )
        results: list[SSAValue] = []
        for i, v in enumerate(inputs):
            if i == k:
                results.extend(m.results[0] for m in moved)
            else:
                results.extend(pieces_of[v])
        rewriter.replace(op, [bchunk, *moved], results)
        rewriter.erase(producer)


@dataclass(frozen=True)
class BroadcastingChunkPass(ModulePass):
    """Move chunks above pointwise producers (see the module docstring).

    fusec-opt -p broadcasting-chunk
    """

    name = "broadcasting-chunk"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [PromoteMovableChunk(), MoveProducerBelowBroadcastingChunk()]
            ),
            apply_recursively=True,
        ).rewrite_module(op)
