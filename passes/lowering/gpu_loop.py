"""The loops of a pointwise kernel on a GPU (`lower-group-to-loops{target=nvptx}`).

A grid-stride loop over the flattened output index space, in three versions
chosen at the kernel's entry (every test reads uniform arguments, so a warp
never diverges on them):

    scf.if %fits_i32 {                 // numel and every offset < 2^30
      scf.if %lanes_fit {              // see `_lanes_fit`
        scf.for %v = %start to %numel_over_4 step %step : i32 {
          ... 4 consecutive elements (2 of 8-byte types): all loads (lane 0's
              marked aligned to the vector, so LLVM merges them into one
              ld.global.v4), the 4 bodies, all stores (one st.global.v4)
        }
      } else {
        scf.for %i = %start to %numel step %step : i32 { ... one element ... }
      }
    } else {
      scf.for %i = %start to %numel step %step { ... 64-bit index math ... }
    }
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fusec.passes.lowering.cpu_loop_nest import _element_bytes
from fusec.passes.lowering.emitter import INDEX, LoopEmitter
from xdsl.dialects import arith, builtin, llvm, memref, scf
from xdsl.dialects.builtin import IntegerAttr, IntegerType
from xdsl.ir import Block, Operation, SSAValue

Levels = list[tuple[scf.ForOp, list[Operation]]]


NARROW_LIMIT = 1 << 30
"""A GPU kernel's flat index and every element offset below this run its
32-bit loop (`_offsets_fit_i32`); the margin to 2^31 keeps `index + step`
(at most 2^31 - 1 threads in a grid) from wrapping."""


def _offsets_fit_i32(
    e: LoopEmitter,
    numel: SSAValue,
    sizes: Sequence[SSAValue],
    strides: Sequence[Sequence[SSAValue]],
) -> SSAValue:
    """An i1: numel and each memref's largest element offset,
    sum((size_d - 1) * stride_d), are below `NARROW_LIMIT` (strides are
    non-negative: PyTorch has no negative strides; an empty space never launches)."""
    limit = e.const(NARROW_LIMIT, INDEX)
    one = e.const(1, INDEX)
    fits = e.add(arith.CmpiOp(numel, limit, "slt"))
    lasts = [e.add(arith.SubiOp(n, one)) for n in sizes]
    for mem_strides in strides:
        span = e.add(arith.MuliOp(lasts[0], mem_strides[0]))
        for last, st in zip(lasts[1:], mem_strides[1:], strict=True):
            span = e.add(arith.AddiOp(span, e.add(arith.MuliOp(last, st))))
        fits = e.add(arith.AndIOp(fits, e.add(arith.CmpiOp(span, limit, "slt"))))
    return fits


def _index_width(e: LoopEmitter, values: Sequence[SSAValue], narrow: bool) -> list[SSAValue]:
    """`values` (index) as i32 for the narrow loop, as they are otherwise."""
    if not narrow:
        return list(values)
    return [e.add(arith.IndexCastOp(v, IntegerType(32))) for v in values]


def _gpu_loop(
    e: LoopEmitter, total: SSAValue, sizes: Sequence[SSAValue], narrow: bool = False
) -> tuple[list[SSAValue], Levels]:
    """A grid-stride loop over the flattened index, delinearized per iteration.

    The wide loop's index math is 64-bit: the special registers are 32-bit but
    `ctaid * ntid` and the flat index overflow 32 bits on large tensors, so
    they are widened (zero-extended: the registers are unsigned) first. The
    narrow loop (`narrow`, run when every offset fits: `_offsets_fit_i32`) does
    it all in i32: a 64-bit multiply or divide is several instructions on a GPU,
    and a kernel over a few operands spends more issue slots on its addresses
    than on its arithmetic."""
    i32, i64 = IntegerType(32), IntegerType(64)
    width = i32 if narrow else INDEX

    def sreg(reg: str) -> SSAValue:
        v = e.add(llvm.CallIntrinsicOp(f"llvm.nvvm.read.ptx.sreg.{reg}", [], [i32]))
        if narrow:
            return v
        return e.add(arith.IndexCastOp(e.add(arith.ExtUIOp(v, i64)), INDEX))

    tid, ntid, ctaid, nctaid = sreg("tid.x"), sreg("ntid.x"), sreg("ctaid.x"), sreg("nctaid.x")
    start = e.add(arith.AddiOp(e.add(arith.MuliOp(ctaid, ntid)), tid))
    step = e.add(arith.MuliOp(ntid, nctaid))
    total, *_ = _index_width(e, [total], narrow)
    sizes = _index_width(e, sizes, narrow)
    # sizes[0] divides nothing: the outermost index is what is left.
    use_magic = narrow and MAGIC_DIVISION
    divisors = [None] + [_magic_divisor(e, n) if use_magic else None for n in sizes[1:]]
    blk = Block(arg_types=[width])
    loop = scf.ForOp(start, total, step, [], blk)
    le = LoopEmitter([])
    rest: SSAValue = blk.args[0]
    ivs: list[SSAValue] = [rest] * len(sizes)
    for d in reversed(range(1, len(sizes))):
        divisor = divisors[d]
        if divisor is None:
            ivs[d] = le.add(arith.RemUIOp(rest, sizes[d]))
            rest = le.add(arith.DivUIOp(rest, sizes[d]))
            continue
        quotient = _magic_quotient(le, rest, *divisor)
        ivs[d] = le.add(arith.SubiOp(rest, le.add(arith.MuliOp(quotient, sizes[d]))))
        rest = quotient
    ivs[0] = rest
    return ivs, [(loop, le.ops)]


MAGIC_DIVISION = True
"""The 32-bit loop divides by a size as a multiply and a shift (`_magic_divisor`)
rather than `div.u32`, which a GPU runs as a dozen instructions."""


def _magic_divisor(e: LoopEmitter, size: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(m, s), both i64, with n / size == (n * m) >> s for every i32 n < 2^31
    and 1 <= size <= 2^30, computed once per thread before the loop:

        l = bit length of size - 1   (so size <= 2^l)
        s = 31 + l,  m = ceil(2^s / size)

    m * size = 2^s + err with err < size <= 2^l, so n * m / 2^s = n / size +
    n * err / (size * 2^s), whose second term is below 1/size: the floor is
    exact (Granlund and Montgomery's round-up method); m < 2^32 + 1, so
    n * m < 2^63. l comes from the exponent of (size - 1) as an f64 (exact)."""
    i64, f64 = IntegerType(64), builtin.Float64Type()
    wide = e.add(arith.ExtUIOp(size, i64))
    below = e.add(arith.SubiOp(wide, e.const(1, i64)))
    bits = e.add(arith.BitcastOp(e.add(arith.SIToFPOp(below, f64)), i64))
    # exponent field - 1022 = floor(log2(x)) + 1 for x >= 1; 0 gives -1022.
    exponent = e.add(arith.SubiOp(e.add(arith.ShRUIOp(bits, e.const(52, i64))), e.const(1022, i64)))
    length = e.add(arith.MaxSIOp(exponent, e.const(0, i64)))
    shift = e.add(arith.AddiOp(length, e.const(31, i64)))
    power = e.add(arith.ShLIOp(e.const(1, i64), shift))
    m = e.add(arith.DivUIOp(e.add(arith.AddiOp(power, below)), wide))
    return m, shift


def _magic_quotient(e: LoopEmitter, n: SSAValue, m: SSAValue, shift: SSAValue) -> SSAValue:
    """n / size for an i32 n < 2^31, from `_magic_divisor`'s (m, s): (n * m) >> s."""
    i64 = IntegerType(64)
    wide = e.add(arith.MuliOp(e.add(arith.ExtUIOp(n, i64)), m))
    return e.add(arith.TruncIOp(e.add(arith.ShRUIOp(wide, shift)), IntegerType(32)))


def _linear_offset(
    ops: list[Operation], ivs: Sequence[SSAValue], strides: Sequence[SSAValue], narrow: bool = False
) -> SSAValue:
    """The element offset sum(iv_d * stride_d) as an index (computed in i32 and
    sign-extended when `narrow`: LLVM folds the extension into the address's
    wide multiply-add)."""
    le = LoopEmitter(ops)
    off = le.add(arith.MuliOp(ivs[0], strides[0]))
    for iv, s in zip(ivs[1:], strides[1:], strict=True):
        off = le.add(arith.AddiOp(off, le.add(arith.MuliOp(iv, s))))
    if narrow:
        off = le.add(arith.IndexCastOp(off, INDEX))
    return off


EmitBody = Callable[[LoopEmitter, Sequence[SSAValue], Sequence[SSAValue]], None]
"""Emits the group's body at one element: (emitter, memrefs, element offsets)."""


def gpu_loops(
    e: LoopEmitter,
    numel: SSAValue,
    sizes: Sequence[SSAValue],
    mems: Sequence[tuple[SSAValue, Sequence[SSAValue]]],
    broadcast_last: Sequence[bool],
    emit_body: EmitBody,
) -> int:
    """Appends to `e` the kernel's loop versions (see the module docstring) and
    returns the lanes of its vector version (1: none). `mems` are the
    (memref, strides) arguments, `broadcast_last[k]` says that memref k's
    innermost stride is statically 0."""
    refs = [ref for ref, _ in mems]

    def element_loop(narrow: bool) -> list[Operation]:
        ve = LoopEmitter([])
        ivs, levels = _gpu_loop(ve, numel, sizes, narrow)
        strides = [_index_width(ve, mem_strides, narrow) for _, mem_strides in mems]
        offsets = [_linear_offset(levels[-1][1], ivs, st, narrow) for st in strides]
        emit_body(LoopEmitter(levels[-1][1], gpu=True), refs, offsets)
        return _closed(ve, levels)

    narrow = element_loop(True)
    lanes = _lanes(refs)
    if lanes > 1:
        ne = LoopEmitter([])
        fit = _lanes_fit(ne, sizes, mems, broadcast_last, lanes)
        vector = _lanes_loop(numel, sizes, mems, broadcast_last, lanes, emit_body)
        ne.add(scf.IfOp(fit, [], vector, narrow))
        narrow = [*ne.ops, scf.YieldOp()]
    fits = _offsets_fit_i32(e, numel, sizes, [st for _, st in mems])
    e.add(scf.IfOp(fits, [], narrow, element_loop(False)))
    return lanes


def _closed(ve: LoopEmitter, levels: Levels) -> list[Operation]:
    """The ops of one version: `ve`'s setup, then the loop with its body."""
    levels[-1][1].append(scf.YieldOp())
    for loop, ops in levels:
        loop.body.block.add_ops(ops)
    return [*ve.ops, levels[0][0], scf.YieldOp()]


VECTOR_BYTES = 16
"""The bytes a thread loads per operand per trip (`ld.global.v4.f32`, 128 bits):
the lanes of a kernel are VECTOR_BYTES over its widest element, at most
`MAX_LANES`."""

MAX_LANES = 4
"""8 lanes (two 128-bit accesses per operand per trip, as Inductor's kernels
make) ran the 2^24 LSTM tail at 121.8 us against 4 lanes' 115.5 on an H200
(benchmarks/results/nvidia-h200.txt)."""


def _lanes(refs: Sequence[SSAValue]) -> int:
    """Consecutive elements a thread takes per trip (1: no lanes version)."""
    if not refs:
        return 1
    return max(1, min(MAX_LANES, VECTOR_BYTES // max(_element_bytes(r) for r in refs)))


def _lanes_fit(
    e: LoopEmitter,
    sizes: Sequence[SSAValue],
    mems: Sequence[tuple[SSAValue, Sequence[SSAValue]]],
    broadcast_last: Sequence[bool],
    lanes: int,
) -> SSAValue:
    """An i1: `lanes` consecutive elements of the innermost dim are one aligned
    vector in every memref that moves along it. The innermost size is a
    multiple of `lanes`; each such memref has innermost stride 1, its other
    strides multiples of `lanes` and its base aligned to `lanes` elements, so
    lane 0's address is always a multiple of the vector's size. (A memref
    broadcast along the innermost dim reads one element for all lanes.)"""
    one = e.const(1, INDEX)
    count = e.const(lanes, INDEX)
    fit = _divisible(e, sizes[-1], count)
    for (ref, strides), bcast in zip(mems, broadcast_last, strict=True):
        if bcast:
            continue
        fit = e.add(arith.AndIOp(fit, e.add(arith.CmpiOp(strides[-1], one, "eq"))))
        for s in strides[:-1]:
            fit = e.add(arith.AndIOp(fit, _divisible(e, s, count)))
        fit = e.add(arith.AndIOp(fit, _aligned(e, ref, lanes * _element_bytes(ref))))
    return fit


def _divisible(e: LoopEmitter, v: SSAValue, by: SSAValue) -> SSAValue:
    """An i1: index `v` is a multiple of `by`."""
    return e.add(arith.CmpiOp(e.add(arith.RemUIOp(v, by)), e.const(0, INDEX), "eq"))


def _aligned(e: LoopEmitter, ref: SSAValue, nbytes: int) -> SSAValue:
    """An i1: `ref`'s address is a multiple of `nbytes`.

    The address as an integer (a `ptrtoint`) counts as capturing the pointer,
    so LLVM no longer proves the kernel only reads it and loads become
    `ld.global` instead of the read-only `ld.global.nc`: on an H200 both ran
    the 2^24 LSTM tail in 114 us (benchmarks/results/nvidia-h200.txt)."""
    address = e.add(memref.ExtractAlignedPointerAsIndexOp.get(ref))
    return _divisible(e, address, e.const(nbytes, INDEX))


def _lanes_loop(
    numel: SSAValue,
    sizes: Sequence[SSAValue],
    mems: Sequence[tuple[SSAValue, Sequence[SSAValue]]],
    broadcast_last: Sequence[bool],
    lanes: int,
    emit_body: EmitBody,
) -> list[Operation]:
    """The 32-bit loop over vectors of `lanes` elements (`_lanes_fit` holds).

    Each trip loads every lane of every operand first, then computes the
    lanes, then stores them, so the lanes of one memref are adjacent accesses
    LLVM's load-store vectorizer merges into one vector access (lane 0's
    `alignment` attribute tells it the vector is aligned)."""
    ve = LoopEmitter([])
    count = ve.const(lanes, INDEX)
    vec_sizes = [*sizes[:-1], ve.add(arith.DivUIOp(sizes[-1], count))]
    ivs, levels = _gpu_loop(ve, ve.add(arith.DivUIOp(numel, count)), vec_sizes, narrow=True)
    refs = [ref for ref, _ in mems]
    strides = [_index_width(ve, mem_strides, True) for _, mem_strides in mems]
    index = LoopEmitter(levels[-1][1])
    ivs[-1] = index.add(arith.MuliOp(ivs[-1], index.const(lanes, IntegerType(32))))
    bases = [_linear_offset(index.ops, ivs, st, narrow=True) for st in strides]
    loads: list[Operation] = []
    compute: list[Operation] = []
    stores: list[Operation] = []
    for lane in range(lanes):
        step = index.const(lane, INDEX) if lane else None
        offsets = [
            base if bcast or step is None else index.add(arith.AddiOp(base, step))
            for base, bcast in zip(bases, broadcast_last, strict=True)
        ]
        ops: list[Operation] = []
        emit_body(LoopEmitter(ops, gpu=True), refs, offsets)
        for op in ops:
            if not isinstance(op, memref.LoadOp | memref.StoreOp):
                compute.append(op)
                continue
            k = refs.index(op.memref)
            if lane == 0 and not broadcast_last[k]:
                op.attributes["alignment"] = IntegerAttr(lanes * _element_bytes(op.memref), 64)
            (loads if isinstance(op, memref.LoadOp) else stores).append(op)
    index.ops.extend([*loads, *compute, *stores])
    return _closed(ve, levels)
