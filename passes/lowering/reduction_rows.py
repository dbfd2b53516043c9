"""The CPU loop structures of a reduction kernel (`reduction_kernel`):
`CpuRows`, loops over the kept dims with one nest over the reduced dims per
stage, and `RowAccumulators`, a column reduction (the innermost dim kept) with
its accumulators in a stack buffer while the rows are walked in memory order.
(`reduction_gpu.WarpRows` is the `nvptx` counterpart of `CpuRows`.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fusec.passes.lowering.emitter import (
    DYN,
    INDEX,
    LoopEmitter,
)
from fusec.passes.lowering.reduction_values import (
    REDUCTION_KINDS,
    GroupValues,
    acc_type,
    finish_accumulators,
    init_accumulators,
    update_accumulators,
)
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import FixedBitwidthType
from xdsl.ir import Attribute, Block, Operation, SSAValue

MIN_COLUMN_TILE = 256
MAX_COLUMN_TILE = 16384
"""Columns whose accumulators a column reduction keeps in stack buffers while
it walks the rows (`RowAccumulators`): as many as `COLUMN_TILE_BYTES` of
accumulators hold, a power of two in [MIN_COLUMN_TILE, MAX_COLUMN_TILE]."""
COLUMN_TILE_BYTES = 64 * 1024
"""Bytes of one tile's accumulators (every reduction of the stage together):
one f32 sum gets 16384 columns, Welford's three f64 2048, fifty f32 sums 256.

A tile as wide as the row is what makes the column sum cheap: the rows are then
read as ATen's pointwise kernels read them, end to end. With tiles of 256
columns (1 KiB of a 4 KiB f32 row, then the next row) the hardware
prefetchers restart on every row; `g * x` and its column sum at 2048x1024 f32,
one thread, took 1.5 ms, the product alone 0.65-0.85 ms; with a 1024-column
tile 0.67-0.79 ms. At 1024x4096, 4096-column tiles measured 2.2-2.9 ms against
2.7-3.1 ms at 1024 and 2048; at 256x32768, 16384 5.6 ms against 6.4-6.6 at
4096 and 7.7-8.1 at 256. The buffers stay small next to a worker thread's
stack (8 MiB; a tiled pointwise nest may take 1 MiB)."""


def column_tile(bytes_per_column: int) -> int:
    """The tile width of a stage whose accumulators take `bytes_per_column`
    bytes per column (all reductions, all accumulators: Welford's three, max's
    NaN flag)."""
    tile = MIN_COLUMN_TILE
    while tile < MAX_COLUMN_TILE and 2 * tile * bytes_per_column <= COLUMN_TILE_BYTES:
        tile *= 2
    return tile


def accumulates_in_memory(
    stages: list[list[Operation]], out_values: Sequence[SSAValue], full_outs: Sequence[int]
) -> bool:
    """A column reduction (the innermost dim kept) runs as `RowAccumulators` when
    it has one stage and no full output reads a reduced value: then one pass over
    the rows computes everything (a second stage, or an epilogue broadcasting the
    reduced value back over the rows, needs the rows again)."""
    if len(stages) != 1:
        return False
    reduced = {op.results[0] for op in stages[0]}
    seen: set[SSAValue] = set()

    def reads_reduced(v: SSAValue) -> bool:
        if v in reduced:
            return True
        if v in seen:
            return False
        seen.add(v)
        owner = v.owner
        return isinstance(owner, Operation) and any(reads_reduced(o) for o in owner.operands)

    return not any(reads_reduced(out_values[k]) for k in full_outs)


class RowAccumulators:
    """A column reduction (a sum over the batch: the innermost dim kept) as ATen
    runs it: for a tile of columns (`column_tile`: the whole row where the
    accumulators fit `COLUMN_TILE_BYTES`), accumulators in a stack buffer, and
    the rows walked in memory order, each adding a contiguous run of columns
    into them (a loop LLVM vectorizes) while the full outputs are stored; then
    the tile's results. Blocks of columns walked down the rows instead (the
    other column path) read one cache line per row, a stride the prefetchers do
    not follow across pages.

        for c0 in [lo, hi) step T:                       # w = min(T, hi - c0)
            acc[j] = init                  for j < w
            for r in rows: acc[j] = update(acc[j], x[r, c0 + j])   (+ full outputs)
            out[c0 + j] = finish(acc[j])   for j < w     (+ row outputs)
    """

    def __init__(
        self,
        e: LoopEmitter,
        stage: list[Operation],
        mems: Sequence[tuple[SSAValue, list[SSAValue]]],
        moving: Sequence[int],
        d: int,
        lo: SSAValue,
        hi: SSAValue,
        c0: SSAValue,
        c1: SSAValue,
        step: Callable[[LoopEmitter, Sequence[SSAValue], SSAValue, int], list[SSAValue]],
        values: Callable[[LoopEmitter, list[SSAValue]], GroupValues],
    ):
        self.stage, self.mems, self.moving, self.d = stage, mems, moving, d
        self.lo, self.hi, self.c0, self.c1, self.step, self.values = lo, hi, c0, c1, step, values
        self.kinds = [REDUCTION_KINDS[type(op)] for op in stage]
        # Stack buffers at the function's entry, so LLVM allocates them once.
        self.inits = [
            init_accumulators(e, kind, acc_type(op))
            for op, kind in zip(stage, self.kinds, strict=True)
        ]
        width = sum(_bytes(v.type) for init in self.inits for v in init)
        self.tile = e.const(column_tile(width), INDEX)
        self.buffers = [
            [
                e.add(
                    memref.AllocaOp.get(
                        v.type, alignment=64, shape=[DYN], dynamic_sizes=[self.tile]
                    )
                )
                for v in init
            ]
            for init in self.inits
        ]

    def _columns(
        self,
        em: LoopEmitter,
        width: SSAValue,
        base: Sequence[SSAValue] | None,
        contiguous: bool,
        body: Callable[[LoopEmitter, SSAValue, list[SSAValue]], None],
    ) -> None:
        """`for j in [0, width)`: `body(emitter, j, offsets of column j)` (no
        offsets where `base` is None: a loop over the buffer alone)."""
        blk = Block(arg_types=[INDEX])
        je = LoopEmitter([])
        j = blk.args[0]
        offs: list[SSAValue] = []
        if base is not None and contiguous:
            offs = [
                je.add(arith.AddiOp(o, j)) if k in self.moving else o for k, o in enumerate(base)
            ]
        elif base is not None:
            offs = self.step(je, base, j, self.d)
        body(je, j, offs)
        je.add(scf.YieldOp())
        blk.add_ops(je.ops)
        em.ops.append(scf.ForOp(self.c0, width, self.c1, [], blk))

    def emit(
        self,
        em: LoopEmitter,
        nest: CpuRows,
        row_offsets: Sequence[SSAValue],
        contiguous: bool,
        full_outputs: Callable[
            [LoopEmitter, GroupValues, list[SSAValue], dict[SSAValue, SSAValue]], object
        ],
        row_outputs: Callable[[LoopEmitter, GroupValues, list[SSAValue]], object],
        count: SSAValue,
    ) -> None:
        """The tiles over [lo, hi) at `row_offsets` (the kept outer dims'
        position; reduced dims at 0): `full_outputs` stores the full outputs at
        each element, `row_outputs` the row outputs once the tile's reductions
        are done (their values in the `GroupValues`' `row`)."""
        blk = Block(arg_types=[INDEX])
        te = LoopEmitter([])
        start = blk.args[0]
        width = te.add(arith.MinSIOp(self.tile, te.add(arith.SubiOp(self.hi, start))))
        base = self.step(te, row_offsets, start, self.d)

        def init(je: LoopEmitter, j: SSAValue, _offs: list[SSAValue]) -> None:
            for init_values, bufs in zip(self.inits, self.buffers, strict=True):
                for v, buf in zip(init_values, bufs, strict=True):
                    je.add(memref.StoreOp.get(v, buf, [j]))

        def accumulate(je: LoopEmitter, j: SSAValue, offs: list[SSAValue]) -> None:
            vals = self.values(je, offs)
            cache: dict[SSAValue, SSAValue] = {}
            for op, kind, bufs in zip(self.stage, self.kinds, self.buffers, strict=True):
                x = vals.get(op.operands[0], je, offs, cache)
                accs = [je.add(memref.LoadOp.get(buf, [j])) for buf in bufs]
                for v, buf in zip(update_accumulators(je, kind, accs, x), bufs, strict=True):
                    je.add(memref.StoreOp.get(v, buf, [j]))
            full_outputs(je, vals, offs, cache)

        def finish(je: LoopEmitter, j: SSAValue, offs: list[SSAValue]) -> None:
            vals = self.values(je, offs)
            for op, bufs in zip(self.stage, self.buffers, strict=True):
                accs = [je.add(memref.LoadOp.get(buf, [j])) for buf in bufs]
                vals.row[op.results[0]] = finish_accumulators(je, op, accs, count)
            row_outputs(je, vals, offs)

        self._columns(te, width, None, contiguous, init)
        nest.full(te, base, lambda ie, o: self._columns(ie, width, o, contiguous, accumulate))
        self._columns(te, width, base, contiguous, finish)
        te.add(scf.YieldOp())
        blk.add_ops(te.ops)
        em.ops.append(scf.ForOp(self.lo, self.hi, self.tile, [], blk))


def _bytes(t: Attribute) -> int:
    """Bytes of one element of an accumulator buffer (an i1 flag takes one)."""
    assert isinstance(t, FixedBitwidthType), t
    return t.size


BodyFn = Callable[[LoopEmitter, list[SSAValue], list[SSAValue]], list[SSAValue]]


class CpuRows:
    """The CPU nest: loops over the kept dims (the first over [begin, end), the
    threads' share; one [0, 1) pass when every dim is reduced), and per stage a
    nest over the reduced dims carrying the accumulators."""

    def __init__(
        self,
        e: LoopEmitter,
        begin: SSAValue,
        end: SSAValue,
        sizes: Sequence[SSAValue],
        kept: Sequence[int],
        rdims: Sequence[int],
        offs: list[SSAValue],
        c0: SSAValue,
        c1: SSAValue,
        step: Callable[[LoopEmitter, Sequence[SSAValue], SSAValue, int], list[SSAValue]],
        inner: bool = True,
    ):
        self.sizes, self.rdims, self.c0, self.c1, self.step = sizes, rdims, c0, c1, step
        self._opened: list[tuple[Block, LoopEmitter]] = []
        em = e
        if not kept and not inner:  # the caller loops over the only kept dim itself
            self.body, self.row_offsets = em, offs
            return
        for n, d in enumerate(kept or [None]):
            blk = Block(arg_types=[INDEX])
            lo, hi = (begin, end) if n == 0 or d is None else (c0, sizes[d])
            em.ops.append(scf.ForOp(lo, hi, c1, [], blk))
            em = LoopEmitter([])
            self._opened.append((blk, em))
            if d is not None:
                offs = step(em, offs, blk.args[0], d)
        self.body, self.row_offsets = em, offs

    def _nest(
        self,
        em: LoopEmitter,
        dims: Sequence[int],
        offs: Sequence[SSAValue],
        accs: Sequence[SSAValue],
        body_fn: BodyFn,
    ) -> list[SSAValue]:
        """Loops over `dims` carrying `accs`; `body_fn(emitter, offsets, accs)` gives
        the next accumulators at each element. Returns the final ones."""
        if not dims:
            return body_fn(em, list(offs), list(accs))
        d = dims[0]
        blk = Block(arg_types=[INDEX] + [v.type for v in accs])
        inner = LoopEmitter([])
        inner_offs = self.step(inner, offs, blk.args[0], d)
        new = self._nest(inner, dims[1:], inner_offs, list(blk.args[1:]), body_fn)
        inner.add(scf.YieldOp(*new))
        blk.add_ops(inner.ops)
        loop = scf.ForOp(self.c0, self.sizes[d], self.c1, list(accs), blk)
        em.ops.append(loop)
        return list(loop.results)

    def reduce(
        self,
        em: LoopEmitter,
        offs: Sequence[SSAValue],
        accs: Sequence[SSAValue],
        body_fn: BodyFn,
        combine: BodyFn,
    ) -> list[SSAValue]:
        return self._nest(em, self.rdims, offs, accs, body_fn)

    def full(
        self,
        em: LoopEmitter,
        offs: Sequence[SSAValue],
        body_fn: Callable[[LoopEmitter, list[SSAValue]], None],
    ) -> None:
        def no_accumulators(
            ie: LoopEmitter, o: Sequence[SSAValue], _a: Sequence[SSAValue]
        ) -> list[SSAValue]:
            body_fn(ie, list(o))
            return []

        self._nest(em, self.rdims, offs, [], no_accumulators)

    def first_lane(self, em: LoopEmitter) -> tuple[LoopEmitter, Callable[[], None]]:
        return em, lambda: None

    def close(self) -> None:
        for blk, inner in reversed(self._opened):
            inner.add(scf.YieldOp())
            blk.add_ops(inner.ops)
