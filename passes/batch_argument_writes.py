"""batch-argument-writes: the writes a graph ends with, into its arguments, as
one PyTorch call.

AOTAutograd hands a backend the in-place updates of buffers that need no
gradient (batch norm's running statistics and `num_batches_tracked`) as
`copy_`s into the graph's inputs at its end, one per buffer: ResNet-18's
training forward makes 60 `aten::copy_` and 20 `aten::add` calls for them,
where Inductor writes them in its kernels. The trailing writes become one
`torch._foreach_copy_`, and the `x += c` among them (`copy_(x, add(x, c))`)
one `torch._foreach_add_` per number:

    %n = aten.add %nbt, %c1 : tensor<i64>, i64 -> tensor<i64>
    %t = aten.to %m : tensor<8xf32> -> tensor<8xf32>
    ...
    aten.copy_ %rm, %t : tensor<8xf32>, tensor<8xf32>
    aten.copy_ %nbt, %n : tensor<i64>, tensor<i64>
    func.return ...
->
    aten.foreach_copy_ (%rm), (%m) : (tensor<8xf32>), (tensor<8xf32>)
    aten.foreach_add_ (%nbt) value = 1 : i64 : (tensor<i64>)
    func.return ...

A write moves to the end only past ops that read no argument (nor anything
that may alias one): the ops between the trailing writes compute what they
write. A same-type `aten.to` that only a write reads (how the importer spells
`copy_`) is the value itself. Destinations are distinct arguments, sources
fresh tensors of their types.
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects.aten import AddOp, CopyOp, ForeachAddOp, ForeachCopyOp, ToOp
from fusec.passes.aliasing import ARGUMENT, UNKNOWN, alias_root
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.traits import MemoryWriteEffect


def _fresh(v: SSAValue) -> bool:
    return alias_root(v) not in (ARGUMENT, UNKNOWN)


def _unwrap_copy_cast(op: CopyOp) -> None:
    """`copy_(x, to(v))` with `to` a same-type copy read only here -> `copy_(x, v)`."""
    src = op.src
    cast = src.owner if isinstance(src.owner, ToOp) else None
    if cast is None or not src.has_one_use() or cast.input.type != src.type:
        return
    op.operands = [op.dst, cast.input]
    Rewriter.erase_op(cast)


def _increment(op: CopyOp) -> tuple[arith.ConstantOp, AddOp] | None:
    """`copy_(x, add(x, c))`, the add read only here: (the constant, the add)."""
    add = op.src.owner
    if not isinstance(add, AddOp) or add.alpha is not None or not add.result.has_one_use():
        return None
    number = add.rhs.owner
    if add.lhs is not op.dst or not isinstance(number, arith.ConstantOp):
        return None
    # The add moves to the end: nothing may write `x` in between (other
    # arguments are other buffers; a view's or an unknown tensor's root is not).
    o = add.next_op
    while o is not None and o is not op:
        if isinstance(o, CopyOp) and (o.dst is op.dst or not isinstance(o.dst, BlockArgument)):
            return None
        o = o.next_op
    return number, add


def _trailing_writes(block: Block) -> list[CopyOp]:
    """The writes into distinct arguments, of fresh values of their types, that
    the block ends with, past ops that read no argument; in program order."""
    writes: list[CopyOp] = []
    seen: set[SSAValue] = set()
    op = block.last_op.prev_op if block.last_op is not None else None
    while op is not None:
        if isinstance(op, CopyOp):
            dst, src = op.dst, op.src
            if not (
                isinstance(dst, BlockArgument)
                and dst not in seen
                and isinstance(src.type, TensorType)
                and src.type == dst.type
                and _fresh(src)
            ):
                break
            seen.add(dst)
            writes.append(op)
        elif op.has_trait(MemoryWriteEffect) or any(
            isinstance(v.type, TensorType) and not _fresh(v) for v in op.operands
        ):
            break
        op = op.prev_op
    writes.reverse()
    return writes


def batch_writes(fn: func.FuncOp) -> None:
    """Rewrites `fn`'s trailing writes (module docstring)."""
    block = fn.body.block
    for op in [o for o in block.ops if isinstance(o, CopyOp)]:
        _unwrap_copy_cast(op)
    writes = _trailing_writes(block)
    ret = block.last_op
    if len(writes) < 2 or ret is None:
        return
    copies: list[CopyOp] = []
    adds: dict[Attribute, list[CopyOp]] = {}
    increments: list[AddOp] = []
    for w in writes:
        inc = _increment(w)
        if inc is None:
            copies.append(w)
        else:
            adds.setdefault(inc[0].value, []).append(w)
            increments.append(inc[1])
    new: list[Operation] = []
    if copies:
        new.append(ForeachCopyOp([w.dst for w in copies], [w.src for w in copies]))
    for value, group in adds.items():
        new.append(ForeachAddOp([w.dst for w in group], value))
    block.insert_ops_before(new, ret)
    for w in writes:
        Rewriter.erase_op(w)
    for add in increments:
        Rewriter.erase_op(add)


@dataclass(frozen=True)
class BatchArgumentWritesPass(ModulePass):
    """The writes into arguments a function ends with become one
    `aten.foreach_copy_` (and one `aten.foreach_add_` per number added in
    place); see the module docstring.

    fusec-opt -p batch-argument-writes
    """

    name = "batch-argument-writes"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.walk():
            if isinstance(fn, func.FuncOp) and fn.body.blocks:
                batch_writes(fn)
