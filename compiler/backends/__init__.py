"""fusec's machine-code backends: LLVM IR to host code through llvmlite's JIT,
PTX through llvmlite's NVPTX target, and finding the CUDA toolchain (libdevice,
nvJitLink).

May import only `fusec.backends` and `fusec.runtime` (never xDSL-level
modules), so the runtime can load kernels without the compiler.
"""
