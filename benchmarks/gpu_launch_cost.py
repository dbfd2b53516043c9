"""Host cost of one fused CUDA launch, part by part (needs a CUDA device):

    python benchmarks/gpu_launch_cost.py

The LSTM tail on 64 elements: `CudaKernel.call` against the bare driver launch
of the same kernel and parameters, the output allocations, the stream and
context lookups, the plan key, and one eager op for scale (microseconds per
call, two rounds). Without a CUDA device it says so and exits 0.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from gpu import host_time  # noqa: E402
from reference_models import lstm_tail  # noqa: E402


def per_call(name: str, fn: Callable[[], object]) -> None:
    print(f"{name:32s} {host_time(fn, calls=5000) * 1e6:6.2f} us", flush=True)


def main() -> int:
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to measure")
        return 0
    import fusec
    from fusec.runtime import cuda

    torch.set_grad_enabled(False)
    g, c = torch.randn(1, 1024, device="cuda"), torch.randn(1, 256, device="cuda")
    f = fusec.compile(lstm_tail)
    f(g, c)
    (step,) = [s for s in f.last.program.all_steps() if s.kind == "kernel"]
    kernel = step.fn.kernel.func.__self__  # the provider's partial(kernel.call, ...)
    kernel.call([c, g])  # the group reads (cx, gates)
    (plan,) = [p for p in kernel._plans.values() if p]
    lib = cuda._libcuda()
    stream = cuda.current_stream(0)
    current = ctypes.c_void_p()
    for _ in range(2):
        per_call("kernel.call", lambda: kernel.call([c, g]))
        per_call(
            "raw cuLaunchKernel",
            lambda: lib.cuLaunchKernel(
                plan.function, plan.grid, 1, 1, plan.block, 1, 1, 0, stream,
                kernel._params.address, None,
            ),
        )  # fmt: skip
        per_call(
            "output allocations",
            lambda: [cuda._empty_strided_cuda(s, st, d) for s, st, d in plan.allocs],
        )
        per_call("current_stream", lambda: cuda.current_stream(0))
        per_call("cuCtxGetCurrent", lambda: lib.cuCtxGetCurrent(ctypes.byref(current)))
        per_call(
            "plan key",
            lambda: tuple(x for t in (c, g) for x in (t.shape, t.stride(), t.get_device())),
        )
        per_call("eager torch.sigmoid", lambda: torch.sigmoid(c))
        per_call("torch.empty", lambda: torch.empty(256, device="cuda"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
