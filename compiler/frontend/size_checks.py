"""Which exact sizes an imported graph depends on, beyond its size-1 pattern.

A chunk, split, narrow, slice or integer index cuts a dim whose size the
specialization key does not hold: `x.chunk(2, 0)[-1]` of 2 elements is 1
element (a static size-1 dim, broadcast as such), of 4 it is 2; `chunk(4)` of 6
elements is 3 pieces, not 4. So each cut records where its dim's size comes
from (a dim of a caller's argument, found by walking back through pointwise
ops and views) and a classifier of that size; the classes join the key:

    i, f, g, o = gates.chunk(4, 1)   ->   SizeCheck(arg=0, dim=1, "chunk", (4,))
    gates: 64 -> (4 pieces, none of size 1)   gates: 32 -> the same: one program
    gates: 6  -> (3 pieces, ...)              a new specialization

Where no source is found (a size from a matmul, say) the import holds for the
example's exact shapes only (`ImportedGraph.shape_dependent`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `SizeCheck` and `classify` run on warm starts, which import no xDSL
    from xdsl.ir import Operation, SSAValue


@dataclass(frozen=True)
class SizeCheck:
    """`classify(kind, params, args[arg].shape[dim])` is part of the key."""

    arg: int
    dim: int
    kind: str
    """"chunk" (params: chunks), "split" (split size), "slice" (start, end,
    step), "fits" (end of a cut from a non-negative start), "exact"; "value":
    the value of a 0-dim tensor argument, a Python float Dynamo passes as a
    tensor (`SizeFolding.fold_float_argument`), held even under exact shapes."""
    params: tuple[int, ...] = ()

    def of(self, args: Sequence[object]) -> Hashable:
        a = args[self.arg] if self.arg < len(args) else None
        if self.kind == "value":
            item = getattr(a, "item", None)
            return None if item is None or getattr(a, "ndim", None) != 0 else repr(item())
        shape = getattr(a, "shape", None)
        if shape is None or self.dim >= len(shape):
            return None
        return classify(self.kind, self.params, shape[self.dim])


def classify(kind: str, params: tuple[int, ...], n: int) -> Hashable:
    """The class of size `n` under a cut: sizes of one class cut alike."""
    if kind in ("chunk", "split"):
        if n == 0 or params[0] <= 0:
            return ("empty",)
        # torch.chunk's rule: pieces of ceil(n / chunks), the last one shorter.
        size = -(-n // params[0]) if kind == "chunk" else params[0]
        pieces = [min(size, n - start) for start in range(0, n, size)]
        return (len(pieces), tuple(p == 1 for p in pieces))
    if kind == "slice":
        length = len(range(*slice(*params).indices(n)))
        return (length == 0, length == 1)
    if kind == "fits":  # eager raises past the end
        return params[0] <= n
    return n


def dim_sources(value: SSAValue, dim: int) -> list[tuple[int, int]] | None:
    """(function argument index, dim) pairs whose size is `value`'s size at
    `dim`, or None where it cannot be told (an opaque op, a matmul, ...).
    [] means the size is a constant of the IR (an `expand` to a literal size)."""
    from fusec.dialects import aten
    from xdsl.dialects.builtin import TensorType
    from xdsl.ir import Block, BlockArgument, OpResult

    if isinstance(value, BlockArgument):
        owner = value.owner
        assert isinstance(owner, Block)
        return [(value.index, dim)]
    if not isinstance(value, OpResult):
        return None
    op = value.op
    t = value.type
    if not isinstance(t, TensorType):
        return None
    rank = t.get_num_dims()
    size = t.get_shape()[dim]
    if op.has_trait(aten.Pointwise) or isinstance(op, aten.ExpandOp):
        found: list[tuple[int, int]] = []
        for o in op.operands:
            ot = o.type
            if not isinstance(ot, TensorType):
                continue
            od = dim - (rank - ot.get_num_dims())
            if od < 0 or ot.get_shape()[od] != size:
                continue  # a broadcast dim: its size comes from elsewhere
            sources = dim_sources(o, od)
            if sources is None:
                return None
            found += sources
        return found
    if isinstance(op, aten.TransposeOp):
        d0, d1 = (aten_dim(op, "dim0", rank), aten_dim(op, "dim1", rank))
        return dim_sources(op.operands[0], d1 if dim == d0 else d0 if dim == d1 else dim)
    if isinstance(op, aten.PermuteOp):
        return dim_sources(op.operands[0], list(op.dims.get_values())[dim] % rank)
    if isinstance(op, aten.UnsqueezeOp):
        d = aten_dim(op, "dim", rank)
        return [] if dim == d else dim_sources(op.operands[0], dim - (dim > d))
    return None


def aten_dim(op: Operation, name: str, rank: int) -> int:
    attr = op.properties[name]
    return attr.value.data % rank  # type: ignore[attr-defined]
