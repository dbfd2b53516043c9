"""Operand layouts whose innermost runs are, or are not, aligned vectors: what
a GPU kernel's lanes test (`fusec.passes.lowering.gpu_loop._lanes_fit`) must tell apart.
Shared by the kernels run on a GPU (`test_cuda_runtime.py`) and on the host
(`test_gpu_loop_on_host.py`)."""

from __future__ import annotations

import torch

ALIGNED = {"contiguous", "aligned_column_offset", "row_offset", "row_broadcast",
           "column_broadcast", "flat"}  # fmt: skip
"""The layouts whose every innermost run is an aligned vector of 4 lanes, on
storage aligned to 64 bytes (f64 has 2 lanes: `cols - 2` columns, a multiple
of 2, are aligned too)."""


def vector_layouts(
    dtype: torch.dtype, device: str = "cpu", rows: int = 8, cols: int = 12
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """(x, y) pairs over a rows x cols space (`cols` a multiple of 4), named
    for their layout."""

    def r(*shape: int) -> torch.Tensor:
        if dtype == torch.int8:
            return torch.randint(-9, 9, shape, dtype=dtype, device=device)
        if dtype == torch.uint8:
            return torch.randint(0, 256, shape, dtype=dtype, device=device)
        return torch.randn(*shape, device=device).to(dtype)

    n = rows * cols
    return {
        "contiguous": (r(rows, cols), r(rows, cols)),
        "cols_not_a_multiple_of_4": (r(rows, cols - 2), r(rows, cols - 2)),
        "odd_column_offset": (r(rows, cols + 1)[:, 1:], r(rows, cols)),
        "odd_row_stride": (r(rows, cols + 1)[:, :cols], r(rows, cols)),
        "aligned_column_offset": (r(rows, cols + 4)[:, 4:], r(rows, cols)),
        "row_offset": (r(rows + 2, cols)[2:], r(rows, cols)),
        "odd_row_offset": (r(n + 1)[1:].view(rows, cols), r(rows, cols)),
        "row_broadcast": (r(rows, cols), r(cols)),
        "column_broadcast": (r(rows, cols), r(rows, 1)),
        "runtime_stride_0": (r(rows, cols), r(rows, 4)[:, :1].expand(rows, cols)),
        "transposed": (r(cols, rows).t(), r(rows, cols)),
        "innermost_stride_2": (r(rows, 2 * cols)[:, ::2], r(rows, cols)),
        "flat": (r(n), r(n)),
        "flat_odd": (r(n + 3), r(n + 3)),
    }


LAYOUTS = list(vector_layouts(torch.float32, "meta"))
"""Their names (for parametrizing)."""
