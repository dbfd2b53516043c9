"""Named pass pipelines: what `fusec-opt --fuse` and `--emit=<stage>` stand for.

Each is a `-p` pipeline string, so `fusec-opt --fuse x.mlir` is exactly
`fusec-opt -p <FUSE_PIPELINE> x.mlir`.
"""

FUSE_PIPELINE = "decompose,broadcasting-chunk,lower-broadcasting-chunk,fuse"
"""The default fusion pipeline: split biases out of linear/addmm, move chunks above
their pointwise producers (as the seeds' BroadcastingChunk) and lower what is left
to per-operand chunks, then fuse."""

EMIT_PIPELINES: dict[str, tuple[str, str]] = {}
"""`--emit` stage -> (passes to append after the user's pipeline, output target)."""

_LOOPS = "outline-groups,lower-group-to-loops"
_TO_LLVM = (
    "convert-scf-to-cf,convert-arith-to-llvm,convert-math-to-llvm{target=cpu},"
    "convert-memref-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts"
)
EMIT_PIPELINES["loops"] = (_LOOPS, "mlir")
EMIT_PIPELINES["llvm"] = (f"{_LOOPS},{_TO_LLVM}", "mlir")
EMIT_PIPELINES["llvmir"] = (f"{_LOOPS},{_TO_LLVM}", "llvmir")
_TO_NVVM = _TO_LLVM.replace("{target=cpu}", "{target=nvptx}")
EMIT_PIPELINES["ptx"] = (_LOOPS.replace("loops", "loops{target=nvptx}") + "," + _TO_NVVM, "ptx")
"""PTX for sm_80; `-t 'ptx{arch=sm_90}'` picks another architecture."""
