"""The per-element cost estimate (`KernelSignature.cost`, `fusec.passes.lowering.kernel_cost`)
next to each kernel's measured single-thread time per element, and what a
parallel launch costs: the numbers the CPU executor's work split is tuned on.

    python benchmarks/kernel_cost.py [--log2 20] [--rounds 7]

Each workload (a single op gets a negation, so that it fuses) is compiled by fusec, its (first) kernel called bare on one
thread and timed with the thread's CPU time (steady on a shared machine); the
launch cost is a split call of a 64-element kernel (native OpenMP launch, and
the Python thread-pool fallback) minus its single-thread call.
"""

from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fusec
import torch
from fusec.runtime import cpu

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compile_bench import _bare_kernel, bias_gelu, chain8, lstm_tail  # noqa: E402

WORKLOADS: dict[str, tuple[Callable[..., Any], Callable[[int], list[torch.Tensor]]]] = {
    "add": (lambda x, y: -(x + y), lambda n: [torch.randn(n), torch.randn(n)]),
    "mul_add": (lambda x, y: x * y + x, lambda n: [torch.randn(n), torch.randn(n)]),
    "div": (lambda x, y: -(x / y), lambda n: [torch.randn(n), torch.randn(n)]),
    "exp": (lambda x: -x.exp(), lambda n: [torch.randn(n)]),
    "tanh": (lambda x: -x.tanh(), lambda n: [torch.randn(n)]),
    "erf": (lambda x: -x.erf(), lambda n: [torch.randn(n)]),
    "sin": (lambda x: -x.sin(), lambda n: [torch.randn(n)]),
    "sigmoid": (lambda x: -x.sigmoid(), lambda n: [torch.randn(n)]),
    "sqrt": (lambda x: torch.sqrt(x.abs()), lambda n: [torch.randn(n)]),
    "add_f64": (lambda x, y: -(x + y), lambda n: [torch.randn(n).double(), torch.randn(n).double()]),
    "exp_f64": (lambda x: -x.exp(), lambda n: [torch.randn(n).double()]),
    "tanh_f64": (lambda x: -x.tanh(), lambda n: [torch.randn(n).double()]),
    "erf_f64": (lambda x: -x.erf(), lambda n: [torch.randn(n).double()]),
    "sin_f64": (lambda x: -x.sin(), lambda n: [torch.randn(n).double()]),
    "bias_gelu": (bias_gelu, lambda n: [torch.randn(n // 1024, 1024), torch.randn(1024)]),
    "chain8": (chain8, lambda n: [torch.randn(n), torch.randn(n)]),
    "lstm_tail": (
        lstm_tail,
        lambda n: [torch.randn(n // 1024, 4096), torch.randn(n // 1024, 1024)],
    ),
}


def thread_seconds(fn: Callable[[], Any], rounds: int) -> float:
    """Median CPU seconds of the calling thread per call."""
    fn()
    reps = 1
    while True:
        t0 = time.thread_time()
        for _ in range(reps):
            fn()
        if time.thread_time() - t0 > 0.02:
            break
        reps *= 2
    times = []
    for _ in range(rounds):
        t0 = time.thread_time()
        for _ in range(reps):
            fn()
        times.append((time.thread_time() - t0) / reps)
    return statistics.median(times)


def wall_seconds(fn: Callable[[], Any], rounds: int, reps: int = 2000) -> float:
    fn()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        times.append((time.perf_counter() - t0) / reps)
    return statistics.median(times)


def bare_call(kernel: cpu.CpuKernel, ins: list[Any], split: bool) -> Callable[[], Any]:
    """The kernel's packed native call on the plan of `ins`, on one thread or split."""
    kernel(ins)
    (plan,) = [p for p in kernel._plans.values() if not p.empty]
    allocs = [torch.empty(shape, dtype=dtype) for shape, dtype in plan.allocs]
    args = kernel._array.from_buffer_copy(plan.template)
    for slot, src, offset in plan.pointers:
        t = ins[src] if src >= 0 else allocs[-1 - src]
        args[slot] = t.data_ptr() + offset
    # The closures hold `allocs`: the kernel writes into them.
    if not split or plan.launch is None:
        return lambda: (kernel._fn(args), allocs)
    return lambda: (kernel._parallel(args, plan.launch), allocs)


def launch_costs(rounds: int) -> tuple[float, float]:
    """(native, pool) launch cost in seconds: a split 64-element call minus a bare one."""
    x = torch.randn(64)
    f = fusec.compile(lambda t: -(t + 1))
    f(x)
    step_fn, ins = _bare_kernel(f.last.program, [x])
    kernel = step_fn.fn.kernel
    kernel(ins)
    (plan,) = kernel._plans.values()
    half = cpu._split_range(plan.template[1], 2)
    args = kernel._array.from_buffer_copy(plan.template)
    out = torch.empty_like(x)
    for slot, src, offset in plan.pointers:
        args[slot] = (ins[src] if src >= 0 else out).data_ptr() + offset
    bare = wall_seconds(lambda: kernel._fn(args), rounds)
    native = float("nan")
    run = cpu.parallel_launch.launcher()
    if run is not None:
        table = cpu.parallel_launch.chunk_table(plan.template, half, 2)
        address = ctypes.cast(kernel._fn, ctypes.c_void_p).value
        native = wall_seconds(lambda: run(address, kernel._n_slots, args, table), rounds) - bare
    pool = wall_seconds(lambda: kernel._pool_parallel(args, half), rounds, 500) - bare
    return native, pool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2", type=int, default=20, help="log2 of the element count")
    ap.add_argument("--rounds", type=int, default=7)
    opts = ap.parse_args()
    n = 1 << opts.log2
    torch.set_num_threads(1)
    print(f"{'kernel':10} | {'estimate ns/el':>14} | {'measured ns/el':>14} | {'ratio':>5}")
    for name, (fn, make) in WORKLOADS.items():
        ins = make(n)
        f = fusec.compile(fn)
        f(*ins)
        step_fn, kins = _bare_kernel(f.last.program, ins)
        kernel = step_fn.fn.kernel
        call = bare_call(kernel, kins, split=False)
        measured = thread_seconds(call, opts.rounds) / n * 1e9
        est = kernel.signature.cost
        print(f"{name:10} | {est:14.2f} | {measured:14.2f} | {measured / est:5.2f}")
    native, pool = launch_costs(opts.rounds)
    print(f"\nlaunch cost, 2 chunks: native {native * 1e6:.1f} us, thread pool {pool * 1e6:.1f} us")


if __name__ == "__main__":
    main()
