"""What a compiled kernel is, as plain data: its code and how to call it.

`KernelSignature` (with `OperandSpec`, `OutputSpec`, `CatExit`) is what the
lowering (`fusec.passes.lower_group_to_loops`) says of a kernel's arguments;
`KernelArtifact` is a kernel's code with its signature. The executors and the
kernel cache read them; they need no IR, so a warm start loads a kernel from its
cache entry without importing xDSL.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

TILED_CPU = "cpu-tiled"
"""The target that builds a CPU kernel's tiled variant (`build_kernel`): the same
signature and results, plus a tiled loop nest for launches with a transposed or
an expanded operand (`fusec.passes.lowering.cpu_loop_nest`). It doubles or triples the kernel's
compile time, so the runtime builds it only for a layout that needs it (its
artifact's target is "cpu": it runs as any CPU kernel)."""

_GPU_ARCH = re.compile(r"sm_\d+[af]?")


def is_gpu_target(target: str) -> bool:
    """True for an NVIDIA architecture name ("sm_80", "sm_90a", ...)."""
    return _GPU_ARCH.fullmatch(target) is not None


@dataclass(frozen=True)
class OperandSpec:
    """A tensor the kernel reads: group input `input` seen through `views`
    (("chunk", index, chunks, dim), ("narrow", dim, start, length), ...)."""

    input: int
    views: tuple[tuple[object, ...], ...]
    dtype: str


@dataclass(frozen=True)
class OutputSpec:
    """A kernel output: its dtype and which dims are statically 1 (never broadcast)."""

    dtype: str
    static_shape: tuple[int, ...]


@dataclass(frozen=True)
class CatExit:
    """A concat exit (`fuse-concat-exits`): group result `result` (in yield order)
    is the concatenation along `dim` of kernel outputs `parts`, all of one shape.
    The runtime allocates the result once and hands the kernel `narrow` views of it
    as those outputs, so the kernel itself only ever writes part-shaped tensors."""

    result: int
    dim: int
    parts: tuple[int, ...]


@dataclass(frozen=True)
class KernelSignature:
    """Plain-data description of a kernel's arguments (picklable).

    Argument order (cpu): begin, end, sizes[rank'], then for each operand and
    output: data pointer and strides[rank'], then the scalars. `rank'` is
    `max(rank, 1)`. On nvptx `begin, end` is replaced by the total element count.

    nvptx launch ABI (`target="nvptx"`; the artifact's PTX `.entry` is named
    `KernelArtifact.name`, for `cuModuleGetFunction`). `kernelParams[k]` points
    at a host value of the listed PTX parameter type, in this order:

    | parameter                       | PTX type    | value                                   |
    |---------------------------------|-------------|-----------------------------------------|
    | numel                           | .u64        | prod(sizes); 0 means nothing to do      |
    | sizes[rank']                    | .u64 each   | the index space (rank 0: [1])           |
    | per operand, then per output:   |             |                                         |
    |   data                          | .u64 (.ptr) | device address of the view's element 0  |
    |   strides[rank']                | .u64 each   | in elements, 0 on broadcast dims        |
    | scalars (`scalars` order)       | f64: .f64, i64: .u64, i1: .u8 (0 or 1)                |
    | zero-division flag (if any)     | .u64 (.ptr) | a zeroed device byte; 1 after: raise    |

    Element types are `OperandSpec.dtype` / `OutputSpec.dtype` (i1 is one
    byte). Any 1-D launch is correct: each thread grid-strides over the
    flattened row-major index `ctaid.x * ntid.x + tid.x` up to numel (in 32-bit
    math when numel and every offset are below 2^30, else 64-bit: the kernel
    checks its parameters and picks; `lanes` consecutive elements per trip
    where every access along the innermost dim is an aligned vector),
    e.g. 256 threads and min(ceil(numel / (256 * lanes)), 32 * SMs) blocks; no
    shared memory. Operands and outputs are `noalias`: an output must not
    overlap an input.

    `outputs` are the tensors the kernel writes; the group returns the same ones
    unless there are `exits`: each `CatExit` turns its `parts` into one result,
    and the outputs in no exit fill the other result positions in order
    (`fusec.runtime.operands.prepare` does this for every executor).
    """

    rank: int
    inputs: tuple[str, ...]
    operands: tuple[OperandSpec, ...]
    scalars: tuple[tuple[int, str], ...]
    outputs: tuple[OutputSpec, ...]
    target: str = "cpu"
    exits: tuple[CatExit, ...] = ()
    reduce_dims: tuple[int, ...] = ()
    """Index-space dims a reduction kernel reduces
    (`fusec.passes.lowering.reduction_kernel`): its outermost loop, the one
    [begin, end) splits, is the first dim not among them (on nvptx, one block
    per index of the kept dims)."""
    zero_division_flag: bool = False
    """The kernel divides integers: one more argument after the scalars, a
    pointer to a byte the kernel sets to 1 when a divisor was 0. The kernel never
    traps (it divides by 1 instead); the host raises eager's
    `RuntimeError: ZeroDivisionError` when the byte is set (on nvptx a `.u64`
    device pointer, the last parameter)."""
    lanes: int = 1
    """(nvptx pointwise) Consecutive elements a thread takes per trip of its
    loop when the layouts allow one vector access per operand
    (`fusec.passes.lowering.gpu_loop`): the grid is sized for numel / lanes threads."""
    cost: float = 1.0
    """Estimated nanoseconds of work per index-space element on one core
    (`fusec.passes.lowering.kernel_cost`): the CPU executor splits a call over threads
    only when its work pays for the launch."""

    @property
    def loop_rank(self) -> int:
        return max(self.rank, 1)

    def parallel_extent(self, space: Sequence[int]) -> int:
        """The size of the dim [begin, end) ranges over (1 when all are reduced)."""
        if not self.reduce_dims:
            return space[0] if space else 1
        kept = [s for d, s in enumerate(space) if d not in self.reduce_dims]
        return kept[0] if kept else 1


@dataclass(frozen=True)
class KernelArtifact:
    """A compiled kernel: `code` is optimized LLVM IR text for "cpu", PTX for an
    "sm_XX" target; `signature` says how to call it. Picklable.

    GPU artifacts: `code` is a PTX module (`.target sm_XX`, libdevice inlined)
    whose `.entry` named `name` a CUDA runtime loads with `cuModuleLoadData` +
    `cuModuleGetFunction(name)` and launches with `cuLaunchKernel` on any 1-D
    grid; the parameter list (numel, sizes, then pointer + strides per operand
    and output, then scalars; all index values 64-bit) is spelled out in
    `KernelSignature`'s docstring."""

    name: str
    target: str
    code: bytes
    signature: KernelSignature
