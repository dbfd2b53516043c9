"""The CPU loop nest of a pointwise kernel (`lower-group-to-loops`, target cpu):
loops over [begin, end) x sizes[1:], and a tiled version of it for launches
where an operand would make the inner loop slow.

The host orders the index space so the dim most tensors are contiguous along is
innermost (`fusec.runtime.cpu._memory_order`), and LLVM vectorizes the inner
loop for the strides it finds there to be 1 (or the constant 0 of a dim the
operand's type says is 1). Two layouts defeat that:

- a transposed operand reads across its memory on the inner loop: a cache line
  (for large tensors, a page) per element, and at power-of-two strides all those
  lines fall in one L1 set, so none survives until the next row wants it. The
  host puts its contiguous dim second innermost;
- an expanded operand (a runtime stride of 0 on the inner dim) makes LLVM's
  stride-1 versioning fail, so the whole loop runs scalar.

When some operand is either, on this launch, the kernel runs the tiled nest:
tiles of TILE_OUTER x TILE_INNER over the two innermost dims, where each operand
that may be either (its inner stride is a runtime value) is first copied into a
stack buffer: a transposed one column by column (each of its cache lines read
whole, at once), an expanded one by filling rows, any other row by row. The
body then reads every such operand from its buffer at constant strides
(TILE_INNER, 1), so its inner loop vectorizes whatever the layout:

    %tiled = (%as0 == 1 and %as1 > 1) or (%as1 == 0 and %n1 > 1) or ...
    scf.if %tiled {
      scf.for %t0 = %lo to %hi step 64 {                  // dim rank-2, by tiles
        scf.for %u0 = %c0 to %n1 step 128 {               // dim rank-1, by tiles
          ... %abuf[(%i - %t0) * 128 + %j - %u0] = %a[%i * %as0 + %j * %as1] ...
          scf.for %i = %t0 to %t1 { scf.for %j = %u0 to %u1 {
            ... memref.load %abuf[(%i - %t0) * 128 + %j - %u0] ...
          } }
        }
      }
    } else {
      the plain nest
    }

The tiled version multiplies the kernel's compile time, so it is a variant of
its own (`tile`, `fusec.codegen.kernel.TILED_CPU`) that the runtime builds only when a
launch has such a layout (`fusec.runtime.cpu`); kernels none of whose operands
has a runtime inner stride have the plain nest only even then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, memref, scf, vector
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    VectorType,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue

INDEX = IndexType()

TILE_OUTER = 64
"""Rows of a tile (dim rank-2, along which a transposed operand is contiguous):
four 64-byte cache lines of f32, read whole for each column of the tile, by a
loop of constant trip count (vector loads). Measured (relu(a.t() + b), one
thread) against 16 and 32: as fast at 2^16 and 2^24, 1.5x faster at 2^20."""
TILE_INNER = 128
"""Columns of a tile (dim rank-1, the output's contiguous dim): long rows for
the vectorized body and the other tensors' prefetchers; a buffer is
TILE_OUTER * TILE_INNER elements (32 KiB of f32, on the stack)."""

MAX_LANES = 8
"""The widest block a transposed operand is copied by (8 x 8: one AVX2
register per f32 row, three rounds of shuffles). 16 x 16 f32 blocks in AVX-512
registers measured no faster (relu(a.t() + b), one thread, 2^16/2^20/2^24:
34/1635/71312 us against 35/1685/72603 us at 8 x 8, within noise) and double
the shuffles LLVM and xDSL compile per operand (the LSTM tail's tiled variant:
2.9 s against 1.5 s)."""

STACK_LIMIT = 1 << 20
"""Bytes of tile buffers a kernel may put on its stack (worker threads have 8 MiB
stacks): a kernel whose operands would need more gets no tiled nest."""

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
    tile: bool = False,
    vector_bits: int = 256,
) -> list[Operation]:
    """The kernel's loops over [begin, end) x sizes[1:] (`mems[:n_operands]`
    are read, the rest written); each tensor's offset is accumulated per depth
    so the innermost loop does one multiply-add per tensor, and none on dims
    where its stride is the constant 0 (the load is hoisted there). With
    `tile`, the tiled version too, behind its `scf.if`, transposing blocks
    in `vector_bits` registers.

    (The plain nest's inner loop is not versioned for unit strides here: LLVM's
    loop vectorizer versions symbolic strides itself.)"""
    pre: list[Operation] = []
    plain = _Nest(begin, end, sizes, mems, c0, c1).plain(emit_body)
    if not tile or len(sizes) < 2:
        return [plain]
    tiling = _Tiling.make(pre, sizes, mems[:n_operands], c0, c1)
    if tiling is None:
        return [plain]
    tiled = _Nest(begin, end, sizes, mems, c0, c1).tiled(tiling, emit_body, vector_bits)
    return [*pre, scf.IfOp(tiling.tiled, [], [tiled, scf.YieldOp()], [plain, scf.YieldOp()])]


@dataclass
class _Tiling:
    """Whether this launch runs the tiled nest, and per operand that the tiled
    nest reads from a buffer: (operand, transposed, broadcast, buffer), the
    two conditions i1 values (transposed None where it cannot be)."""

    tiled: SSAValue
    packs: list[tuple[int, SSAValue | None, SSAValue, SSAValue]]
    tile_t: SSAValue
    tile_u: SSAValue
    """The constants TILE_OUTER and TILE_INNER."""

    @staticmethod
    def make(
        ops: list[Operation],
        sizes: Sequence[SSAValue],
        operands: Sequence[Mem],
        c0: SSAValue,
        c1: SSAValue,
    ) -> _Tiling | None:
        """Worked out once per launch, in the entry block (so the buffers are
        fixed stack slots). None when no operand has a runtime stride on dim
        rank-1 (each has the constant 0 there: hoisted loads)."""
        t = len(sizes) - 2
        candidates = [k for k, (_, s) in enumerate(operands) if s[t + 1] is not c0]
        stack = sum(_element_bytes(operands[k][0]) for k in candidates) * TILE_OUTER * TILE_INNER
        if not candidates or stack > STACK_LIMIT:
            return None
        wide = _op(ops, arith.CmpiOp, sizes[t + 1], c1, "sgt")
        packs: list[tuple[int, SSAValue | None, SSAValue, SSAValue]] = []
        tiled: SSAValue | None = None
        for k in candidates:
            ref, s = operands[k]
            zero = _op(ops, arith.CmpiOp, s[t + 1], c0, "eq")
            broadcast = packed = _op(ops, arith.AndIOp, zero, wide)
            transposed = None
            if s[t] is not c0:
                unit = _op(ops, arith.CmpiOp, s[t], c1, "eq")
                strided = _op(ops, arith.CmpiOp, s[t + 1], c1, "sgt")
                transposed = _op(ops, arith.AndIOp, unit, strided)
                packed = _op(ops, arith.OrIOp, transposed, broadcast)
            ref_t = ref.type
            assert isinstance(ref_t, MemRefType)
            alloca = memref.AllocaOp.get(
                ref_t.get_element_type(),
                alignment=64,
                shape=[DYNAMIC_INDEX],
                dynamic_sizes=[_const(ops, TILE_OUTER * TILE_INNER)],
            )
            ops.append(alloca)
            packs.append((k, transposed, broadcast, alloca.memref))
            tiled = packed if tiled is None else _op(ops, arith.OrIOp, tiled, packed)
        assert tiled is not None
        return _Tiling(tiled, packs, _const(ops, TILE_OUTER), _const(ops, TILE_INNER))


@dataclass
class _Nest:
    """Builds one loop nest: `loop` opens a level, `point_loop` one that moves
    every tensor's offset along a dim."""

    begin: SSAValue
    end: SSAValue
    sizes: Sequence[SSAValue]
    mems: Sequence[Mem]
    c0: SSAValue
    c1: SSAValue

    def __post_init__(self) -> None:
        self.refs = [ref for ref, _ in self.mems]
        self.strides = [list(s) for _, s in self.mems]
        self.offsets: list[SSAValue] = [self.c0 for _ in self.mems]
        self.loops: list[tuple[scf.ForOp, list[Operation]]] = []

    def loop(self, lo: SSAValue, hi: SSAValue, step: SSAValue) -> tuple[SSAValue, list[Operation]]:
        blk = Block(arg_types=[INDEX])
        ops: list[Operation] = []
        self.loops.append((scf.ForOp(lo, hi, step, [], blk), ops))
        return blk.args[0], ops

    def extent(self, d: int) -> tuple[SSAValue, SSAValue]:
        """Dim d's range: [begin, end) for dim 0 (the host's work split), else [0, n)."""
        return (self.begin, self.end) if d == 0 else (self.c0, self.sizes[d])

    def point_loop(self, d: int, lo: SSAValue, hi: SSAValue) -> None:
        iv, ops = self.loop(lo, hi, self.c1)
        for k, st in enumerate(self.strides):
            if st[d] is not self.c0:
                step = _op(ops, arith.MuliOp, iv, st[d])
                self.offsets[k] = _op(ops, arith.AddiOp, self.offsets[k], step)

    def plain(self, emit_body: BodyEmitter) -> scf.ForOp:
        for d in range(len(self.sizes)):
            self.point_loop(d, *self.extent(d))
        return self.close(emit_body)

    def tiled(self, tiling: _Tiling, emit_body: BodyEmitter, vector_bits: int) -> scf.ForOp:
        t = len(self.sizes) - 2
        for d in range(t):
            self.point_loop(d, *self.extent(d))
        lo, hi = self.extent(t)
        tile_t, tile_u = tiling.tile_t, tiling.tile_u
        t0, ops = self.loop(lo, hi, tile_t)
        t1 = _op(ops, arith.MinSIOp, _op(ops, arith.AddiOp, t0, tile_t), hi)
        u0, ops = self.loop(self.c0, self.sizes[t + 1], tile_u)
        u1 = _op(ops, arith.MinSIOp, _op(ops, arith.AddiOp, u0, tile_u), self.sizes[t + 1])
        # Element (i, j) of the tile sits at (i - t0) * TILE_INNER + (j - u0) of a
        # buffer: offset -(t0 * TILE_INNER + u0) with strides (TILE_INNER, 1).
        start = _op(ops, arith.AddiOp, _op(ops, arith.MuliOp, t0, tile_u), u0)
        start = _op(ops, arith.SubiOp, self.c0, start)
        for k, transposed, broadcast, buf in tiling.packs:
            pack = _Pack(
                self.mems[k], self.offsets[k], buf, t, (t0, t1), (u0, u1), self.c0, self.c1,
                vector_bits,
            )  # fmt: skip
            ops.append(pack.fill(transposed, broadcast))
            self.refs[k], self.offsets[k] = buf, start
            self.strides[k][t], self.strides[k][t + 1] = tile_u, self.c1
        self.point_loop(t, t0, t1)
        self.point_loop(t + 1, u0, u1)
        return self.close(emit_body)

    def close(self, emit_body: BodyEmitter) -> scf.ForOp:
        emit_body(self.loops[-1][1], self.refs, self.offsets)
        for (_, ops), nxt in zip(self.loops, self.loops[1:], strict=False):
            ops.extend([nxt[0], scf.YieldOp()])
        self.loops[-1][1].append(scf.YieldOp())
        for for_op, ops in self.loops:
            for_op.body.block.add_ops(ops)
        return self.loops[0][0]


@dataclass
class _Pack:
    """Copies one operand's tile (rows [t0, t1) of dim t, columns [u0, u1) of
    dim t + 1) into its buffer, row-major with rows of TILE_INNER."""

    mem: Mem
    offset: SSAValue
    buf: SSAValue
    t: int
    rows: tuple[SSAValue, SSAValue]
    cols: tuple[SSAValue, SSAValue]
    c0: SSAValue
    c1: SSAValue
    vector_bits: int
    """The width of the registers blocks are transposed in."""

    def fill(self, transposed: SSAValue | None, broadcast: SSAValue) -> scf.IfOp:
        """The copy that suits this launch's layout:

        - transposed: by `lanes` x `lanes` blocks transposed in registers
          (`transpose_blocks`), each of its vector loads along the operand's
          contiguous dim and each vector store along a buffer row; the tile's
          edges that are not whole blocks column by column;
        - broadcast (a runtime 0 stride along the row): each row's one element
          loaded once and stored along the row (a vectorized fill);
        - otherwise row by row (a vectorized copy where the row is contiguous).
        """
        t0, t1 = self.rows
        u0, u1 = self.cols
        by_rows = [self.loop(t0, t1, self.row), scf.YieldOp()]
        if transposed is not None:
            by_columns = [*self.transposed_tile(), scf.YieldOp()]
            by_rows = [scf.IfOp(transposed, [], by_columns, by_rows), scf.YieldOp()]
        by_fill = [self.loop(t0, t1, self.fill_row), scf.YieldOp()]
        return scf.IfOp(broadcast, [], by_fill, by_rows)

    def loop(
        self,
        lo: SSAValue,
        hi: SSAValue,
        body: Callable[[SSAValue, list[Operation]], None],
        step: SSAValue | None = None,
    ) -> scf.ForOp:
        blk = Block(arg_types=[INDEX])
        ops: list[Operation] = []
        body(blk.args[0], ops)
        blk.add_ops([*ops, scf.YieldOp()])
        return scf.ForOp(lo, hi, self.c1 if step is None else step, [], blk)

    def src(self, ops: list[Operation], base: SSAValue, iv: SSAValue, d: int) -> SSAValue:
        stride = self.mem[1][d]
        if stride is self.c0:
            return base
        return _op(ops, arith.AddiOp, base, _op(ops, arith.MuliOp, iv, stride))

    def slot(self, ops: list[Operation], i: SSAValue, j: SSAValue) -> SSAValue:
        row = _op(ops, arith.SubiOp, i, self.rows[0])
        row = _op(ops, arith.MuliOp, row, _const(ops, TILE_INNER))
        return _op(ops, arith.AddiOp, row, _op(ops, arith.SubiOp, j, self.cols[0]))

    def copy(self, ops: list[Operation], src: SSAValue, i: SSAValue, j: SSAValue) -> None:
        load = memref.LoadOp.get(self.mem[0], [src])
        ops += [load, memref.StoreOp.get(load.res, self.buf, [self.slot(ops, i, j)])]

    def transposed_tile(self) -> list[Operation]:
        """The tile of a transposed operand (stride 1 along t): whole
        `lanes` x `lanes` blocks through registers, then the rows and the
        columns left over (fewer than `lanes` each) element by element. An
        element type with no block transpose (bool, or vectors too short to
        pay) is copied element by element throughout."""
        ops: list[Operation] = []
        (t0, t1), (u0, u1) = self.rows, self.cols
        n = transpose_lanes(self.mem[0], self.vector_bits)
        if n == 0:
            ops.append(self.columns((t0, t1), (u0, u1)))
            return ops
        lanes = _const(ops, n)
        # The block grid's ends: t1 - (t1 - t0) % n, and the same along u.
        tf = _op(
            ops, arith.SubiOp, t1, _op(ops, arith.RemUIOp, _op(ops, arith.SubiOp, t1, t0), lanes)
        )
        uf = _op(
            ops, arith.SubiOp, u1, _op(ops, arith.RemUIOp, _op(ops, arith.SubiOp, u1, u0), lanes)
        )

        def block_column(jb: SSAValue, o: list[Operation]) -> None:
            o.append(self.loop(t0, tf, lambda ib, b: self.block(b, ib, jb, n), lanes))

        ops.append(self.loop(u0, uf, block_column, lanes))
        ops.append(self.columns((tf, t1), (u0, uf)))
        ops.append(self.columns((t0, t1), (uf, u1)))
        return ops

    def block(self, ops: list[Operation], ib: SSAValue, jb: SSAValue, n: int) -> None:
        """Rows [ib, ib + n) x columns [jb, jb + n) of the tile: vector c is
        column jb + c (n rows, contiguous in the operand), and after the
        transpose vector r is row ib + r, stored whole into the buffer."""
        ref = self.mem[0]
        ref_t = ref.type
        assert isinstance(ref_t, MemRefType)
        vec_t = VectorType(ref_t.get_element_type(), [n])
        base = _op(ops, arith.AddiOp, self.src(ops, self.offset, jb, self.t + 1), ib)
        stride = self.mem[1][self.t + 1]
        vectors: list[SSAValue] = []
        at = base
        for c in range(n):
            if c:
                at = _op(ops, arith.AddiOp, at, stride)
            load = vector.LoadOp(ref, [at], vec_t)
            ops.append(load)
            vectors.append(load.result)
        rows = transpose_vectors(ops, vectors)
        row_at = self.slot(ops, ib, jb)
        width = _const(ops, TILE_INNER)
        for r, v in enumerate(rows):
            if r:
                row_at = _op(ops, arith.AddiOp, row_at, width)
            ops.append(vector.StoreOp(v, self.buf, [row_at]))

    def columns(
        self, rows: tuple[SSAValue, SSAValue], cols: tuple[SSAValue, SSAValue]
    ) -> scf.ForOp:
        """Rows x cols of a transposed operand element by element, column by
        column (the inner loop along its contiguous dim)."""

        def column(j: SSAValue, ops: list[Operation]) -> None:
            base = self.src(ops, self.offset, j, self.t + 1)
            ops.append(
                self.loop(*rows, lambda i, o: self.copy(o, _op(o, arith.AddiOp, base, i), i, j))
            )

        return self.loop(*cols, column)

    def row(self, i: SSAValue, ops: list[Operation]) -> None:
        base = self.src(ops, self.offset, i, self.t)
        ops.append(
            self.loop(*self.cols, lambda j, o: self.copy(o, self.src(o, base, j, self.t + 1), i, j))
        )

    def fill_row(self, i: SSAValue, ops: list[Operation]) -> None:
        load = memref.LoadOp.get(self.mem[0], [self.src(ops, self.offset, i, self.t)])
        ops.append(load)

        def store(j: SSAValue, o: list[Operation]) -> None:
            o.append(memref.StoreOp.get(load.res, self.buf, [self.slot(o, i, j)]))

        ops.append(self.loop(*self.cols, store))


def transpose_lanes(ref: SSAValue, vector_bits: int) -> int:
    """The side of the square blocks a transposed operand of flat memref `ref`
    is copied by: as many elements as a `vector_bits` register holds, at most
    `MAX_LANES`; 0 for bool (a byte in memory, an i1 in registers) and for
    fewer than 4, where the shuffles cost more than the scalar copy they
    replace."""
    t = ref.type
    assert isinstance(t, MemRefType)
    width = getattr(t.get_element_type(), "bitwidth", 1)
    if width < 8:
        return 0
    lanes = min(MAX_LANES, vector_bits // width)
    return lanes if lanes >= 4 else 0


def transpose_vectors(ops: list[Operation], rows: Sequence[SSAValue]) -> list[SSAValue]:
    """The transpose of the n x n matrix whose rows are the n vectors `rows`
    (n a power of two), by log2(n) rounds of n two-input shuffles. The round
    of distance h swaps bit h of the row index with bit h of the column index
    where the two differ, so all rounds together swap row and column:

        new[i][e]     = rows[i][e]     if e & h == 0 else rows[i + h][e - h]
        new[i + h][e] = rows[i][e + h] if e & h == 0 else rows[i + h][e]

    (for each i with i & h == 0; an index >= n in a mask picks from the second
    operand). At n = 8 these are AVX2's unpack/shuffle/permute network."""
    n = len(rows)
    out = list(rows)
    vec_t = out[0].type
    assert isinstance(vec_t, VectorType)
    h = 1
    while h < n:
        low = [e if e & h == 0 else n + e - h for e in range(n)]
        high = [e + h if e & h == 0 else n + e for e in range(n)]
        nxt = list(out)
        for i in range(n):
            if i & h:
                continue
            for dst, mask in ((i, low), (i + h, high)):
                shuffle = vector.ShuffleOp(
                    out[i], out[i + h], DenseArrayBase.from_list(i64, mask), result_type=vec_t
                )
                ops.append(shuffle)
                nxt[dst] = shuffle.result
        out = nxt
        h *= 2
    return out


def _element_bytes(ref: SSAValue) -> int:
    """Bytes per element of a flat memref in memory (bool: a byte)."""
    t = ref.type
    assert isinstance(t, MemRefType)
    width = getattr(t.get_element_type(), "bitwidth", 8)
    return max(1, width // 8)


def _const(ops: list[Operation], value: int) -> SSAValue:
    op = arith.ConstantOp(IntegerAttr(value, INDEX))
    ops.append(op)
    return op.result


def _op(ops: list[Operation], cls: type, *args: SSAValue | str) -> SSAValue:
    op = cls(*args)
    ops.append(op)
    return op.results[0]
