"""What the lowering passes share (as xDSL's `loop_nest_lowering_utils` beside
its transforms): `passes/` holds one pass per file, and the builders those passes
call live here.

- `emitter`: `LoopEmitter`, the loop-level ops being built, with PyTorch's
  loads, stores and dtype conversions; compute and storage types.
- `scalar_ops` / `scalar_ops_nvptx`: the scalar semantics of every pointwise
  `aten` op, one method per op, one class per target (`CpuScalarOps`, and
  `NvptxScalarOps` overriding only where CUDA eager differs), found by op class
  (`POINTWISE_METHODS`; `pointwise.emit_pointwise` picks the target's); `operand_dtypes` (common dtype, op-math operands,
  result rounding) and `scalar_math` (powi, pow by a scalar, floor division)
  are what they compose.
- `kernel_args`: a kernel's operands, outputs, argument layout and signature.
- `cpu_loop_nest`, `gpu_loop`: the CPU nest (plain and tiled) and the GPU
  grid-stride loop.
- `reduction_kernel` (the builder), `reduction_values` (accumulators, group
  values), `reduction_rows` (CPU row nests, column accumulators),
  `reduction_gpu` (warp rows), `reduction_domain` (what one kernel reduces).
- `kernel_cost`: the per-element cost estimate.
- `math_expansions` (by `math` op name), `math_polynomials` (the emitter, exp,
  log, tanh, pow), `math_sincos`, `math_erf`: the CPU expansions of
  `convert-math-to-llvm`.
"""
