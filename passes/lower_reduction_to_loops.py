"""The loop level of a `fusion.group` that holds reductions (`lower-group-to-loops`
calls `build_reduction_kernel` for those).

All reductions of such a group reduce the same dims of one index space (`fuse`
checks it), so a value of the group is either *full* (it varies along the reduced
dims) or a *row* value (size 1 on every reduced dim: reduction results, and what
is computed from them and from row-shaped inputs). The kernel loops over the kept
dims (the outermost one split over threads by [begin, end)); per kept index it runs
one inner loop nest over the reduced dims per *stage* (reductions whose inputs need
no other pending reduction share a stage), computing the prologue of those
reductions and carrying their accumulators as loop-carried values, then computes
the row values now available, and at the end one more nest writes the full
outputs (the epilogue reads the row values, broadcast back by construction):

    %m = aten.amax %x dims = [1] keepdim = true ; %e = aten.exp (%x - %m)
    %s = aten.sum %e dims = [1] keepdim = true ; %r = aten.div %e, %s
->
    scf.for %i0 = %begin to %end {
      %m = scf.for %j = 0 to %n1 iter_args(%a = -inf) { ... arith.maximumf ... }
      %s = scf.for %j = 0 to %n1 iter_args(%a = 0.0) { ... math.exp ... arith.addf ... }
      scf.for %j = 0 to %n1 { ... arith.divf ... memref.store ... }
    }

Accumulators are f32 for f16/bf16 (as PyTorch's kernels), i64 for integer sums;
`var`/`std` use Welford's update (one pass, no cancellation). On `nvptx` each
kept index is one block: its threads stride over the reduced index space, and the
partial accumulators are combined with warp shuffles and one shared-memory step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fusec.dialects import aten
from fusec.dialects.inference import BOOL
from fusec.passes.loop_lowering import (
    _VIEW_OPS,
    DYN,
    KernelSignature,
    OutputSpec,
    _check_dtype,
    _Emitter,
    _exit_outputs,
    _maximum,
    _plan,
    _storage_type,
    compute_type,
    dtype_name,
    emit_pointwise,
    finish_kernel,
    is_floating,
    kernel_entry,
    round_result,
    storage_type,
)
from fusec.passes.lower_reduction_gpu import WarpRows
from fusec.passes.reduction_domain import Domain, is_reduction, keeps_dims
from fusec.passes.reduction_domain import body_domain as _body_domain
from xdsl.dialects import arith, func, llvm, memref, scf
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    IndexType,
    IntegerType,
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

INDEX = IndexType()
BLOCK = 8
"""Kept columns that share a reduction nest when the innermost dim is kept."""
MAX_VERSIONED_LOADS = 256
"""Tensors times `WIDE_BLOCK` lanes above which a column reduction gets no
contiguous-columns version (compile time)."""
WIDE_BLOCK = 16
"""The same when those columns are contiguous in every tensor: vector loads, and
more accumulators in flight. (32 measured about 20% faster on a layer norm's
weight gradient, but the lanes are copies of the body: compile time grew more.)"""

_KINDS = {
    "aten.sum": "sum",
    "aten.mean": "mean",
    "aten.amax": "max",
    "aten.amin": "min",
    "aten.var": "var",
    "aten.std": "std",
}


def body_domain(body: Block) -> Domain | None:
    """The one domain of the group's reductions, all of them keeping their dims."""
    dom = _body_domain(body)
    for op in body.ops:
        if is_reduction(op) and not keeps_dims(op):
            raise DiagnosticException(
                f"lower-group-to-loops: {op.name} inside a group must keep its dims "
                "(decompose-reductions makes them so)"
            )
    return dom


# ----------------------------------------------------------------- accumulators


def _acc_type(op: Operation) -> Attribute:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return compute_type(t.get_element_type())


def _extreme(e: _Emitter, t: Attribute, is_max: bool) -> SSAValue:
    """The identity of max (min): -inf (+inf), or the integer type's bound."""
    if is_floating(t):
        return e.const(-math.inf if is_max else math.inf, t)
    if t == BOOL:
        return e.const(0 if is_max else 1, t)
    assert isinstance(t, IntegerType)
    bits = t.width.data
    return e.const(-(2 ** (bits - 1)) if is_max else 2 ** (bits - 1) - 1, t)


def _nan_flag(e: _Emitter, kind: str, t: Attribute) -> bool:
    """A CPU float max/min also or-reduces "x is NaN". `llvm.maximum` propagates
    NaN by itself, but the flag is a second use of x, and that keeps LLVM from
    rewriting `maximum(acc, select(c, -inf, v))` (a masked row: `masked_fill(m,
    -inf)` before a softmax) into `select(c, acc, maximum(acc, v))`, which it
    does not vectorize: the max of a masked softmax ran scalar, 6x slower."""
    return kind in ("max", "min") and is_floating(t) and not e.gpu


def _init(e: _Emitter, kind: str, t: Attribute) -> list[SSAValue]:
    if kind in ("max", "min"):
        extreme = _extreme(e, t, kind == "max")
        return [extreme, e.const(0, BOOL)] if _nan_flag(e, kind, t) else [extreme]
    if kind in ("var", "std"):
        return [e.const(0.0, t), e.const(0.0, t), e.const(0.0, t)]  # count, mean, M2
    return [e.const(0, t)]


def _update(e: _Emitter, kind: str, accs: list[SSAValue], x: SSAValue) -> list[SSAValue]:
    t = accs[0].type
    x = e.cast(x, t)
    if kind in ("max", "min") and is_floating(t):
        # `llvm.maximum`: NaN-propagating like `torch.amax`, and a reduction LLVM
        # vectorizes (the compare-and-select form of `arith.maximumf` is not).
        name = f"llvm.{'maximum' if kind == 'max' else 'minimum'}.{t}"
        acc = e.add(llvm.CallIntrinsicOp(name, [accs[0], x], [t]))
        if len(accs) == 1:
            return [acc]
        return [acc, e.add(arith.OrIOp(accs[1], e.add(arith.CmpfOp(x, x, "uno"))))]
    if kind in ("max", "min"):
        return [_maximum(e, accs[0], x, kind == "max")]
    if kind in ("var", "std"):
        n, mean, m2 = accs
        n = e.add(arith.AddfOp(n, e.const(1.0, t)))
        delta = e.add(arith.SubfOp(x, mean))
        mean = e.add(arith.AddfOp(mean, e.add(arith.DivfOp(delta, n))))
        m2 = e.add(arith.AddfOp(m2, e.add(arith.MulfOp(delta, e.add(arith.SubfOp(x, mean))))))
        return [n, mean, m2]
    if t == BOOL:
        return [e.add(arith.OrIOp(accs[0], x))]
    if is_floating(t):
        # PyTorch's own sum kernels reassociate (vectorized partial sums), so may we.
        return [e.add(arith.AddfOp(accs[0], x, flags=arith.FastMathFlagsAttr(["reassoc"])))]
    return [e.add(arith.AddiOp(accs[0], x))]


def _combine(e: _Emitter, kind: str, a: list[SSAValue], b: list[SSAValue]) -> list[SSAValue]:
    """Two partial accumulators of one reduction as one (the GPU's tree steps)."""
    if kind in ("max", "min"):
        flag = [e.add(arith.OrIOp(a[1], b[1]))] if len(a) == 2 else []
        return [_maximum(e, a[0], b[0], kind == "max"), *flag]
    if kind in ("var", "std"):
        # Chan et al.'s parallel Welford step; an empty side (n = 0) leaves the other.
        (na, ma, qa), (nb, mb, qb) = a, b
        t = na.type
        n = e.add(arith.AddfOp(na, nb))
        zero = e.const(0.0, t)
        safe_n = e.add(arith.SelectOp(e.add(arith.CmpfOp(n, zero, "oeq")), e.const(1.0, t), n))
        delta = e.add(arith.SubfOp(mb, ma))
        wb = e.add(arith.DivfOp(nb, safe_n))
        mean = e.add(arith.AddfOp(ma, e.add(arith.MulfOp(delta, wb))))
        cross = e.add(arith.MulfOp(e.add(arith.MulfOp(delta, delta)), e.add(arith.MulfOp(na, wb))))
        m2 = e.add(arith.AddfOp(e.add(arith.AddfOp(qa, qb)), cross))
        return [n, mean, m2]
    t = a[0].type
    if t == BOOL:
        return [e.add(arith.OrIOp(a[0], b[0]))]
    return [e.add(arith.AddfOp(a[0], b[0]) if is_floating(t) else arith.AddiOp(a[0], b[0]))]


def _finish(e: _Emitter, op: Operation, accs: list[SSAValue], count: SSAValue) -> SSAValue:
    """The reduction's value from its accumulators (`count`: reduced elements,
    index), rounded to a half-typed result as eager's kernel rounds it."""
    return round_result(e, op, _value(e, op, accs, count))


def _value(e: _Emitter, op: Operation, accs: list[SSAValue], count: SSAValue) -> SSAValue:
    kind = _KINDS[op.name]
    t = accs[0].type
    if kind == "mean":
        n = e.add(arith.SIToFPOp(e.add(arith.IndexCastOp(count, IntegerType(64))), t))
        return e.add(arith.DivfOp(accs[0], n))
    if kind in ("var", "std"):
        n, _, m2 = accs
        attr = op.properties.get("correction")
        correction = attr.value.data if attr is not None else 1  # type: ignore[union-attr]
        var = e.add(arith.DivfOp(m2, e.add(arith.SubfOp(n, e.const(float(correction), t)))))
        if kind == "std":
            return e.add(mathd.SqrtOp(var))
        return var
    if kind in ("max", "min") and len(accs) == 2:
        return e.add(arith.SelectOp(accs[1], e.const(math.nan, t), accs[0]))
    return accs[0]


# ----------------------------------------------------------------- the kernel


@dataclass
class _Values:
    """Computes group values on demand at one of two levels: once per kept index
    (`row`, kept across stages) or once per element of a reduced-dims nest."""

    body: Block
    domain: Domain
    load: Callable[[_Emitter, SSAValue, Sequence[SSAValue]], SSAValue]
    scalar_of: dict[SSAValue, SSAValue]
    row: dict[SSAValue, SSAValue]
    row_emitter: _Emitter
    row_offsets: list[SSAValue]

    def get(
        self, v: SSAValue, e: _Emitter, offsets: Sequence[SSAValue], cache: dict[SSAValue, SSAValue]
    ) -> SSAValue:
        if v in self.scalar_of:
            return self.scalar_of[v]
        if v in self.row:
            return self.row[v]
        if self.domain.is_row(v.type) and e is not self.row_emitter:
            return self.get(v, self.row_emitter, self.row_offsets, self.row)
        if v in cache:
            return cache[v]
        owner = v.owner
        if isinstance(owner, Block) or owner.parent_block() is not self.body or _is_view(owner):
            res = self.load(e, v, offsets)
        elif isinstance(owner, arith.ConstantOp):
            res = e.add(arith.ConstantOp(owner.value, owner.result.type))
        elif is_reduction(owner):
            raise DiagnosticException(
                f"lower-group-to-loops: {owner.name} is read before its stage ran"
            )
        else:
            if not owner.has_trait(aten.Pointwise):
                raise DiagnosticException(f"lower-group-to-loops: {owner.name} is not pointwise")
            args = [self.get(o, e, offsets, cache) for o in owner.operands]
            res = emit_pointwise(e, owner, args)
        cache[v] = res
        return res


def _is_view(op: Operation) -> bool:
    return isinstance(op, _VIEW_OPS)


def _stages(body: Block) -> list[list[Operation]]:
    """Reductions by stage: a reduction waits for every reduction its input reads."""
    level: dict[SSAValue, int] = {}
    stages: list[list[Operation]] = []
    for op in body.ops:
        deps = [level.get(o, 0) for o in op.operands]
        here = max(deps, default=0)
        if is_reduction(op):
            while len(stages) <= here:
                stages.append([])
            stages[here].append(op)
            here += 1
        for r in op.results:
            level[r] = here
    return stages


def build_reduction_kernel(
    name: str, body: Block, result_types: Sequence[Attribute], target: str = "cpu"
) -> tuple[func.FuncOp, KernelSignature]:
    """The loop-level kernel of a group body with reductions; same arguments and
    signature layout as `build_loop_kernel`, plus `KernelSignature.reduce_dims`."""
    domain = body_domain(body)
    assert domain is not None
    plan = _plan(body)
    out_values, outs, exits = _exit_outputs(body, result_types)
    if exits:
        raise DiagnosticException("lower-group-to-loops: a group with reductions has no cat exits")
    rank = len(domain.shape)
    for t in outs:
        assert isinstance(t, TensorType)
        if t.get_num_dims() > rank:
            raise DiagnosticException(
                "lower-group-to-loops: an output of a reduction group is larger than its domain"
            )
    lrank = max(rank, 1)
    gpu = target != "cpu"

    arg_types: list[Attribute] = [INDEX] if gpu else [INDEX, INDEX]
    arg_types += [INDEX] * lrank
    mem_types: list[Attribute] = [
        MemRefType(_storage_type(spec.dtype, body), [DYN]) for spec in plan.operands
    ]
    out_specs: list[OutputSpec] = []
    for t in outs:
        assert isinstance(t, TensorType)
        et = t.get_element_type()
        _check_dtype(et)
        mem_types.append(MemRefType(storage_type(et), [DYN]))
        out_specs.append(OutputSpec(dtype_name(et), tuple(t.get_shape())))
    for mt in mem_types:
        arg_types += [mt] + [INDEX] * lrank
    arg_types += [body.args[i].type for i, _ in plan.scalars]
    entry, a, sizes, mems, pos = kernel_entry(arg_types, len(mem_types), lrank, gpu)
    scalar_of = {v: a[pos + k] for v, k in plan.scalar_of.items()}

    e = _Emitter()
    c0 = e.const(0, INDEX)
    c1 = e.const(1, INDEX)
    # An operand dim that is statically 1 has stride 0 (as in `build_loop_kernel`):
    # a constant, so its loads hoist and the column blocks below know it stays put.
    for v, k in plan.operand_of.items():
        shape = v.type.get_shape()  # type: ignore[attr-defined]
        lead = lrank - len(shape)
        for d in range(lrank):
            if d < lead or shape[d - lead] == 1:
                mems[k][1][d] = c0
    rdims = list(domain.dims) if rank else [0]
    kept = [d for d in range(lrank) if d not in rdims]
    count = c1
    for d in rdims:
        count = e.add(arith.MuliOp(count, sizes[d]))

    def load(em: _Emitter, v: SSAValue, offsets: Sequence[SSAValue]) -> SSAValue:
        k = plan.operand_of[v]
        return em.load(mems[k][0], [offsets[k]], v.type.get_element_type())  # type: ignore[attr-defined]

    def step(em: _Emitter, offs: Sequence[SSAValue], iv: SSAValue, d: int) -> list[SSAValue]:
        # `offs` may hold several lanes' offsets (blocked kept dim), mems repeating.
        lanes = len(offs) // len(mems)
        return [
            em.add(arith.AddiOp(o, em.add(arith.MuliOp(iv, strides[d]))))
            for o, (_, strides) in zip(offs, list(mems) * lanes, strict=True)
        ]

    def store(em: _Emitter, k: int, val: SSAValue, offsets: Sequence[SSAValue]) -> None:
        j = len(plan.operands) + k
        em.store(val, mems[j][0], [offsets[j]], outs[k].get_element_type())  # type: ignore[attr-defined]

    zero_offs = [c0 for _ in mems]
    stages = _stages(body)
    row_outs = [k for k, v in enumerate(out_values) if domain.is_row(v.type)]
    full_outs = [k for k, v in enumerate(out_values) if not domain.is_row(v.type)]
    nm = len(mems)
    # Only where the innermost dim is reduced: a row then stays in cache from the
    # nest that stores to the one that reads back. Blocked columns span the whole
    # reduced extent, so there re-reading the input beats writing the output twice
    # (a column softmax of 4096x1024 f32 measured 0.61x ATen recomputing, 0.83x
    # stashed).
    column_blocks = bool(kept and kept[-1] == rank - 1 and rdims)
    stash = (
        {} if gpu or column_blocks else _stashes(body, domain, stages, out_values, full_outs, outs)
    )

    def load_stash(em: _Emitter, k: int, offsets: Sequence[SSAValue]) -> SSAValue:
        j = len(plan.operands) + k
        return em.add(memref.LoadOp.get(mems[j][0], [offsets[j]]))

    def rows(nest: CpuRows | WarpRows, ke: _Emitter, lanes: list[list[SSAValue]]) -> None:
        """Everything for the kept indices whose offsets are `lanes` (one per lane):
        the stages' reduction nests (shared by the lanes), the row outputs and the
        full outputs."""
        flat = [o for lane in lanes for o in lane]
        values = [_Values(body, domain, load, scalar_of, {}, ke, lane) for lane in lanes]
        for stage in stages:
            kinds = [_KINDS[op.name] for op in stage]
            inits: list[SSAValue] = []
            spans: list[tuple[int, int]] = []
            for _ in lanes:
                for op, kind in zip(stage, kinds, strict=True):
                    init = _init(ke, kind, _acc_type(op))
                    spans.append((len(inits), len(inits) + len(init)))
                    inits += init

            def update(ie: _Emitter, offs, accs, stage=stage, kinds=kinds, spans=spans):
                new: list[SSAValue] = []
                for u, vals in enumerate(values):
                    cache: dict[SSAValue, SSAValue] = {}
                    lane_offs = offs[u * nm : (u + 1) * nm]
                    for i, (op, kind) in enumerate(zip(stage, kinds, strict=True)):
                        lo, hi = spans[u * len(stage) + i]
                        x = vals.get(op.operands[0], ie, lane_offs, cache)
                        if (k := stash.get(op.operands[0])) is not None:
                            store(ie, k, x, lane_offs)
                        new += _update(ie, kind, list(accs[lo:hi]), x)
                return new

            def combine(ie: _Emitter, x, y, kinds=kinds, spans=spans):
                out: list[SSAValue] = []
                for i, (lo, hi) in enumerate(spans):
                    out += _combine(ie, kinds[i % len(kinds)], list(x[lo:hi]), list(y[lo:hi]))
                return out

            finals = nest.reduce(ke, flat, inits, update, combine)
            for u, vals in enumerate(values):
                for i, op in enumerate(stage):
                    lo, hi = spans[u * len(stage) + i]
                    vals.row[op.results[0]] = _finish(ke, op, list(finals[lo:hi]), count)
        if row_outs:
            row_vals = [
                [vals.get(out_values[k], ke, lane, vals.row) for k in row_outs]
                for vals, lane in zip(values, lanes, strict=True)
            ]
            we, close_first = nest.first_lane(ke)
            for lane, lane_vals in zip(lanes, row_vals, strict=True):
                for k, val in zip(row_outs, lane_vals, strict=True):
                    store(we, k, val, lane)
            close_first()
        if full_outs:

            def write(ie: _Emitter, offs) -> None:
                for u, vals in enumerate(values):
                    cache: dict[SSAValue, SSAValue] = {}
                    lane_offs = offs[u * nm : (u + 1) * nm]
                    # Every stashed value is read back before any output is overwritten.
                    for v, k in stash.items():
                        cache[v] = load_stash(ie, k, lane_offs)
                    for k in full_outs:
                        store(ie, k, vals.get(out_values[k], ie, lane_offs, cache), lane_offs)

            nest.full(ke, flat, write)

    if gpu:
        warp_nest = WarpRows(e, sizes, kept, rdims, zero_offs, c0, c1, step)
        rows(warp_nest, warp_nest.body, [warp_nest.row_offsets])
        warp_nest.close()
    elif column_blocks:
        # The innermost dim is kept (a sum over the batch, say): walking one column
        # at a time would stride through memory, so BLOCK neighbouring columns share
        # each reduction nest (one cache line per reduced index), the rest one by one;
        # or, with one stage, tiles of columns accumulated row by row in memory order.
        d = kept[-1]
        lo, hi = (c0, sizes[d]) if len(kept) > 1 else (a[0], a[1])
        moving = [k for k, (_, strides) in enumerate(mems) if strides[d] is not c0]
        row_accumulators = None
        if _accumulates_in_memory(stages, out_values, full_outs):
            # Made before the nest: its stack buffers go first in the entry block.
            row_accumulators = RowAccumulators(
                e, stages[0], mems, moving, d, lo, hi, c0, c1, step,
                lambda em, offs: _Values(body, domain, load, scalar_of, {}, em, offs),
            )  # fmt: skip
        nest = CpuRows(e, a[0], a[1], sizes, kept[:-1], rdims, zero_offs, c0, c1, step,
                       inner=len(kept) > 1)  # fmt: skip
        pe, po = nest.body, nest.row_offsets
        # Lanes that are neighbours in memory (every tensor that is not broadcast
        # along the column dim has stride 1 there, as when contiguous) read at
        # constant distances, which LLVM turns into vector loads and adds, so that
        # case is a version of its own with wider blocks; with runtime strides it
        # loads lane by lane.
        unit: SSAValue | None = None
        # Each lane is a copy of the body: with many tensors (an LSTM's 50 bias
        # gradients in one group) a second, wider version multiplied LLVM's time
        # several fold, so those keep the one strided version.
        versioned = len(mems) * WIDE_BLOCK <= MAX_VERSIONED_LOADS
        for k in moving if versioned else []:
            one = pe.add(arith.CmpiOp(mems[k][1][d], c1, "eq"))
            unit = one if unit is None else pe.add(arith.AndIOp(unit, one))

        def block_loop(ops: list[Operation], start: SSAValue, width: int, contiguous: bool):
            """Blocks of `width` columns from `start` while a whole one fits; returns
            where they stopped (`hi` for width 1)."""
            be = _Emitter(ops)
            stop = hi
            if width > 1:
                n = be.add(arith.DivUIOp(be.add(arith.SubiOp(hi, start)), be.const(width, INDEX)))
                span = be.add(arith.MuliOp(n, be.const(width, INDEX)))
                stop = be.add(arith.AddiOp(start, span))
            blk = Block(arg_types=[INDEX])
            ops.append(scf.ForOp(start, stop, be.const(width, INDEX), [], blk))
            be = _Emitter([])
            first = step(be, po, blk.args[0], d)
            lanes = [first]
            for u in range(1, width):
                if contiguous:
                    shift = be.const(u, INDEX)
                    lanes.append(
                        [be.add(arith.AddiOp(o, shift)) if k in moving else o
                         for k, o in enumerate(first)]
                    )  # fmt: skip
                else:
                    j = be.add(arith.AddiOp(blk.args[0], be.const(u, INDEX)))
                    lanes.append(step(be, po, j, d))
            rows(nest, be, lanes)
            be.add(scf.YieldOp())
            blk.add_ops(be.ops)
            return stop

        def blocks(ops: list[Operation], widths: Sequence[int], contiguous: bool) -> None:
            start = lo
            for width in widths:
                start = block_loop(ops, start, width, contiguous)

        if row_accumulators is not None:
            accumulators = row_accumulators

            def full_outputs(em: _Emitter, vals: _Values, offs, cache) -> None:
                for k in full_outs:
                    store(em, k, vals.get(out_values[k], em, offs, cache), offs)

            def row_outputs(em: _Emitter, vals: _Values, offs) -> None:
                for k in row_outs:
                    store(em, k, vals.get(out_values[k], em, offs, vals.row), offs)

            def tiles(ops: list[Operation], contiguous: bool) -> None:
                accumulators.emit(
                    _Emitter(ops), nest, po, contiguous, full_outputs, row_outputs, count
                )

            if unit is None:
                tiles(pe.ops, contiguous=versioned and bool(moving))
            else:
                versions = [[], []]
                tiles(versions[0], contiguous=True)
                tiles(versions[1], contiguous=False)
                for ops in versions:
                    ops.append(scf.YieldOp())
                pe.ops.append(scf.IfOp(unit, [], versions[0], versions[1]))
        elif unit is None:  # every tensor is broadcast along the columns, or too many
            blocks(pe.ops, (BLOCK, 1), contiguous=versioned)
        else:
            versions: list[list[Operation]] = [[], []]
            blocks(versions[0], (WIDE_BLOCK, 1), contiguous=True)
            blocks(versions[1], (BLOCK, 1), contiguous=False)
            for ops in versions:
                ops.append(scf.YieldOp())
            pe.ops.append(scf.IfOp(unit, [], versions[0], versions[1]))
        nest.close()
    else:
        cpu_nest = CpuRows(e, a[0], a[1], sizes, kept, rdims, zero_offs, c0, c1, step)
        rows(cpu_nest, cpu_nest.body, [cpu_nest.row_offsets])
        cpu_nest.close()
    return finish_kernel(
        name, e, entry, arg_types, body, plan, rank, out_specs, target, reduce_dims=tuple(rdims)
    )


COLUMN_TILE = 256
"""Columns whose accumulators a column reduction keeps in a stack buffer while
it walks the rows (`RowAccumulators`)."""


def _accumulates_in_memory(
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
    runs it: for a tile of `COLUMN_TILE` columns, accumulators in a stack buffer,
    and the rows walked in memory order, each adding a contiguous run of columns
    into them (a loop LLVM vectorizes); then the tile's results. Blocks of
    columns walked down the rows instead (the other column path) read one
    cache line per row, a stride the prefetchers do not follow across pages.

        for c0 in [lo, hi) step T:                       # w = min(T, hi - c0)
            acc[j] = init                  for j < w
            for r in rows: acc[j] = update(acc[j], x[r, c0 + j])   (+ full outputs)
            out[c0 + j] = finish(acc[j])   for j < w     (+ row outputs)
    """

    def __init__(
        self,
        e: _Emitter,
        stage: list[Operation],
        mems: Sequence[tuple[SSAValue, list[SSAValue]]],
        moving: Sequence[int],
        d: int,
        lo: SSAValue,
        hi: SSAValue,
        c0: SSAValue,
        c1: SSAValue,
        step: Callable[[_Emitter, Sequence[SSAValue], SSAValue, int], list[SSAValue]],
        values: Callable[[_Emitter, list[SSAValue]], _Values],
    ):
        self.stage, self.mems, self.moving, self.d = stage, mems, moving, d
        self.lo, self.hi, self.c0, self.c1, self.step, self.values = lo, hi, c0, c1, step, values
        self.kinds = [_KINDS[op.name] for op in stage]
        self.tile = e.const(COLUMN_TILE, INDEX)
        # Stack buffers at the function's entry, so LLVM allocates them once.
        self.inits = [_init(e, kind, _acc_type(op)) for op, kind in zip(stage, self.kinds, strict=True)]
        self.buffers = [
            [
                e.add(memref.AllocaOp.get(v.type, alignment=64, shape=[DYN], dynamic_sizes=[self.tile]))
                for v in init
            ]
            for init in self.inits
        ]

    def _columns(
        self,
        em: _Emitter,
        width: SSAValue,
        base: Sequence[SSAValue] | None,
        contiguous: bool,
        body: Callable[[_Emitter, SSAValue, list[SSAValue]], None],
    ) -> None:
        """`for j in [0, width)`: `body(emitter, j, offsets of column j)` (no
        offsets where `base` is None: a loop over the buffer alone)."""
        blk = Block(arg_types=[INDEX])
        je = _Emitter([])
        j = blk.args[0]
        offs: list[SSAValue] = []
        if base is not None and contiguous:
            offs = [je.add(arith.AddiOp(o, j)) if k in self.moving else o for k, o in enumerate(base)]
        elif base is not None:
            offs = self.step(je, base, j, self.d)
        body(je, j, offs)
        je.add(scf.YieldOp())
        blk.add_ops(je.ops)
        em.ops.append(scf.ForOp(self.c0, width, self.c1, [], blk))

    def emit(
        self,
        em: _Emitter,
        nest: CpuRows,
        row_offsets: Sequence[SSAValue],
        contiguous: bool,
        full_outputs: Callable[[_Emitter, _Values, list[SSAValue], dict[SSAValue, SSAValue]], object],
        row_outputs: Callable[[_Emitter, _Values, list[SSAValue]], object],
        count: SSAValue,
    ) -> None:
        """The tiles over [lo, hi) at `row_offsets` (the kept outer dims'
        position; reduced dims at 0): `full_outputs` stores the full outputs at
        each element, `row_outputs` the row outputs once the tile's reductions
        are done (their values in the `_Values`' `row`)."""
        blk = Block(arg_types=[INDEX])
        te = _Emitter([])
        start = blk.args[0]
        width = te.add(arith.MinSIOp(self.tile, te.add(arith.SubiOp(self.hi, start))))
        base = self.step(te, row_offsets, start, self.d)

        def init(je: _Emitter, j: SSAValue, _offs: list[SSAValue]) -> None:
            for init_values, bufs in zip(self.inits, self.buffers, strict=True):
                for v, buf in zip(init_values, bufs, strict=True):
                    je.add(memref.StoreOp.get(v, buf, [j]))

        def accumulate(je: _Emitter, j: SSAValue, offs: list[SSAValue]) -> None:
            vals = self.values(je, offs)
            cache: dict[SSAValue, SSAValue] = {}
            for op, kind, bufs in zip(self.stage, self.kinds, self.buffers, strict=True):
                x = vals.get(op.operands[0], je, offs, cache)
                accs = [je.add(memref.LoadOp.get(buf, [j])) for buf in bufs]
                for v, buf in zip(_update(je, kind, accs, x), bufs, strict=True):
                    je.add(memref.StoreOp.get(v, buf, [j]))
            full_outputs(je, vals, offs, cache)

        def finish(je: _Emitter, j: SSAValue, offs: list[SSAValue]) -> None:
            vals = self.values(je, offs)
            for op, bufs in zip(self.stage, self.buffers, strict=True):
                accs = [je.add(memref.LoadOp.get(buf, [j])) for buf in bufs]
                vals.row[op.results[0]] = _finish(je, op, accs, count)
            row_outputs(je, vals, offs)

        self._columns(te, width, None, contiguous, init)
        nest.full(te, base, lambda ie, o: self._columns(ie, width, o, contiguous, accumulate))
        self._columns(te, width, base, contiguous, finish)
        te.add(scf.YieldOp())
        blk.add_ops(te.ops)
        em.ops.append(scf.ForOp(self.lo, self.hi, self.tile, [], blk))


def _stashes(
    body: Block,
    domain: Domain,
    stages: list[list[Operation]],
    out_values: Sequence[SSAValue],
    full_outs: Sequence[int],
    outs: Sequence[Attribute],
) -> dict[SSAValue, int]:
    """Full values a reduction nest computes that a full output's buffer can hold
    until the last nest reads them back (value -> output index), so the last nest
    does not compute them again: softmax's `exp(x - max)` is stored into the output
    while it is summed, and the last nest only scales it (as ATen's kernel does).

        %e = aten.exp %d ; %s = aten.sum %e ; %r = aten.mul %e, %inv   (%inv: a row value)
        -> the sum's nest: store %e into %r's buffer; the last nest: load it, times %inv

    An output qualifies when it is a pointwise op of one such value and row values
    only (each element reads back just what it overwrites), stores in the type it
    computes in (a half-precision output would round the stashed value twice), and
    the value is computed, not merely loaded (then re-reading saves nothing).
    """
    reduced = {op.operands[0] for stage in stages for op in stage}
    stash: dict[SSAValue, int] = {}
    for k in full_outs:
        owner = out_values[k].owner
        if not isinstance(owner, Operation) or owner.parent_block() is not body:
            continue
        if not owner.has_trait(aten.Pointwise) or _is_view(owner):
            continue
        full = [o for o in owner.operands if not domain.is_row(o.type)]
        if len(full) != 1 or (v := full[0]) not in reduced or v in stash:
            continue
        src = v.owner
        if not isinstance(src, Operation) or src.parent_block() is not body or _is_view(src):
            continue
        et = outs[k].get_element_type()  # type: ignore[attr-defined]
        if compute_type(et) != et or v.type.get_element_type() != et:  # type: ignore[attr-defined]
            continue
        stash[v] = k
    return stash


BodyFn = Callable[[_Emitter, list[SSAValue], list[SSAValue]], list[SSAValue]]


class CpuRows:
    """The CPU nest: loops over the kept dims (the first over [begin, end), the
    threads' share; one [0, 1) pass when every dim is reduced), and per stage a
    nest over the reduced dims carrying the accumulators."""

    def __init__(
        self,
        e: _Emitter,
        begin: SSAValue,
        end: SSAValue,
        sizes: Sequence[SSAValue],
        kept: Sequence[int],
        rdims: Sequence[int],
        offs: list[SSAValue],
        c0: SSAValue,
        c1: SSAValue,
        step: Callable[[_Emitter, Sequence[SSAValue], SSAValue, int], list[SSAValue]],
        inner: bool = True,
    ):
        self.sizes, self.rdims, self.c0, self.c1, self.step = sizes, rdims, c0, c1, step
        self._opened: list[tuple[Block, _Emitter]] = []
        em = e
        if not kept and not inner:  # the caller loops over the only kept dim itself
            self.body, self.row_offsets = em, offs
            return
        for n, d in enumerate(kept or [None]):
            blk = Block(arg_types=[INDEX])
            lo, hi = (begin, end) if n == 0 else (c0, sizes[d])
            em.ops.append(scf.ForOp(lo, hi, c1, [], blk))
            em = _Emitter([])
            self._opened.append((blk, em))
            if d is not None:
                offs = step(em, offs, blk.args[0], d)
        self.body, self.row_offsets = em, offs

    def _nest(
        self,
        em: _Emitter,
        dims: Sequence[int],
        offs: Sequence[SSAValue],
        accs: Sequence[SSAValue],
        body_fn: BodyFn,
    ) -> list[SSAValue]:
        """Loops over `dims` carrying `accs`; `body_fn(emitter, offsets, accs)` gives
        the next accumulators at each element. Returns the final ones."""
        if not dims:
            return body_fn(em, offs, accs)
        d = dims[0]
        blk = Block(arg_types=[INDEX] + [v.type for v in accs])
        inner = _Emitter([])
        inner_offs = self.step(inner, offs, blk.args[0], d)
        new = self._nest(inner, dims[1:], inner_offs, list(blk.args[1:]), body_fn)
        inner.add(scf.YieldOp(*new))
        blk.add_ops(inner.ops)
        loop = scf.ForOp(self.c0, self.sizes[d], self.c1, list(accs), blk)
        em.ops.append(loop)
        return list(loop.results)

    def reduce(
        self,
        em: _Emitter,
        offs: Sequence[SSAValue],
        accs: Sequence[SSAValue],
        body_fn: BodyFn,
        combine: BodyFn,
    ) -> list[SSAValue]:
        return self._nest(em, self.rdims, offs, accs, body_fn)

    def full(
        self,
        em: _Emitter,
        offs: Sequence[SSAValue],
        body_fn: Callable[[_Emitter, list[SSAValue]], None],
    ) -> None:
        self._nest(em, self.rdims, offs, [], lambda ie, o, _a: body_fn(ie, o) or [])

    def first_lane(self, em: _Emitter) -> tuple[_Emitter, Callable[[], None]]:
        return em, lambda: None

    def close(self) -> None:
        for blk, inner in reversed(self._opened):
            inner.add(scf.YieldOp())
            blk.add_ops(inner.ops)
