"""The per-call cost of fusec's profiler events while no profiler runs.

Each host program with kernels asks `torch._C._autograd._profiler_enabled()`
once per call (`fusec.runtime.profiler_events`); this times small calls, where
the host path is all there is, through both entry points:

    python benchmarks/profiler_off_cost.py          # this tree
    (run it again on a checkout without the events to compare)

Prints per entry point the fastest mean over `--repeats` rounds of `--calls`
calls, in microseconds, and the check itself in nanoseconds.
"""

from __future__ import annotations

import argparse
import time
import timeit

import fusec
import torch


def one_group(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * y + x


def two_groups(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = torch.relu(x * 2.0) @ w
    return torch.tanh(h) + h


def per_call_us(fn, args, calls: int, repeats: int) -> float:
    for _ in range(50):
        fn(*args)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        best = min(best, (time.perf_counter() - start) / calls)
    return best * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    a = parser.parse_args()
    torch.set_num_threads(1)
    x, y, w = torch.randn(4, 8), torch.randn(4, 8), torch.randn(8, 4)
    cases = [
        ("fusec.compile, 1 kernel", fusec.compile(one_group, program_cache=False), (x, y)),
        ("fusec.compile, 2 kernels", fusec.compile(two_groups, program_cache=False), (x, w)),
        (
            "torch.compile(backend=fusec), 1 kernel",
            torch.compile(one_group, backend="fusec"),
            (x, y),
        ),
    ]
    for name, fn, args in cases:
        print(f"{name:40s} {per_call_us(fn, args, a.calls, a.repeats):7.2f} us/call")
    check = torch._C._autograd._profiler_enabled
    ns = min(timeit.repeat(check, number=100_000, repeat=5)) / 100_000 * 1e9
    print(f"{'_profiler_enabled() itself':40s} {ns:7.1f} ns")


if __name__ == "__main__":
    main()
