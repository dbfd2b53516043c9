"""The kernel of an embedding table's gradient (a group `fuse-scatters` made:
`aten.embedding_dense_backward`, maybe added to a starting table).

Its index space is `ids.shape + [num_weights, row size]`, the ids' dims reduced:
the gradient is read as `ids.shape + [1, row size]`, the ids as
`ids.shape + [1, 1]`, the starting table (if any) as `[num_weights, row size]`,
and the result is `[num_weights, row size]`, so the runtime's shapes, strides
and thread split (over the table's rows, [begin, end)) are those of any
reduction kernel. Each call owns the rows [begin, end): it zeroes them, walks
every id in order and adds the gradient's row to its own rows, as PyTorch's CPU
kernel does (threads never write one row, and each row sums its tokens in
eager's order), then adds the starting table to them, as eager's `add` would:

    %g = aten.embedding_dense_backward %d, %ids num_weights = 100 padding_idx = -1
->
    scf.for %w = %begin to %end { scf.for %c = 0 to %n3 { store 0.0 at %o[w, c] } }
    scf.for %i0 = 0 to %n0 { scf.for %i1 = 0 to %n1 {
      %id = memref.load %ids[...] : memref<?xi64>
      %mine = (%id >= begin) & (%id < end) & (%id != padding_idx)
      scf.if %mine { scf.for %c = 0 to %n3 { %o[id, c] += %d[i0, i1, c] } } } }
    (scf.for %w = %begin to %end { scf.for %c = 0 to %n3 { %o[w, c] = %t[w, c] + %o[w, c] } })

Ids out of the table's range belong to no call and add nothing (the lookup
that read them raised in the forward).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

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
from fusec.passes.lowering.kernel_args import KernelPlan, finish_kernel, kernel_entry
from fusec.runtime.kernel_signature import KernelSignature, OperandSpec, OutputSpec
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.utils.exceptions import DiagnosticException


def scatter_op(body: Block) -> aten.EmbeddingDenseBackwardOp | None:
    """The group's table gradient, if it has one (then it is the whole group)."""
    for op in body.ops:
        if isinstance(op, aten.EmbeddingDenseBackwardOp):
            return op
    return None


@contextmanager
def _loop(
    e: LoopEmitter, lo: SSAValue, hi: SSAValue, c1: SSAValue
) -> Iterator[tuple[LoopEmitter, SSAValue]]:
    """`with _loop(e, lo, hi, c1) as (body, i)`: an `scf.for` appended to `e`
    once its body is written."""
    blk = Block(arg_types=[INDEX])
    inner = LoopEmitter()
    yield inner, blk.args[0]
    inner.add(scf.YieldOp())
    blk.add_ops(inner.ops)
    e.add(scf.ForOp(lo, hi, c1, [], blk))


def build_scatter_kernel(
    name: str, body: Block, result_types: Sequence[Attribute], target: str = "cpu"
) -> tuple[func.FuncOp, KernelSignature]:
    """The loop-level kernel of a group holding a table gradient (module
    docstring); the argument layout of `build_reduction_kernel`."""
    op = scatter_op(body)
    assert op is not None
    if target != "cpu":
        raise DiagnosticException(
            "lower-group-to-loops: aten.embedding_dense_backward in a kernel is CPU-only"
        )
    ops = [o for o in body.ops if o is not body.last_op]
    init: SSAValue | None = None
    if len(ops) == 2 and isinstance(add := ops[1], aten.AddOp):
        init = add.rhs if add.lhs is op.result else add.lhs
    elif len(ops) != 1:
        raise DiagnosticException(
            "lower-group-to-loops: a table gradient's group holds it and at most one add"
        )
    args: list[SSAValue] = list(body.args)
    if op.grad not in args or op.indices not in args or (init is not None and init not in args):
        raise DiagnosticException(
            "lower-group-to-loops: a table gradient reads group inputs (fuse-scatters makes them)"
        )
    (out_type,) = result_types
    assert isinstance(out_type, TensorType)
    gt, it = op.grad.type, op.indices.type
    assert isinstance(gt, TensorType) and isinstance(it, TensorType)
    et = gt.get_element_type()
    if et not in (inf.F16, inf.BF16, inf.F32, inf.F64):
        raise DiagnosticException(f"lower-group-to-loops: a table gradient of {et}")
    k = it.get_num_dims()
    rank = k + 2
    operands = [
        OperandSpec(args.index(op.grad), (("unsqueeze", k),), dtype_name(et)),
        OperandSpec(
            args.index(op.indices),
            (("unsqueeze", k), ("unsqueeze", k + 1)),
            dtype_name(it.get_element_type()),
        ),
    ]
    if init is not None:
        operands.append(OperandSpec(args.index(init), (), dtype_name(et)))
    plan = KernelPlan(operands, {}, [], {}, {})
    out_specs = [OutputSpec(dtype_name(et), tuple(out_type.get_shape()))]
    mem_types = [MemRefType(storage_type(et), [DYN])] * (len(operands) + 1)
    mem_types[1] = MemRefType(it.get_element_type(), [DYN])
    arg_types: list[Attribute] = [INDEX] * (2 + rank)
    for mt in mem_types:
        arg_types += [mt] + [INDEX] * rank
    entry, a, sizes, mems, _ = kernel_entry(arg_types, len(mem_types), rank, False)
    (g, gs), (ids, is_), out = mems[0], mems[1], mems[-1]

    e = LoopEmitter()
    c0, c1 = e.const(0, INDEX), e.const(1, INDEX)
    rows, cols = k, k + 1
    ct = compute_type(et)

    def elementwise(em: LoopEmitter, make: Callable[[LoopEmitter, SSAValue], None]) -> None:
        """A loop over the row's columns; `make(body, column)`."""
        with _loop(em, c0, sizes[cols], c1) as (ce, c):
            make(ce, c)

    def at(em: LoopEmitter, base: SSAValue, stride: SSAValue, i: SSAValue) -> SSAValue:
        return em.add(arith.AddiOp(base, em.add(arith.MuliOp(i, stride))))

    def rows_loop(make: Callable[[LoopEmitter, SSAValue, SSAValue], None]) -> None:
        """A nest over this call's rows [begin, end) and their columns;
        `make(body, row, column)`."""
        with _loop(e, a[0], a[1], c1) as (we, w):
            elementwise(we, lambda ce, c: make(ce, w, c))

    def table(em: LoopEmitter, strides: Sequence[SSAValue], w, c) -> SSAValue:
        """The offset of element (w, c) of a `[rows, columns]` tensor of `strides`."""
        return at(em, em.add(arith.MuliOp(w, strides[rows])), strides[cols], c)

    # The rows this call owns start at zero.
    rows_loop(lambda ce, w, c: ce.store(ce.const(0.0, ct), out[0], [table(ce, out[1], w, c)], et))

    def scatter_row(te: LoopEmitter, goff: SSAValue, ioff: SSAValue) -> None:
        """Adds the gradient's row at `goff` to the table's row its id at `ioff`
        names, if this call owns that row."""
        index = te.load(ids, [ioff], it.get_element_type())
        if it.get_element_type() != inf.I64:
            index = te.add(arith.ExtSIOp(index, inf.I64))
        lo = te.add(arith.IndexCastOp(a[0], inf.I64))
        hi = te.add(arith.IndexCastOp(a[1], inf.I64))
        mine = te.add(arith.CmpiOp(index, lo, "sge"))
        mine = te.add(arith.AndIOp(mine, te.add(arith.CmpiOp(index, hi, "slt"))))
        padding = te.const(op.padding_idx.value.data, inf.I64)
        mine = te.add(arith.AndIOp(mine, te.add(arith.CmpiOp(index, padding, "ne"))))
        then = LoopEmitter()
        row = then.add(arith.IndexCastOp(index, INDEX))
        orow_i = then.add(arith.MuliOp(row, out[1][rows]))

        def accumulate(ce: LoopEmitter, c: SSAValue) -> None:
            where = at(ce, orow_i, out[1][cols], c)
            total = ce.add(
                arith.AddfOp(
                    ce.load(out[0], [where], et), ce.load(g, [at(ce, goff, gs[cols], c)], et)
                )
            )
            ce.store(total, out[0], [where], et)

        elementwise(then, accumulate)
        then.add(scf.YieldOp())
        te.add(scf.IfOp(mine, [], then.ops))

    # Then every id in order: a nest over the ids' dims, carrying both offsets.
    with ExitStack() as nest:
        te, goff, ioff = e, c0, c0
        for d in range(k):
            te, i = nest.enter_context(_loop(te, c0, sizes[d], c1))
            goff, ioff = at(te, goff, gs[d], i), at(te, ioff, is_[d], i)
        scatter_row(te, goff, ioff)

    if init is not None:
        # Then the starting table is added to them, as eager adds the two
        # gradients (the sum in the table's dtype first).
        src, ss = mems[2]

        def add_start(ce: LoopEmitter, w: SSAValue, c: SSAValue) -> None:
            where = table(ce, out[1], w, c)
            first = ce.load(src, [table(ce, ss, w, c)], et)
            ce.store(ce.add(arith.AddfOp(first, ce.load(out[0], [where], et))), out[0], [where], et)

        rows_loop(add_start)
    fn, sig = finish_kernel(
        name, e, entry, arg_types, body, plan, rank, out_specs, target,
        reduce_dims=tuple(range(k)),
    )  # fmt: skip
    # The body runs once per (id, column) and per (row, column), not per element
    # of ids x rows x columns: the thread split should see that work.
    rows_n = max(out_type.get_shape()[0], 1)
    return fn, dataclasses.replace(sig, cost=sig.cost / rows_n)
