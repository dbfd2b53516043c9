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

from collections.abc import Sequence

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.passes.lowering.emitter import (
    DYN,
    INDEX,
    LoopEmitter,
    compute_type,
    dtype_name,
    storage_type,
)
from fusec.passes.lowering.gather import cpu_only, gather
from fusec.passes.lowering.kernel_args import (
    check_dtype,
    exit_outputs,
    finish_kernel,
    kernel_entry,
    plan_kernel,
    storage_type_named,
    zero_unit_strides,
)
from fusec.passes.lowering.reduction_domain import Domain, is_reduction, keeps_dims
from fusec.passes.lowering.reduction_domain import body_domain as _body_domain
from fusec.passes.lowering.reduction_gpu import WarpRows
from fusec.passes.lowering.reduction_rows import (
    CpuRows,
    RowAccumulators,
    accumulates_in_memory,
)
from fusec.passes.lowering.reduction_values import (
    REDUCTION_KINDS,
    GroupValues,
    acc_type,
    combine_accumulators,
    finish_accumulators,
    init_accumulators,
    is_view,
    update_accumulators,
)
from fusec.runtime.kernel_signature import KernelSignature, OutputSpec
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    MemRefType,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

BLOCK = 8
"""Kept columns that share a reduction nest when the innermost dim is kept."""
MAX_VERSIONED_LOADS = 256
"""Tensors times `WIDE_BLOCK` lanes above which a column reduction gets no
contiguous-columns version (compile time)."""
WIDE_BLOCK = 16
"""The same when those columns are contiguous in every tensor: vector loads, and
more accumulators in flight. (32 measured about 20% faster on a layer norm's
weight gradient, but the lanes are copies of the body: compile time grew more.)"""


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


# ----------------------------------------------------------------- the kernel


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
    plan = plan_kernel(body)
    out_values, outs, exits = exit_outputs(body, result_types)
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
        MemRefType(storage_type_named(spec.dtype), [DYN]) for spec in plan.operands
    ]
    out_specs: list[OutputSpec] = []
    for t in outs:
        assert isinstance(t, TensorType)
        et = t.get_element_type()
        check_dtype(et)
        mem_types.append(MemRefType(storage_type(et), [DYN]))
        out_specs.append(OutputSpec(dtype_name(et), tuple(t.get_shape())))
    for mt in mem_types:
        arg_types += [mt] + [INDEX] * lrank
    arg_types += [body.args[i].type for i, _ in plan.scalars]
    if plan.gathers:
        if gpu:
            cpu_only(plan)
        arg_types.append(MemRefType(inf.I8, [DYN]))  # the flag byte, last
    entry, a, sizes, mems, pos = kernel_entry(arg_types, len(mem_types), lrank, gpu)
    scalar_of = {v: a[pos + k] for v, k in plan.scalar_of.items()}

    e = LoopEmitter()
    c0 = e.const(0, INDEX)
    c1 = e.const(1, INDEX)
    # Constant 0 strides also tell the column blocks below an operand stays put.
    zero_unit_strides(plan, mems, lrank, c0)
    rdims = list(domain.dims) if rank else [0]
    kept = [d for d in range(lrank) if d not in rdims]
    count = c1
    for d in rdims:
        count = e.add(arith.MuliOp(count, sizes[d]))

    def load(em: LoopEmitter, v: SSAValue, offsets: Sequence[SSAValue]) -> SSAValue:
        owner = v.owner
        if isinstance(owner, aten.EmbeddingOp):
            t, i = plan.gathers[owner]
            return gather(em, owner, (mems[t][0], offsets[t]), (mems[i][0], offsets[i]), a[-1], c0)
        k = plan.operand_of[v]
        return em.load(mems[k][0], [offsets[k]], v.type.get_element_type())  # type: ignore[attr-defined]

    def step(em: LoopEmitter, offs: Sequence[SSAValue], iv: SSAValue, d: int) -> list[SSAValue]:
        # `offs` may hold several lanes' offsets (blocked kept dim), mems repeating.
        lanes = len(offs) // len(mems)
        return [
            em.add(arith.AddiOp(o, em.add(arith.MuliOp(iv, strides[d]))))
            for o, (_, strides) in zip(offs, list(mems) * lanes, strict=True)
        ]

    def store(em: LoopEmitter, k: int, val: SSAValue, offsets: Sequence[SSAValue]) -> None:
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

    def load_stash(em: LoopEmitter, k: int, offsets: Sequence[SSAValue]) -> SSAValue:
        j = len(plan.operands) + k
        return em.add(memref.LoadOp.get(mems[j][0], [offsets[j]]))

    def rows(nest: CpuRows | WarpRows, ke: LoopEmitter, lanes: list[list[SSAValue]]) -> None:
        """Everything for the kept indices whose offsets are `lanes` (one per lane):
        the stages' reduction nests (shared by the lanes), the row outputs and the
        full outputs."""
        flat = [o for lane in lanes for o in lane]
        values = [GroupValues(body, domain, load, scalar_of, {}, ke, lane) for lane in lanes]
        for stage in stages:
            kinds = [REDUCTION_KINDS[type(op)] for op in stage]
            inits: list[SSAValue] = []
            spans: list[tuple[int, int]] = []
            for _ in lanes:
                for op, kind in zip(stage, kinds, strict=True):
                    init = init_accumulators(ke, kind, acc_type(op))
                    spans.append((len(inits), len(inits) + len(init)))
                    inits += init

            def update(ie: LoopEmitter, offs, accs, stage=stage, kinds=kinds, spans=spans):
                new: list[SSAValue] = []
                for u, vals in enumerate(values):
                    cache: dict[SSAValue, SSAValue] = {}
                    lane_offs = offs[u * nm : (u + 1) * nm]
                    for i, (op, kind) in enumerate(zip(stage, kinds, strict=True)):
                        lo, hi = spans[u * len(stage) + i]
                        x = vals.get(op.operands[0], ie, lane_offs, cache)
                        if (k := stash.get(op.operands[0])) is not None:
                            store(ie, k, x, lane_offs)
                        new += update_accumulators(ie, kind, list(accs[lo:hi]), x)
                return new

            def combine(ie: LoopEmitter, x, y, kinds=kinds, spans=spans):
                out: list[SSAValue] = []
                for i, (lo, hi) in enumerate(spans):
                    out += combine_accumulators(
                        ie, kinds[i % len(kinds)], list(x[lo:hi]), list(y[lo:hi])
                    )
                return out

            finals = nest.reduce(ke, flat, inits, update, combine)
            for u, vals in enumerate(values):
                for i, op in enumerate(stage):
                    lo, hi = spans[u * len(stage) + i]
                    vals.row[op.results[0]] = finish_accumulators(
                        ke, op, list(finals[lo:hi]), count
                    )
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

            def write(ie: LoopEmitter, offs) -> None:
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
        if accumulates_in_memory(stages, out_values, full_outs):
            # Made before the nest: its stack buffers go first in the entry block.
            row_accumulators = RowAccumulators(
                e, stages[0], mems, moving, d, lo, hi, c0, c1, step,
                lambda em, offs: GroupValues(body, domain, load, scalar_of, {}, em, offs),
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
            be = LoopEmitter(ops)
            stop = hi
            if width > 1:
                n = be.add(arith.DivUIOp(be.add(arith.SubiOp(hi, start)), be.const(width, INDEX)))
                span = be.add(arith.MuliOp(n, be.const(width, INDEX)))
                stop = be.add(arith.AddiOp(start, span))
            blk = Block(arg_types=[INDEX])
            ops.append(scf.ForOp(start, stop, be.const(width, INDEX), [], blk))
            be = LoopEmitter([])
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

            def full_outputs(em: LoopEmitter, vals: GroupValues, offs, cache) -> None:
                for k in full_outs:
                    store(em, k, vals.get(out_values[k], em, offs, cache), offs)

            def row_outputs(em: LoopEmitter, vals: GroupValues, offs) -> None:
                for k in row_outs:
                    store(em, k, vals.get(out_values[k], em, offs, vals.row), offs)

            def tiles(ops: list[Operation], contiguous: bool) -> None:
                accumulators.emit(
                    LoopEmitter(ops), nest, po, contiguous, full_outputs, row_outputs, count
                )

            if unit is None:
                tiles(pe.ops, contiguous=versioned and bool(moving))
            else:
                versions: list[list[Operation]] = [[], []]
                tiles(versions[0], contiguous=True)
                tiles(versions[1], contiguous=False)
                for ops in versions:
                    ops.append(scf.YieldOp())
                pe.ops.append(scf.IfOp(unit, [], versions[0], versions[1]))
        elif unit is None:  # every tensor is broadcast along the columns, or too many
            blocks(pe.ops, (BLOCK, 1), contiguous=versioned)
        else:
            versions = [[], []]
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
        name, e, entry, arg_types, body, plan, rank, out_specs, target,
        reduce_dims=tuple(rdims), zero_division_flag=bool(plan.gathers),
    )  # fmt: skip


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
        if not owner.has_trait(aten.Pointwise) or is_view(owner):
            continue
        full = [o for o in owner.operands if not domain.is_row(o.type)]
        if len(full) != 1 or (v := full[0]) not in reduced or v in stash:
            continue
        src = v.owner
        if not isinstance(src, Operation) or src.parent_block() is not body or is_view(src):
            continue
        et = outs[k].get_element_type()  # type: ignore[attr-defined]
        if compute_type(et) != et or v.type.get_element_type() != et:  # type: ignore[attr-defined]
            continue
        stash[v] = k
    return stash
