"""lower-group-to-loops: an outlined group becomes a loop nest over its output
index space, at the loop level (upstream scf/memref/arith/math).

Every tensor the kernel touches is a flat `memref<?xT>` plus one runtime stride
per index-space dim, so broadcasting (stride 0), transposes, slices and chunks
are all just strides and a base pointer computed by the host; sizes are runtime
arguments too. One kernel therefore serves every shape of a canonical key.

    func.func @k(%x: tensor<4x3xf32>) -> tensor<4x3xf32> attributes {fusion.kernel} {
      %0 = aten.exp %x : tensor<4x3xf32> -> tensor<4x3xf32>
      func.return %0 : tensor<4x3xf32>
    }
->
    func.func @k(%begin: index, %end: index, %n0: index, %n1: index,
                 %x: memref<?xf32>, %xs0: index, %xs1: index,
                 %o: memref<?xf32>, %os0: index, %os1: index) attributes {fusion.kernel} {
      scf.for %i0 = %begin to %end step %c1 {
        scf.for %i1 = %c0 to %n1 step %c1 {
          ... memref.load %x[...] ... math.exp ... memref.store ... %o[...]
        }
      }
      func.return
    }

With `target="nvptx"` the nest is a grid-stride loop over the flattened
index, the thread id read from NVVM special registers (`fusec.passes.lowering.gpu_loop`:
in i32 when numel and every offset fit, 4 elements per trip when the innermost
dim's accesses are aligned vectors, else in 64-bit index math).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.passes.lowering.cpu_loop_nest import cpu_loops
from fusec.passes.lowering.emitter import DYN, INDEX, LoopEmitter, dtype_name, storage_type
from fusec.passes.lowering.gather import cpu_only, gather
from fusec.passes.lowering.kernel_args import (
    CAT_NOT_EXIT,
    VIEW_OPS,
    check_dtype,
    exit_outputs,
    finish_kernel,
    kernel_entry,
    plan_kernel,
    storage_type_named,
    zero_unit_strides,
)
from fusec.passes.lowering.operand_dtypes import divides_integers
from fusec.passes.lowering.pointwise import emit_pointwise
from fusec.passes.lowering.scatter import build_scatter_kernel, scatter_op
from fusec.runtime.kernel_signature import KernelSignature, OutputSpec
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import DiagnosticException


def build_loop_kernel(
    name: str,
    body: Block,
    result_types: Sequence[Attribute],
    target: str = "cpu",
    tile: bool = False,
    vector_bits: int = 256,
) -> tuple[func.FuncOp, KernelSignature]:
    """Builds the loop-level kernel of a group body (block args = group inputs,
    terminator yields the outputs), and its plain-data signature. `tile` (cpu)
    adds the tiled nest for transposed operands (`fusec.passes.lowering.cpu_loop_nest`),
    which transposes blocks in `vector_bits` registers."""
    if scatter_op(body) is not None:
        return build_scatter_kernel(name, body, result_types, target)
    if any(op.has_trait(aten.Reduction) for op in body.ops):
        from fusec.passes.lowering.reduction_kernel import build_reduction_kernel

        if any(divides_integers(op) for op in body.ops):
            # Its divisors could be 0, and a reduction kernel has no flag to say so:
            # the group runs through PyTorch, which raises eager's error.
            raise DiagnosticException("lower-group-to-loops: integer division in a reduction group")

        return build_reduction_kernel(name, body, result_types, target)
    plan = plan_kernel(body)
    out_values, outs, exits = exit_outputs(body, result_types)
    yielded = body.last_op.operands if body.last_op is not None else ()
    exit_cats = {yielded[e.result].owner for e in exits}
    rank = max([t.get_num_dims() for t in outs if isinstance(t, TensorType)], default=0)
    lrank = max(rank, 1)
    gpu = target != "cpu"

    # Arguments.
    arg_types: list[Attribute] = [INDEX] if gpu else [INDEX, INDEX]
    arg_types += [INDEX] * lrank
    mem_types: list[Attribute] = []
    for spec in plan.operands:
        mem_types.append(MemRefType(storage_type_named(spec.dtype), [DYN]))
    out_specs: list[OutputSpec] = []
    for t in outs:
        if not isinstance(t, TensorType):
            raise DiagnosticException(
                f"lower-group-to-loops: a kernel result of type {t} is not a tensor "
                "(groups yield tensors; a scalar-only group has no index space)"
            )
        et = t.get_element_type()
        check_dtype(et)
        mem_types.append(MemRefType(storage_type(et), [DYN]))
        out_specs.append(OutputSpec(dtype_name(et), tuple(t.get_shape())))
    for mt in mem_types:
        arg_types += [mt] + [INDEX] * lrank
    scalar_types = [body.args[i].type for i, _ in plan.scalars]
    arg_types += scalar_types
    entry, a, sizes, mems, pos = kernel_entry(arg_types, len(mem_types), lrank, gpu)
    scalar_args = a[pos : pos + len(scalar_types)]

    e = LoopEmitter()
    c0 = e.const(0, INDEX)
    c1 = e.const(1, INDEX)
    zero_unit_strides(plan, mems, lrank, c0)

    flag_arg: list[SSAValue] = []

    def zero_division_flag() -> SSAValue:
        """The byte argument (after the scalars) set when an integer divisor was 0."""
        if not flag_arg:
            flag_arg.append(entry.insert_arg(MemRefType(inf.I8, [DYN]), len(entry.args)))
            arg_types.append(flag_arg[0].type)
        return flag_arg[0]

    def emit_body(b: LoopEmitter, refs: Sequence[SSAValue], offsets: Sequence[SSAValue]) -> None:
        """The group's body at one index: loads (of `refs`), pointwise ops, stores."""
        vals: dict[SSAValue, SSAValue] = {}
        for v, k in plan.operand_of.items():
            et = v.type.get_element_type()  # type: ignore[attr-defined]
            vals[v] = b.load(refs[k], [offsets[k]], et)
        for v, k in plan.scalar_of.items():
            vals[v] = scalar_args[k]
        for op in body.ops:
            if isinstance(op, VIEW_OPS):
                continue
            if op is body.last_op:
                break
            if op in exit_cats:  # written part by part below
                continue
            if isinstance(op, aten.CatOp):
                raise DiagnosticException(CAT_NOT_EXIT)
            if isinstance(op, aten.EmbeddingOp):
                table, indices = plan.gathers[op]
                vals[op.result] = gather(
                    b,
                    op,
                    (refs[table], offsets[table]),
                    (refs[indices], offsets[indices]),
                    zero_division_flag(),
                    c0,
                )
                continue
            if isinstance(op, arith.ConstantOp) and not isinstance(op.result.type, TensorType):
                # A Python-scalar literal the fuser cloned into the group: same value and
                # type as a scalar kernel argument would have.
                vals[op.result] = b.add(arith.ConstantOp(op.value, op.result.type))
                continue
            if not op.has_trait(aten.Pointwise):
                raise DiagnosticException(f"lower-group-to-loops: {op.name} is not pointwise")
            et = op.results[0].type.get_element_type()
            check_dtype(et)
            vals[op.results[0]] = emit_pointwise(b, op, [vals[o] for o in op.operands])
        # Only CPU kernels record zero divisors (`NvptxScalarOps.flag_zero_divisor`).
        if b.zero_divisors:
            hit = b.zero_divisors[0]
            for z in b.zero_divisors[1:]:
                hit = b.add(arith.OrIOp(hit, z))
            # Only ever stores 1, so threads racing on the byte agree.
            store = memref.StoreOp.get(b.const(1, inf.I8), zero_division_flag(), [c0])
            b.add(scf.IfOp(hit, [], [store, scf.YieldOp()]))
        for k, (v, t) in enumerate(zip(out_values, outs, strict=True)):
            j = len(plan.operands) + k
            b.store(vals[v], refs[j], [offsets[j]], t.get_element_type())  # type: ignore[attr-defined]

    lanes = 1
    if gpu:
        cpu_only(plan)
        from fusec.passes.lowering.gpu_loop import gpu_loops

        broadcast_last = [strides[-1] is c0 for _, strides in mems]
        lanes = gpu_loops(e, a[0], sizes, mems, broadcast_last, emit_body)
    else:
        e.ops.extend(
            cpu_loops(
                a[0],
                a[1],
                sizes,
                mems,
                len(plan.operands),
                c0,
                c1,
                lambda ops, refs, offs: emit_body(LoopEmitter(ops), refs, offs),
                tile and not plan.gathers,
                vector_bits,
            )
        )
    return finish_kernel(
        name, e, entry, arg_types, body, plan, rank, out_specs, target,
        exits=tuple(exits), zero_division_flag=bool(flag_arg), lanes=lanes,
    )  # fmt: skip


# ----------------------------------------------------------------- the pass


class LowerKernelFunc(RewritePattern):
    """An outlined kernel over tensors becomes its loop-level nest.

    func.func @k(%x: tensor<4xf32>) -> tensor<4xf32> attributes {fusion.kernel}
    -> func.func @k(%begin: index, %end: index, %n0: index, %x: memref<?xf32>, ...)
    """

    def __init__(self, target: str, tile: bool = False, vector_bits: int = 256):
        self.target = target
        self.tile = tile
        self.vector_bits = vector_bits

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /):
        if "fusion.kernel" not in op.attributes or not op.function_type.outputs.data:
            return
        try:
            fn, _ = build_loop_kernel(
                op.sym_name.data,
                op.body.block,
                op.function_type.outputs.data,
                self.target,
                self.tile,
                self.vector_bits,
            )
        except DiagnosticException as e:
            from fusec.passes.op_locations import LocatedError, op_location

            raise LocatedError(f"{op_location(op)}: error: {e}") from None
        rewriter.replace(op, fn)


@dataclass(frozen=True)
class LowerGroupToLoopsPass(ModulePass):
    """Lowers every outlined kernel (`func.func ... attributes {fusion.kernel}`)
    to a loop nest over its output index space; see the module docstring."""

    name = "lower-group-to-loops"
    target: str = "cpu"
    """"cpu" (a loop nest over [begin, end) of the outer dim) or "nvptx" (a
    grid-stride loop in three versions: 32-bit with vector lanes, 32-bit, 64-bit;
    `fusec.passes.lowering.gpu_loop`)."""
    tile: bool = False
    """(cpu) Also a tiled nest, run on launches with a transposed operand: the
    kernel the runtime builds for such layouts (`fusec.codegen.kernel.TILED_CPU`)."""
    vector_bits: int = 256
    """(cpu, tile) The register width a transposed operand's blocks are
    transposed in: 4 x 4 f64 blocks at 256 (AVX2), 8 x 8 at 512 (AVX-512; what
    the runtime asks for on such hosts, `fusec.backends.llvm_jit.host_vector_width`);
    8 x 8 for 32-bit and narrower types at either (`cpu_loop_nest.MAX_LANES`)."""

    def __post_init__(self) -> None:
        if self.target not in ("cpu", "nvptx"):
            raise ValueError(
                f"lower-group-to-loops: unknown target {self.target!r} (expected cpu or nvptx)"
            )

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            LowerKernelFunc(self.target, self.tile, self.vector_bits), apply_recursively=False
        ).rewrite_module(op)
