"""Named pass pipelines: what `fusec-opt --fuse` and `--emit=<stage>` stand for.

Each is a `-p` pipeline string, so `fusec-opt --fuse x.mlir` is exactly
`fusec-opt -p <FUSE_PIPELINE> x.mlir`.
"""

FUSE_PIPELINE = "functionalize,batch-argument-writes,fold-transpose-pairs,raise-linear,raise-attention,decompose,decompose-reductions,concat-matmul-sum,batch-shared-matmul,sink-views,slice-pointwise,broadcasting-chunk,lower-broadcasting-chunk,hoist-reductions,fuse,fuse-concat-exits,fuse,fuse-gathers,fuse-scatters,attention-query-layout,remove-outputs-used-only-in-size,share-group-kernels,fold-matmul-bias"
"""The default fusion pipeline: raise ATen's flattened N-d linears back to
`aten.linear` (`raise-linear`) and written-out attention to
`aten.scaled_dot_product_attention` (`raise-attention`), split biases out of
linear/addmm, expand
softmax/log_softmax/layer_norm into reductions + pointwise (reductions keep their
dims, so they can join groups), move chunks above
their pointwise producers (as the seeds' BroadcastingChunk; a pointwise op read
only through slices runs once per slice, `slice-pointwise`) and lower what is left
to per-operand chunks, then fuse; cats of a group's outputs join it as exits, and
a second `fuse` merges what the cat's uses had kept apart (the group can now move
past the cat's old position, as the seeds' backward LSTM needs); a group computing
attention's query then writes it in eager's `[b, t, h, d]` layout, so the
attention output's `[b, t, h * d]` reshape is a view (`attention-query-layout`).
An embedding lookup joins the kernel reading its rows (`fuse-gathers`), and an
embedding table's gradient is a kernel of its own (`fuse-scatters`).
First, in-place
writes that no alias observes become plain values (`functionalize`), the
writes into arguments a graph ends with one PyTorch call (`batch-argument-writes`:
AOTAutograd's buffer updates), and a
transpose of a transpose of the same dims is its source (`fold-transpose-pairs`,
AOTAutograd's backward of every linear has two); last, group
outputs read only for their size are dropped (`remove-outputs-used-only-in-size`),
and groups that are a repeated kernel but for a boundary (an unrolled loop's first
and last steps) become that kernel (`share-group-kernels`); bias adds nothing
fused with go back into their matrix products (`fold-matmul-bias`).
`sink-views` moves pointwise ops above the reshapes ATen graphs put around every
matmul, so a bias add and the activation after it fuse; `hoist-reductions` moves
a reduction of a pointwise result above the result's other readers, so a bias
gradient's column sum joins the group computing the gradient. Before fusion, an
unrolled loop's matrix products are regrouped: a sum of small-K products (a
shared weight's gradient over the steps) becomes one product over concatenated
operands (`concat-matmul-sum`), and thin products of one weight that do not
depend on each other (the steps' input projections) one product over stacked
rows (`batch-shared-matmul`)."""


def compile_pipeline(device: str = "cpu", lone_copies: bool = False) -> str:
    """What `fusec.compile` runs: `FUSE_PIPELINE`, then `guard` for kernels on
    `device`, so each group runs only on inputs it was specialized for and the
    unfused ops run otherwise. (`--fuse` stays guard-free.) A device with an
    index is quoted, since `:` is no token of a pipeline spec:

        compile_pipeline("cuda:1")   # "...,guard{device=\"cuda:1\"}"

    `lone_copies` (the graphs AOTAutograd hands `torch.compile`'s backend) runs
    `fuse{lone-copies=true}` and `fuse-concat-exits{lone-copies=true}`: a copy
    or a `cat` that fuses with nothing is a kernel.
    """
    value = device if device.isidentifier() else f'"{device}"'
    fuse = FUSE_PIPELINE
    if device != "cpu":  # only CPU kernels flag an index out of range
        fuse = fuse.replace(",fuse-gathers,fuse-scatters,", ",")
    if lone_copies:
        fuse = ",".join(
            f"{p}{{lone-copies=true}}" if p in ("fuse", "fuse-concat-exits") else p
            for p in fuse.split(",")
        )
    return f"{fuse},guard{{device={value}}}"


COMPILE_PIPELINE = compile_pipeline()
"""`compile_pipeline()` for CPU kernels."""

EMIT_PIPELINES: dict[str, tuple[str, str]] = {}
"""`--emit` stage -> (passes to append after the user's pipeline, output target)."""

_LOOPS = "outline-groups,lower-group-to-loops"
_TO_LLVM = (
    "convert-scf-to-cf,convert-arith-to-llvm,convert-memref-to-llvm,convert-cf-to-llvm,"
    "convert-func-to-llvm,convert-math-to-llvm{target=cpu},reconcile-unrealized-casts"
)
"""`fusec.codegen.kernel.llvm_pipeline("cpu")` (the math lowering last: see there)."""
EMIT_PIPELINES["loops"] = (_LOOPS, "mlir")
_CPU_LOOPS = f"{_LOOPS},sincos-fast-path"
EMIT_PIPELINES["llvm"] = (f"{_CPU_LOOPS},{_TO_LLVM}", "mlir")
EMIT_PIPELINES["llvmir"] = (f"{_CPU_LOOPS},{_TO_LLVM}", "llvmir")
_TO_NVVM = _TO_LLVM.replace("{target=cpu}", "{target=nvptx}")
EMIT_PIPELINES["ptx"] = (_LOOPS.replace("loops", "loops{target=nvptx}") + "," + _TO_NVVM, "ptx")
"""PTX for sm_80; `-t 'ptx{arch=sm_90}'` picks another architecture."""
