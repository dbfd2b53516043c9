"""What the lowering passes share (as xDSL's `loop_nest_lowering_utils` beside
its transforms): `passes/` holds one pass per file, and the builders those passes
call live here.

- `emitter`: `LoopEmitter`, the list of loop-level ops being built, with loads,
  stores and PyTorch's dtype conversions; compute and storage types.
- `scalar_ops` / `scalar_ops_nvptx`: the scalar semantics of every pointwise
  `aten` op, one method per op, one class per target (`CpuScalarOps`, and
  `NvptxScalarOps` overriding only where CUDA eager differs).
- `kernel_args`: a kernel's operands, outputs, argument layout and signature.
- `cpu_loop_nest`, `gpu_loop`: the CPU nest (plain and tiled) and the GPU
  grid-stride loop; `reduction_kernel`, `reduction_rows`, `reduction_gpu`,
  `reduction_domain`: groups with reductions.
- `kernel_cost`: the per-element cost estimate; `math_polynomials`,
  `math_sincos`, `math_erf`: the CPU math expansions of `convert-math-to-llvm`.
"""
