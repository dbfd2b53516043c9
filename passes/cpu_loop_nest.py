"""The CPU loop nest of a pointwise kernel (`lower-group-to-loops`, target cpu):
loops over [begin, end) x sizes[1:], tiled over the two innermost dims when an
operand is transposed.

The host orders the index space so the dim most tensors are contiguous along is
innermost (`fusec.runtime.cpu._memory_order`). A transposed operand then reads
across its memory on the inner loop: a cache line (and, for large tensors, a
page) per element, and at power-of-two strides all those lines fall in one L1
set, so none survives until the next row wants it. When the host also puts that
operand's contiguous dim second innermost, the kernel walks the two dims in
tiles of TILE_OUTER x TILE_INNER and first copies the operand's tile into a
stack buffer, reading each of its cache lines whole (one line per column of the
tile), then runs the body over the tile with that operand read from the buffer,
where it is contiguous like every other tensor, so the inner loop vectorizes:

    %transposed = (%as0 == 1 and %as1 > 1) or ...          // once per launch
    scf.for %t0 = %lo to %hi step %tile_t {                // dim rank-2, by tiles
      %t1 = arith.minsi (%t0 + %tile_t), %hi
      scf.for %u0 = %c0 to %n_u step %tile_u {             // dim rank-1, by tiles
        %u1 = arith.minsi (%u0 + %tile_u), %n_u
        scf.if %a_packed {                                 // a tile of `a` -> %abuf
          scf.for %j = %u0 to %u1 { scf.for %i = %t0 to %t1 {
            %abuf[(%i - %t0) * TILE_INNER + %j - %u0] = %a[%i * %as0 + %j * %as1]
          } }
        }
        %aref = arith.select %a_packed, %abuf, %a          // and its strides
        scf.for %i = %t0 to %t1 { scf.for %j = %u0 to %u1 { ...body... } }
      }
    }

Which operands are copied is decided per launch, from the strides the host
passes: one with stride 1 on dim rank-2 and a stride above 1 on dim rank-1 (its
fastest dim disagrees with the loop's). With none, the tiles are each dim's
whole extent, so each tile loop runs once and the nest is the plain one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, MemRefType
from xdsl.ir import Block, Operation, SSAValue

INDEX = IndexType()

TILE_OUTER = 16
"""Rows of a tile (dim rank-2, along which a transposed operand is contiguous):
one 64-byte cache line of f32, read whole for each column of the tile."""
TILE_INNER = 128
"""Columns of a tile (dim rank-1, the output's contiguous dim): long enough
rows for the vectorized body and the other tensors' prefetchers; a buffer is
TILE_OUTER * TILE_INNER elements (8 KiB of f32)."""

BodyEmitter = Callable[[list[Operation], Sequence[SSAValue], Sequence[SSAValue]], None]
"""Appends the body at one index to the ops list, given each tensor's memref
and offset in it."""

Mem = tuple[SSAValue, Sequence[SSAValue]]
"""A tensor of the kernel: its flat memref and its strides (one per dim)."""


def cpu_loops(
    begin: SSAValue,
    end: SSAValue,
    sizes: Sequence[SSAValue],
    mems: Sequence[Mem],
    n_operands: int,
    c0: SSAValue,
    c1: SSAValue,
    emit_body: BodyEmitter,
) -> list[Operation]:
    """A nest over [begin, end) x sizes[1:] (`mems[:n_operands]` are read, the
    rest written); each tensor's offset is accumulated per depth so the
    innermost loop does one multiply-add per tensor, and none on dims where its
    stride is the constant 0 (the load is hoisted there).

    (The innermost loop is not versioned for unit strides here: LLVM's loop
    vectorizer versions symbolic strides itself, and a second copy of the body
    doubled compile time for a gain lost in the noise.)"""
    rank = len(sizes)
    pre: list[Operation] = []
    tiling = _Tiling.make(pre, begin, end, sizes, mems[:n_operands], c0, c1) if rank >= 2 else None
    refs = [ref for ref, _ in mems]
    strides = [list(s) for _, s in mems]
    offsets: list[SSAValue] = [c0 for _ in mems]
    loops: list[tuple[scf.ForOp, list[Operation]]] = []

    def loop(lo: SSAValue, hi: SSAValue, step: SSAValue) -> tuple[SSAValue, list[Operation]]:
        blk = Block(arg_types=[INDEX])
        ops: list[Operation] = []
        loops.append((scf.ForOp(lo, hi, step, [], blk), ops))
        return blk.args[0], ops

    def point_loop(d: int, lo: SSAValue, hi: SSAValue) -> None:
        iv, ops = loop(lo, hi, c1)
        for k, st in enumerate(strides):
            if st[d] is not c0:
                offsets[k] = _op(ops, arith.AddiOp, offsets[k], _op(ops, arith.MuliOp, iv, st[d]))

    for d in range(rank - 2 if tiling else rank):
        point_loop(d, begin if d == 0 else c0, end if d == 0 else sizes[d])
    if tiling is not None:
        t = rank - 2
        lo, hi = (begin, end) if t == 0 else (c0, sizes[t])
        t0, ops = loop(lo, hi, tiling.tile_t)
        t1 = _op(ops, arith.MinSIOp, _op(ops, arith.AddiOp, t0, tiling.tile_t), hi)
        u0, ops = loop(c0, sizes[t + 1], tiling.tile_u)
        u1 = _op(ops, arith.MinSIOp, _op(ops, arith.AddiOp, u0, tiling.tile_u), sizes[t + 1])
        for k, packed, buf in tiling.packs:
            _pack(ops, buf, packed, mems[k], offsets[k], t, (t0, t1), (u0, u1), c0, c1)
            # The body reads the buffer: element (i, j) of the tile sits at
            # (i - t0) * TILE_INNER + (j - u0), i.e. offset -(t0 * TILE_INNER + u0).
            start = _op(ops, arith.MuliOp, t0, tiling.inner)
            start = _op(ops, arith.SubiOp, c0, _op(ops, arith.AddiOp, start, u0))
            refs[k] = _op(ops, arith.SelectOp, packed, buf, refs[k])
            offsets[k] = _op(ops, arith.SelectOp, packed, start, offsets[k])
            strides[k][t] = _op(ops, arith.SelectOp, packed, tiling.inner, strides[k][t])
            strides[k][t + 1] = _op(ops, arith.SelectOp, packed, c1, strides[k][t + 1])
        point_loop(t, t0, t1)
        point_loop(t + 1, u0, u1)
    emit_body(loops[-1][1], refs, offsets)
    for (_, ops), nxt in zip(loops, loops[1:], strict=False):
        ops.extend([nxt[0], scf.YieldOp()])
    loops[-1][1].append(scf.YieldOp())
    for for_op, ops in loops:
        for_op.body.block.add_ops(ops)
    return [*pre, loops[0][0]]


@dataclass
class _Tiling:
    """The launch's tile sizes and, per operand that may be transposed, whether
    it is (an i1) and its tile buffer."""

    tile_t: SSAValue
    tile_u: SSAValue
    inner: SSAValue
    """The constant TILE_INNER: a buffer's row stride."""
    packs: list[tuple[int, SSAValue, SSAValue]]

    @staticmethod
    def make(
        ops: list[Operation],
        begin: SSAValue,
        end: SSAValue,
        sizes: Sequence[SSAValue],
        operands: Sequence[Mem],
        c0: SSAValue,
        c1: SSAValue,
    ) -> _Tiling | None:
        """Worked out once per launch, in the entry block (so the buffers are
        fixed stack slots): tiles of TILE_OUTER x TILE_INNER when some operand
        is contiguous along dim rank-2 and strided along dim rank-1, else each
        dim's whole extent (one tile). None when no operand can be transposed
        (each has the constant 0 stride on one of the dims): the plain nest."""
        t = len(sizes) - 2
        candidates = [k for k, (_, s) in enumerate(operands) if c0 not in (s[t], s[t + 1])]
        if not candidates:
            return None
        inner = _const(ops, TILE_INNER)
        packs: list[tuple[int, SSAValue, SSAValue]] = []
        transposed: SSAValue | None = None
        for k in candidates:
            ref, s = operands[k]
            unit = _op(ops, arith.CmpiOp, s[t], c1, "eq")
            packed = _op(ops, arith.AndIOp, unit, _op(ops, arith.CmpiOp, s[t + 1], c1, "sgt"))
            ref_t = ref.type
            assert isinstance(ref_t, MemRefType)
            alloca = memref.AllocaOp.get(
                ref_t.get_element_type(),
                alignment=64,
                shape=[DYNAMIC_INDEX],
                dynamic_sizes=[_const(ops, TILE_OUTER * TILE_INNER)],
            )
            ops.append(alloca)
            packs.append((k, packed, alloca.memref))
            transposed = packed if transposed is None else _op(ops, arith.OrIOp, transposed, packed)
        assert transposed is not None
        lo, hi = (begin, end) if t == 0 else (c0, sizes[t])
        # A whole extent of 0 would be a step of 0: the loop runs no iteration
        # then, but a step of at least 1 keeps the loop well-formed.
        whole_t = _op(ops, arith.MaxSIOp, _op(ops, arith.SubiOp, hi, lo), c1)
        whole_u = _op(ops, arith.MaxSIOp, sizes[t + 1], c1)
        tile_t = _op(ops, arith.SelectOp, transposed, _const(ops, TILE_OUTER), whole_t)
        tile_u = _op(ops, arith.SelectOp, transposed, inner, whole_u)
        return _Tiling(tile_t, tile_u, inner, packs)


def _pack(
    ops: list[Operation],
    buf: SSAValue,
    packed: SSAValue,
    mem: Mem,
    offset: SSAValue,
    t: int,
    rows: tuple[SSAValue, SSAValue],
    cols: tuple[SSAValue, SSAValue],
    c0: SSAValue,
    c1: SSAValue,
) -> None:
    """`scf.if %packed`: copies the operand's tile into `buf`, row-major. The
    inner loop runs along the operand's contiguous dim (t), so each of its cache
    lines is read whole, at once: nothing has to stay cached between columns,
    which at power-of-two strides (every column in one L1 set) nothing would."""
    ref, s = mem
    (t0, t1), (u0, u1) = rows, cols
    col_blk, row_blk = Block(arg_types=[INDEX]), Block(arg_types=[INDEX])
    j, i = col_blk.args[0], row_blk.args[0]
    col_ops: list[Operation] = []
    src_col = _op(col_ops, arith.AddiOp, offset, _op(col_ops, arith.MuliOp, j, s[t + 1]))
    dst_col = _op(col_ops, arith.SubiOp, j, u0)
    row_ops: list[Operation] = []
    src = _op(row_ops, arith.AddiOp, src_col, i)  # stride 1 along t: that is when it packs
    row = _op(row_ops, arith.SubiOp, i, t0)
    dst = _op(
        row_ops, arith.AddiOp, _op(row_ops, arith.MuliOp, row, _const(row_ops, TILE_INNER)), dst_col
    )
    load = memref.LoadOp.get(ref, [src])
    row_ops += [load, memref.StoreOp.get(load.res, buf, [dst]), scf.YieldOp()]
    row_blk.add_ops(row_ops)
    col_ops += [scf.ForOp(t0, t1, c1, [], row_blk), scf.YieldOp()]
    col_blk.add_ops(col_ops)
    ops.append(scf.IfOp(packed, [], [scf.ForOp(u0, u1, c1, [], col_blk), scf.YieldOp()]))


def _const(ops: list[Operation], value: int) -> SSAValue:
    op = arith.ConstantOp(IntegerAttr(value, INDEX))
    ops.append(op)
    return op.result


def _op(ops: list[Operation], cls: type, *args: SSAValue | str) -> SSAValue:
    op = cls(*args)
    ops.append(op)
    return op.results[0]
