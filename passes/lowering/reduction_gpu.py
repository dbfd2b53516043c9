"""The `nvptx` loop structure of a reduction kernel (`reduction_kernel`):
one warp per row (an index of the kept dims).

Warps grid-stride over the rows; the 32 lanes of a warp stride over the reduced
elements of its row, each keeping partial accumulators, which five butterfly
shuffles (`llvm.nvvm.shfl.sync.bfly`) combine so every lane holds the row's
result. No shared memory and no barrier: the row loop is uniform across a warp
(it depends on the warp index only), so all 32 lanes reach each shuffle. Any 1-D
launch whose block size is a multiple of 32 is correct (the CUDA runtime uses 256).

    scf.for %row = %warp to %rows step %warps {
      %acc = scf.for %r = %lane to %count step 32 iter_args(%a = %init) { ... }
      %o16 = llvm.call_intrinsic "llvm.nvvm.shfl.sync.bfly.f32"(%mask, %acc, 16, 31)
      ... (8, 4, 2, 1) ...
      scf.if %lane == 0 { store the row outputs }
      scf.for %r = %lane to %count step 32 { store the full outputs }
    }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fusec.dialects.inference import BOOL, F32, F64
from fusec.passes.lowering.emitter import INDEX, LoopEmitter
from xdsl.dialects import arith, llvm, scf
from xdsl.dialects.builtin import Float32Type, IntegerType
from xdsl.ir import Block, SSAValue

I32, I64 = IntegerType(32), IntegerType(64)
WARP = 32

Step = Callable[[LoopEmitter, Sequence[SSAValue], SSAValue, int], list[SSAValue]]


def _sreg(e: LoopEmitter, reg: str) -> SSAValue:
    v = e.add(llvm.CallIntrinsicOp(f"llvm.nvvm.read.ptx.sreg.{reg}", [], [I32]))
    return e.add(arith.IndexCastOp(e.add(arith.ExtUIOp(v, I64)), INDEX))


def _offsets(
    e: LoopEmitter,
    flat: SSAValue,
    dims: Sequence[int],
    sizes: Sequence[SSAValue],
    offs: Sequence[SSAValue],
    step: Step,
) -> list[SSAValue]:
    """`offs` advanced to the row-major index `flat` over `dims`."""
    rest = flat
    ivs: dict[int, SSAValue] = {}
    for d in reversed(dims[1:]):
        ivs[d] = e.add(arith.RemUIOp(rest, sizes[d]))
        rest = e.add(arith.DivUIOp(rest, sizes[d]))
    if dims:
        ivs[dims[0]] = rest
    out = list(offs)
    for d in dims:
        out = step(e, out, ivs[d], d)
    return out


def shuffle_xor(e: LoopEmitter, v: SSAValue, lane_mask: int) -> SSAValue:
    """`v` from the lane `lane ^ lane_mask` (64-bit values as two 32-bit halves)."""
    mask = e.const(-1, I32)
    delta = e.const(lane_mask, I32)
    clamp = e.const(WARP - 1, I32)
    t = v.type

    def shfl32(x: SSAValue, suffix: str, rt: IntegerType | Float32Type) -> SSAValue:
        name = f"llvm.nvvm.shfl.sync.bfly.{suffix}"
        return e.add(llvm.CallIntrinsicOp(name, [mask, x, delta, clamp], [rt]))

    if t == F32:
        return shfl32(v, "f32", F32)
    if t in (F64, I64):
        bits = e.add(arith.BitcastOp(v, I64)) if t == F64 else v
        lo = e.add(arith.TruncIOp(bits, I32))
        hi = e.add(arith.TruncIOp(e.add(arith.ShRUIOp(bits, e.const(32, I64))), I32))
        lo, hi = shfl32(lo, "i32", I32), shfl32(hi, "i32", I32)
        wide = e.add(
            arith.OrIOp(
                e.add(arith.ExtUIOp(lo, I64)),
                e.add(arith.ShLIOp(e.add(arith.ExtUIOp(hi, I64)), e.const(32, I64))),
            )
        )
        return e.add(arith.BitcastOp(wide, F64)) if t == F64 else wide
    assert isinstance(t, IntegerType)
    if t == I32:
        return shfl32(v, "i32", I32)
    widened = e.add(arith.ExtUIOp(v, I32) if t == BOOL else arith.ExtSIOp(v, I32))
    return e.add(arith.TruncIOp(shfl32(widened, "i32", I32), t))


class WarpRows:
    """The GPU nest: rows over warps, reduced elements over lanes (module docstring)."""

    def __init__(
        self,
        e: LoopEmitter,
        sizes: Sequence[SSAValue],
        kept: Sequence[int],
        rdims: Sequence[int],
        offs: Sequence[SSAValue],
        c0: SSAValue,
        c1: SSAValue,
        step: Step,
    ):
        self.sizes, self.rdims, self.step = sizes, rdims, step
        tid, ntid = _sreg(e, "tid.x"), _sreg(e, "ntid.x")
        ctaid, nctaid = _sreg(e, "ctaid.x"), _sreg(e, "nctaid.x")
        warp_size = e.const(WARP, INDEX)
        gtid = e.add(arith.AddiOp(e.add(arith.MuliOp(ctaid, ntid)), tid))
        warp = e.add(arith.DivUIOp(gtid, warp_size))
        self.lane = e.add(arith.RemUIOp(gtid, warp_size))
        warps = e.add(arith.DivUIOp(e.add(arith.MuliOp(ntid, nctaid)), warp_size))
        rows = c1
        for d in kept:
            rows = e.add(arith.MuliOp(rows, sizes[d]))
        count = c1
        for d in rdims:
            count = e.add(arith.MuliOp(count, sizes[d]))
        self.count, self.warp_size, self.c0 = count, warp_size, c0
        self.blk = Block(arg_types=[INDEX])
        e.ops.append(scf.ForOp(warp, rows, warps, [], self.blk))
        self.body = LoopEmitter([])
        self.row_offsets = _offsets(self.body, self.blk.args[0], kept, sizes, offs, step)

    def _lanes(
        self,
        em: LoopEmitter,
        offs: Sequence[SSAValue],
        accs: Sequence[SSAValue],
        body_fn: Callable[[LoopEmitter, list[SSAValue], list[SSAValue]], list[SSAValue]],
    ) -> list[SSAValue]:
        blk = Block(arg_types=[INDEX] + [v.type for v in accs])
        inner = LoopEmitter([])
        full = _offsets(inner, blk.args[0], self.rdims, self.sizes, offs, self.step)
        new = body_fn(inner, full, list(blk.args[1:]))
        inner.add(scf.YieldOp(*new))
        blk.add_ops(inner.ops)
        loop = scf.ForOp(self.lane, self.count, self.warp_size, list(accs), blk)
        em.ops.append(loop)
        return list(loop.results)

    def reduce(
        self,
        em: LoopEmitter,
        offs: Sequence[SSAValue],
        accs: Sequence[SSAValue],
        body_fn: Callable[[LoopEmitter, list[SSAValue], list[SSAValue]], list[SSAValue]],
        combine: Callable[[LoopEmitter, list[SSAValue], list[SSAValue]], list[SSAValue]],
    ) -> list[SSAValue]:
        """Each lane's partial accumulators, then the butterfly: all lanes get the row's."""
        partial = self._lanes(em, offs, accs, body_fn)
        k = WARP // 2
        while k:
            other = [shuffle_xor(em, v, k) for v in partial]
            partial = combine(em, partial, other)
            k //= 2
        return partial

    def full(
        self,
        em: LoopEmitter,
        offs: Sequence[SSAValue],
        body_fn: Callable[[LoopEmitter, list[SSAValue]], None],
    ) -> None:
        def each(ie: LoopEmitter, o: list[SSAValue], _a: list[SSAValue]) -> list[SSAValue]:
            body_fn(ie, o)
            return []

        self._lanes(em, offs, [], each)

    def first_lane(self, em: LoopEmitter) -> tuple[LoopEmitter, Callable[[], None]]:
        """An emitter whose ops run on lane 0 only (the row outputs' stores)."""
        is_first = em.add(arith.CmpiOp(self.lane, self.c0, "eq"))
        then = Block()
        em.ops.append(scf.IfOp(is_first, [], [then]))
        inner = LoopEmitter([])

        def close() -> None:
            inner.add(scf.YieldOp())
            then.add_ops(inner.ops)

        return inner, close

    def close(self) -> None:
        self.body.add(scf.YieldOp())
        self.blk.add_ops(self.body.ops)
