"""Eager PyTorch vs torch.compile (Inductor) vs fusec, in one run.

    python benchmarks/compile_bench.py [--sizes 6,20,24] [--no-inductor]

Workloads (float32): the LSTM cell's pointwise tail (gates precomputed by the
matmuls, then chunk), an 8-op pointwise chain, and a broadcast add
([R,1] + [1,C]), each at 2^6, 2^20 and 2^24 elements (of the output). GB/s counts
the bytes each call must read and write at least, next to the machine's
measured copy bandwidth. Then fusec's cold compile time (empty cache), warm
compile time (a new process with the disk cache filled) and per-call dispatch
overhead at 2^6 elements.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Sequence
from typing import Any

import fusec
import torch


def lstm_tail(gates: torch.Tensor, cx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


def chain8(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    a = x * y
    b = a + x
    c = torch.tanh(b)
    d = c * y
    e = torch.sigmoid(d)
    f = e - x
    g = torch.relu(f)
    return g * y


def broadcast_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b


def workload(name: str, log2: int) -> tuple[Callable[..., Any], list[torch.Tensor], int]:
    """(fn, inputs, minimum bytes moved per call) for 2^log2 output elements."""
    n = 1 << log2
    if name == "lstm_cell":
        h = 1 << (log2 // 2)
        b = n // h
        args = [torch.randn(b, 4 * h), torch.randn(b, h)]
        return lstm_tail, args, 4 * (4 * n + n + 2 * n)
    if name == "chain8":
        args = [torch.randn(n), torch.randn(n)]
        return chain8, args, 4 * 3 * n
    r = 1 << (log2 // 2)
    c = n // r
    args = [torch.randn(r, 1), torch.randn(1, c)]
    return broadcast_add, args, 4 * (n + r + c)


def bench(fn: Callable[..., Any], args: list[Any], budget: float = 0.4) -> float:
    """Median seconds per call."""
    fn(*args)
    start = time.perf_counter()
    fn(*args)
    once = max(time.perf_counter() - start, 1e-7)
    reps = max(3, min(2000, int(budget / once)))
    times = []
    batch = max(1, reps // 15)
    for _ in range(max(3, reps // batch)):
        t0 = time.perf_counter()
        for _ in range(batch):
            fn(*args)
        times.append((time.perf_counter() - t0) / batch)
    return statistics.median(times)


def copy_bandwidth() -> float:
    src = torch.randn(1 << 24)
    dst = torch.empty_like(src)
    t = bench(lambda: dst.copy_(src), [])
    return 2 * src.numel() * 4 / t / 1e9


_CHILD = textwrap.dedent(
    """
    import json, sys, time, torch
    sys.path.insert(0, {path!r})
    import fusec
    from compile_bench import lstm_tail
    args = (torch.randn(64, 256), torch.randn(64, 64))
    t0 = time.perf_counter()
    f = fusec.compile(lstm_tail)
    f(*args)
    dt = time.perf_counter() - t0
    print(json.dumps({{"seconds": dt, **fusec.cache_stats(), "launches": f.launches_per_call}}))
    """
)


def compile_times() -> tuple[dict[str, Any], dict[str, Any]]:
    """Cold (empty cache dir) and warm (second process) first-call times."""
    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "FUSEC_CACHE_DIR": d}
        code = _CHILD.format(path=os.path.dirname(os.path.abspath(__file__)))
        runs = []
        for _ in range(2):
            p = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True
            )
            if p.returncode != 0:
                raise RuntimeError(p.stderr)
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        return runs[0], runs[1]


def _bare_kernel(program: Any, args: Sequence[Any]) -> tuple[Callable[..., Any], list[Any]]:
    """The first kernel step and its inputs, found through the guard's `scf.if`
    (the then-branch holds the kernel; its inputs are what the if step captures)."""
    values = {**dict(zip(program.arg_slots, args, strict=True)), **program.consts}
    for step in program.steps:
        if step.kind == "kernel":
            return step.fn, [values[i] for i in step.ins]
        if step.branches:
            then = step.branches[0]
            captured = [values[i] for i in step.ins[1:]]
            return _bare_kernel(then, captured)
    raise RuntimeError("no kernel in the compiled program")


def dispatch_overhead() -> dict[str, float]:
    """Per-call time at 2^6 elements: the whole compiled call, the bare kernel
    call, and their difference (guards + host program)."""
    fn, args, _ = workload("chain8", 6)
    f = fusec.compile(fn)
    f(*args)
    total = bench(f, args, budget=0.5)
    kernel = bench(*_bare_kernel(f.last.program, args), budget=0.5)
    eager = bench(fn, args, budget=0.5)
    return {"call": total, "kernel": kernel, "overhead": total - kernel, "eager": eager,
            "launches": f.launches_per_call}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="6,20,24", help="log2 of the element counts")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--workloads", default="lstm_cell,chain8,broadcast_add")
    opts = ap.parse_args()
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, fusec {fusec.__version__}"
    )
    bw = copy_bandwidth()
    print(f"copy bandwidth (2^24 f32, read+write): {bw:.1f} GB/s\n")
    header = f"{'workload':14} {'elems':>6} | {'eager us':>10} {'GB/s':>6} | {'inductor us':>11} {'GB/s':>6} | {'fusec us':>10} {'GB/s':>6} {'k/call':>6}"
    print(header)
    print("-" * len(header))
    for name in opts.workloads.split(","):
        for log2 in (int(s) for s in opts.sizes.split(",")):
            fn, args, nbytes = workload(name, log2)
            eager = bench(fn, args)
            if opts.no_inductor:
                ind = float("nan")
            else:
                torch._dynamo.reset()
                ind = bench(torch.compile(fn, dynamic=False), args)
            f = fusec.compile(fn)
            want, got = fn(*args), f(*args)
            for w, g in zip(
                want if isinstance(want, tuple) else (want,),
                got if isinstance(got, tuple) else (got,),
                strict=True,
            ):
                torch.testing.assert_close(g, w)
            fu = bench(f, args)
            cells = [
                f"{t * 1e6:10.1f} {nbytes / t / 1e9:6.2f}" if t == t else f"{'-':>10} {'-':>6}"
                for t in (eager, ind, fu)
            ]
            print(
                f"{name:14} {'2^' + str(log2):>6} | {cells[0]} | {cells[1]:>18} | {cells[2]} "
                f"{f.launches_per_call:6d}"
            )
    print()
    cold, warm = compile_times()
    print(
        f"fusec compile, LSTM tail: cold {cold['seconds'] * 1e3:.0f} ms "
        f"(kernels_compiled={cold['kernels_compiled']}), warm {warm['seconds'] * 1e3:.0f} ms "
        f"(disk_hits={warm['disk_hits']}, kernels_compiled={warm['kernels_compiled']})"
    )
    d = dispatch_overhead()
    print(
        f"fusec per-call at 2^6 (8-op chain, {d['launches']} kernel): call {d['call'] * 1e6:.1f} us, "
        f"bare kernel {d['kernel'] * 1e6:.1f} us, dispatch overhead {d['overhead'] * 1e6:.1f} us "
        f"(eager 8 ops: {d['eager'] * 1e6:.1f} us)"
    )


if __name__ == "__main__":
    main()
