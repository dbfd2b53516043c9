"""A kernel's arguments and signature, shared by the pointwise and the reduction
builders: which (group input, view chain) pairs it reads (`plan_kernel`), what it
writes (`exit_outputs`: a yielded `aten.cat` part by part), the entry block over
the `KernelSignature` argument layout (`kernel_entry`) and the finished function
(`finish_kernel`):

    (%begin, %end,                      cpu only; nvptx has %numel
     %n0, ..., %n{r-1},                 the index space's sizes
     %x: memref<?xT>, %xs0, ..., %xs{r-1},   per operand and output: data, strides
     %scalars...,                       Python-scalar inputs
     [%flag: memref<?xi8>])             cpu: set when an integer divisor was 0
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.passes.lowering.emitter import LoopEmitter, dtype_name, storage_type
from fusec.passes.lowering.kernel_cost import element_cost
from fusec.runtime.kernel_signature import CatExit, KernelSignature, OperandSpec, OutputSpec
from xdsl.dialects import func
from xdsl.dialects.builtin import IntegerAttr, TensorType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue
from xdsl.utils.exceptions import DiagnosticException

VIEW_OPS = (
    aten.ChunkOp,
    aten.SplitOp,
    aten.NarrowOp,
    aten.SliceOp,
    aten.ExpandOp,
    aten.UnsqueezeOp,
    aten.SqueezeOp,
    aten.PermuteOp,
    aten.TransposeOp,
    aten.ViewOp,
    aten.ReshapeOp,
)


def view_step(op: Operation, result_index: int) -> tuple[object, ...]:
    def p(name: str) -> int:
        attr = op.properties[name]
        assert isinstance(attr, IntegerAttr)
        return attr.value.data

    match op:
        case aten.ChunkOp():
            return ("chunk", result_index, p("chunks"), p("dim"))
        case aten.SplitOp():
            d = inf.normalize_dim(p("dim"), inf.tensor_type(op.input.type).get_num_dims())
            sizes = [inf.tensor_type(r.type).get_shape()[d] for r in op.results]
            start = sum(sizes[:result_index])
            return ("narrow", d, start, sizes[result_index])
        case aten.NarrowOp():
            return ("narrow", p("dim"), p("start"), p("length"))
        case aten.SliceOp():
            return ("slice", p("dim"), p("start"), p("end"), p("step"))
        case aten.ExpandOp():
            return ("rank", inf.tensor_type(op.results[0].type).get_num_dims())
        case aten.UnsqueezeOp():
            return ("unsqueeze", p("dim"))
        case aten.SqueezeOp():
            return ("squeeze",) if op.dim is None else ("squeeze", op.dim.value.data)
        case aten.PermuteOp():
            return ("permute", tuple(op.dims.get_values()))
        case aten.TransposeOp():
            return ("transpose", p("dim0"), p("dim1"))
        case _:
            return ("reshape", inf.reshape_sizes(inf.tensor_type(op.results[0].type).get_shape()))


@dataclass
class KernelPlan:
    operands: list[OperandSpec]
    operand_of: dict[SSAValue, int]
    scalars: list[tuple[int, str]]
    scalar_of: dict[SSAValue, int]
    gathers: dict[Operation, tuple[int, int]] = field(default_factory=dict)
    """Per `aten.embedding`: its table's operand, read as row 0 broadcast over
    the index space (the kernel adds `index * row size`), and its indices'
    operand, read with a trailing dim of 1 (`gather_operands`)."""


def plan_kernel(block: Block) -> KernelPlan:
    """Which (input, view chain) pairs the kernel reads, and its scalar inputs."""
    chains: dict[SSAValue, tuple[int, tuple[tuple[object, ...], ...]]] = {}
    scalars: list[tuple[int, str]] = []
    scalar_of: dict[SSAValue, int] = {}
    for i, arg in enumerate(block.args):
        if isinstance(arg.type, TensorType):
            chains[arg] = (i, ())
        else:
            scalar_of[arg] = len(scalars)
            scalars.append((i, dtype_name(arg.type)))
    for op in block.ops:
        if isinstance(op, VIEW_OPS):
            src = op.operands[0]
            if src not in chains:
                raise DiagnosticException(
                    f"lower-group-to-loops: {op.name} of a computed value is not supported "
                    "(only views of group inputs)"
                )
            i, views = chains[src]
            for k, r in enumerate(op.results):
                chains[r] = (i, (*views, view_step(op, k)))
    operands: list[OperandSpec] = []
    operand_of: dict[SSAValue, int] = {}
    gathers: dict[Operation, tuple[int, int]] = {}
    for op in block.ops:
        uses = [v for v in op.operands if v in chains]
        if isinstance(op, VIEW_OPS):
            continue
        if isinstance(op, aten.EmbeddingOp):
            gathers[op] = gather_operands(op, chains, operands)
            continue
        for v in uses:
            if v not in operand_of:
                i, views = chains[v]
                et = v.type.get_element_type()
                operand_of[v] = len(operands)
                operands.append(OperandSpec(i, views, dtype_name(et)))
    return KernelPlan(operands, operand_of, scalars, scalar_of, gathers)


def gather_operands(
    op: aten.EmbeddingOp,
    chains: dict[SSAValue, tuple[int, tuple[tuple[object, ...], ...]]],
    operands: list[OperandSpec],
) -> tuple[int, int]:
    """The operands of a lookup: its table's row 0 (`[1, n]`, broadcast over the
    index space; the kernel reads row `i` at `i * n` past it, the guard having
    checked the table is contiguous) and its indices with a trailing dim of 1."""
    table, indices = op.weight, op.indices
    if table not in chains or chains[table][1] or indices not in chains:
        raise DiagnosticException(
            "lower-group-to-loops: aten.embedding reads a group input as its table "
            "and a group input (or a view of one) as its indices"
        )
    i, _ = chains[table]
    rank = inf.tensor_type(indices.type).get_num_dims()
    j, views = chains[indices]
    picked = (
        OperandSpec(i, (("narrow", 0, 0, 1),), dtype_name(inf.tensor_type(table.type).get_element_type())),
        OperandSpec(j, (*views, ("unsqueeze", rank)), dtype_name(inf.tensor_type(indices.type).get_element_type())),
    )  # fmt: skip
    operands.extend(picked)
    return len(operands) - 2, len(operands) - 1


def zero_unit_strides(
    plan: KernelPlan, mems: Sequence[tuple[SSAValue, list[SSAValue]]], lrank: int, c0: SSAValue
) -> None:
    """Makes the stride of every operand dim that is statically 1 (or that
    broadcasting adds in front) the constant `c0`: the operand reads its one
    element at every index of that dim, and a constant 0 stride lets LLVM hoist
    the load and keep the loop vectorized, where a runtime stride of 0 defeats its
    stride-1 versioning. A lookup's table is read as its row 0 (`[1, n]`) and its
    indices with a trailing dim of 1 (`gather_operands`)."""
    shapes = [(inf.tensor_type(v.type).get_shape(), k) for v, k in plan.operand_of.items()]
    for op, (table, indices) in plan.gathers.items():
        assert isinstance(op, aten.EmbeddingOp)
        shapes.append(((1, inf.tensor_type(op.weight.type).get_shape()[1]), table))
        shapes.append(((*inf.tensor_type(op.indices.type).get_shape(), 1), indices))
    for shape, k in shapes:
        lead = lrank - len(shape)
        for d in range(lrank):
            if d < lead or shape[d - lead] == 1:
                mems[k][1][d] = c0


def check_dtype(t: Attribute) -> None:
    if t not in inf.DTYPES:
        raise DiagnosticException(f"lower-group-to-loops: dtype {t} is not supported")


CAT_NOT_EXIT = (
    "lower-group-to-loops: aten.cat inside a group must be an exit "
    "(its result used only by fusion.yield)"
)


def exit_outputs(
    body: Block, result_types: Sequence[Attribute]
) -> tuple[list[SSAValue], list[Attribute], list[CatExit]]:
    """The values the kernel writes and their types, and the group's cat exits.

    A yielded `aten.cat` is written part by part: each part is an output of its
    own, of the part's shape in the cat's dtype (the store casts, as `torch.cat`
    promotes), so the index space stays the parts' shape."""
    term = body.last_op
    assert term is not None
    values: list[SSAValue] = []
    types: list[Attribute] = []
    exits: list[CatExit] = []
    for k, (v, t) in enumerate(zip(term.operands, result_types, strict=True)):
        cat = v.op if isinstance(v, OpResult) else None
        if not isinstance(cat, aten.CatOp) or cat.parent_block() is not body:
            values.append(v)
            types.append(t)
            continue
        if any(u.operation is not term for u in cat.result.uses):
            raise DiagnosticException(CAT_NOT_EXIT)
        part_types = [p.type for p in cat.inputs]
        shapes = {tuple(pt.get_shape()) for pt in part_types}  # type: ignore[attr-defined]
        if len(shapes) != 1:
            raise DiagnosticException(
                "lower-group-to-loops: the parts of a cat exit must have one shape"
            )
        assert isinstance(t, TensorType)
        (shape,) = shapes
        dim = inf.normalize_dim(cat.dim.value.data, len(shape))
        parts: list[int] = []
        for p in cat.inputs:
            parts.append(len(values))
            values.append(p)
            types.append(TensorType(t.get_element_type(), shape))
        exits.append(CatExit(k, dim, tuple(parts)))
    return values, types, exits


def kernel_entry(
    arg_types: list[Attribute], n_mems: int, lrank: int, gpu: bool
) -> tuple[Block, list[SSAValue], list[SSAValue], list[tuple[SSAValue, list[SSAValue]]], int]:
    """The kernel's entry block over the `KernelSignature` argument layout, and its
    arguments taken apart: (block, all args, sizes, (data, strides) per memref,
    index of the first scalar)."""
    entry = Block(arg_types=arg_types)
    a: list[SSAValue] = list(entry.args)
    pos = 1 if gpu else 2
    sizes = a[pos : pos + lrank]
    pos += lrank
    mems: list[tuple[SSAValue, list[SSAValue]]] = []
    for _ in range(n_mems):
        mems.append((a[pos], a[pos + 1 : pos + 1 + lrank]))
        pos += 1 + lrank
    return entry, a, sizes, mems, pos


def finish_kernel(
    name: str,
    e: LoopEmitter,
    entry: Block,
    arg_types: list[Attribute],
    body: Block,
    plan: KernelPlan,
    rank: int,
    out_specs: Sequence[OutputSpec],
    target: str,
    **extra: Any,
) -> tuple[func.FuncOp, KernelSignature]:
    """The kernel function holding `e`'s ops, and its signature (`extra` are the
    kind-specific fields: exits, the zero-division flag, reduced dims); shared by
    the pointwise and the reduction builders."""
    e.add(func.ReturnOp())
    cost = element_cost(e.ops)
    entry.add_ops(e.ops)
    fn = func.FuncOp(name, (arg_types, []), Region(entry))
    fn.attributes["fusion.kernel"] = UnitAttr()
    sig = KernelSignature(
        rank=rank,
        inputs=tuple(dtype_name(arg.type) for arg in body.args),
        operands=tuple(plan.operands),
        scalars=tuple(plan.scalars),
        outputs=tuple(out_specs),
        target=target,
        cost=cost,
        **extra,
    )
    return fn, sig


def storage_type_named(dtype: str) -> Attribute:
    for t in inf.DTYPES:
        if str(t) == dtype:
            return storage_type(t)
    raise DiagnosticException(f"lower-group-to-loops: dtype {dtype} is not supported")
