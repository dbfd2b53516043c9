"""GPU benchmark: eager PyTorch, torch.compile (Inductor), fusec, and fusec with
CUDA graphs on pointwise graphs, against the card's peak memory bandwidth.

    python benchmarks/gpu.py [--sizes 16,20,24] [--no-inductor] [--out benchmarks/results/h100.txt]

Cases: the LSTM cell tail (chunk + 3 sigmoid + 2 tanh + mul/add, 2 outputs) and
a long elementwise chain (16 ops, 1 input, 1 output), float32; then a 50-step
LSTM loop compiled as one function, with and without CUDA-graph replay. GB/s counts each
input and output byte once; "% peak" is against memory clock x bus width x 2.
"host us/call" is the time per call on tiny tensors (64 elements), where the
kernel is negligible: what one call costs on the host (guards, launch, outputs).
Every implementation's result is checked against eager before it is timed.
Without a CUDA device it prints "no CUDA device: ..." and exits 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from reference_models import lstm_tail  # noqa: E402


def chain16(x: torch.Tensor) -> torch.Tensor:
    y = torch.exp(-torch.abs(x))
    y = torch.tanh(x) * y
    y = torch.sigmoid(y) + torch.sin(x)
    y = torch.log1p(y * y) - x * 0.5
    y = torch.cos(y) * torch.sigmoid(x) + 1.0
    return torch.sqrt(torch.abs(y)) * torch.tanh(y - x)


def gpu_time(fn: Callable[[], object], min_time: float = 0.2) -> float:
    """Seconds per call, from CUDA events over enough calls to take `min_time`
    (after 10 warm-up calls: the first ones after a compile pay for clocks
    ramping up and the allocator filling)."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    n = 1
    while True:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        seconds = start.elapsed_time(end) / 1e3
        if seconds > min_time:
            return seconds / n
        n *= 2


def host_time(fn: Callable[[], object], calls: int = 2000) -> float:
    """Host seconds per call (tiny tensors: the GPU keeps up, the host is the limit)."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls


def host_latency(fn: Callable[[], object], calls: int = 30) -> float:
    """Median host seconds one call takes to return, the GPU idle before each
    (synchronized outside the timed region): the host's own cost, where
    `host_time` of work longer on the GPU than on the host measures the GPU."""
    times = []
    for _ in range(calls + 3):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return sorted(times[3:])[calls // 2]


def peak_bandwidth(device: int) -> tuple[str, float]:
    """(device name, peak DRAM GB/s) from the driver's memory clock and bus width."""
    from fusec.runtime.cuda import device_props

    name = torch.cuda.get_device_name(device)
    return name, device_props(device).peak_bandwidth_gbs


def _check(got: Any, want: Any) -> None:
    got = got if isinstance(got, tuple | list) else (got,)
    want = want if isinstance(want, tuple | list) else (want,)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


def implementations(fn: Callable[..., Any], inductor: bool) -> list[tuple[str, Callable[..., Any]]]:
    import fusec

    impls: list[tuple[str, Callable[..., Any]]] = [("eager", fn)]
    if inductor:
        impls.append(("inductor", torch.compile(fn)))
    impls.append(("fusec", fusec.compile(fn)))
    impls.append(("fusec+graphs", fusec.compile(fn, cuda_graphs=True)))
    return impls


def cases(n: int) -> list[tuple[str, Callable[..., Any], tuple[torch.Tensor, ...], int]]:
    h = 256
    rows = max(n // h, 1)
    gates = torch.randn(rows, 4 * h, device="cuda")
    cx = torch.randn(rows, h, device="cuda")
    x = torch.randn(n, device="cuda")
    return [
        ("lstm_tail", lstm_tail, (gates, cx), (gates.numel() + 3 * cx.numel()) * 4),
        ("chain16", chain16, (x,), 2 * x.numel() * 4),
    ]


def run(sizes: list[int], inductor: bool) -> list[str]:
    device = torch.cuda.current_device()
    name, peak = peak_bandwidth(device)
    lines = [
        f"device: {name} (cuda:{device}), peak memory bandwidth {peak:.0f} GB/s, "
        f"torch {torch.__version__}",
        f"{'case':<10}{'elements':>10}  {'impl':<13}{'time (us)':>10}{'GB/s':>9}"
        f"{'% peak':>8}{'vs eager':>10}{'host us/call':>14}",
    ]
    print("\n".join(lines), flush=True)
    with torch.no_grad():
        for log2 in sizes:
            n = 1 << log2
            for (case, fn, inputs, nbytes), (_, _, tiny, _) in zip(
                cases(n), cases(64), strict=True
            ):
                want = fn(*inputs)
                base = None
                for impl, compiled in implementations(fn, inductor):
                    _check(compiled(*inputs), want)
                    s = gpu_time(lambda c=compiled, a=inputs: c(*a))
                    host = host_time(lambda c=compiled, a=tiny: c(*a))
                    base = base or s
                    gbs = nbytes / s / 1e9
                    line = (
                        f"{case:<10}{n:>10}  {impl:<13}{s * 1e6:>10.1f}{gbs:>9.1f}"
                        f"{100 * gbs / peak:>7.1f}%{base / s:>9.2f}x{host * 1e6:>14.1f}"
                    )
                    lines.append(line)
                    print(line, flush=True)
    return lines


def launch_overhead() -> list[str]:
    """Host microseconds per call on tiny tensors (the GPU keeps up): one eager
    op, a fusec call of the LSTM tail (one launch: guards, outputs, launch),
    and that kernel's own per-call path alone (`CudaKernel.call`: outputs and
    launch, no guards or host program)."""
    import fusec

    gates, cx = torch.randn(1, 1024, device="cuda"), torch.randn(1, 256, device="cuda")
    f = fusec.compile(lstm_tail)
    with torch.no_grad():
        _check(f(gates, cx), lstm_tail(gates, cx))
        (step,) = [st for st in f.last.program.all_steps() if st.kind == "kernel"]
        kernel = step.fn.kernel
        eager = host_time(lambda: torch.sigmoid(cx))
        call = host_time(lambda: f(gates, cx))
        # The group takes (cx, gates): its inputs in the order the body reads them.
        got, want = kernel([cx, gates]), lstm_tail(gates, cx)
        _check(
            sorted(got, key=lambda t: float(t.sum())), sorted(want, key=lambda t: float(t.sum()))
        )
        bare = host_time(lambda: kernel([cx, gates]))
    line = (f"host us per call (64 elements): one eager op {eager * 1e6:.1f}, fusec LSTM tail "
            f"(1 launch) {call * 1e6:.1f}, its kernel's call alone {bare * 1e6:.1f}")  # fmt: skip
    print(line, flush=True)
    return [line]


LOOP_STEPS = 50


def lstm_loop(xs, h, c, w_ih, w_hh, b_ih, b_hh):
    """`LOOP_STEPS` steps of an LSTM cell (unrolled when traced)."""
    for t in range(LOOP_STEPS):
        gates = torch.nn.functional.linear(xs[t], w_ih, b_ih) + torch.nn.functional.linear(
            h, w_hh, b_hh
        )
        h, c = lstm_tail(gates, c)
    return h, c


def run_loop(batch: int = 64, hidden: int = 256) -> list[str]:
    """The 50-step LSTM loop as one compiled function: eager, fusec, and fusec
    replaying it as one CUDA graph (checked against eager first). "host us/call"
    is the host's time for one call to return (`host_latency`); "host us/launch"
    divides it by fusec's kernel launches per call (with graphs: what one
    replayed kernel costs the host)."""
    import fusec

    r = lambda *s: torch.randn(*s, device="cuda") * 0.1  # noqa: E731
    args = (r(LOOP_STEPS, batch, hidden), r(batch, hidden), r(batch, hidden),
            r(4 * hidden, hidden), r(4 * hidden, hidden), r(4 * hidden), r(4 * hidden))  # fmt: skip
    lines = [f"{'LSTM loop':<14}{'steps':>6}  {'impl':<13}{'time (us)':>10}{'vs eager':>10}"
             f"{'launches':>10}{'host us/call':>14}{'host us/launch':>16}"]  # fmt: skip
    print(lines[0], flush=True)
    with torch.no_grad():
        want = lstm_loop(*args)
        base = None
        for impl, fn in (
            ("eager", lstm_loop),
            ("fusec", fusec.compile(lstm_loop)),
            ("fusec+graphs", fusec.compile(lstm_loop, cuda_graphs=True)),
        ):
            _check(fn(*args), want)
            s = gpu_time(lambda fn=fn: fn(*args))
            base = base or s
            launches = getattr(fn, "launches_per_call", "")
            host = host_latency(lambda fn=fn: fn(*args))
            per_launch = f"{host * 1e6 / launches:.1f}" if launches else ""
            line = (f"{f'{batch}x{hidden}':<14}{LOOP_STEPS:>6}  {impl:<13}{s * 1e6:>10.1f}"
                    f"{base / s:>9.2f}x{launches!s:>10}{host * 1e6:>14.1f}{per_launch:>16}")  # fmt: skip
            lines.append(line)
            print(line, flush=True)
    return lines


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,20,24", help="log2 of the element counts")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        why = "torch has no CUDA build" if torch.version.cuda is None else "no device visible"
        print(f"no CUDA device: {why}; nothing to benchmark")
        return 0
    lines = run([int(s) for s in args.sizes.split(",")], not args.no_inductor)
    lines += ["", *launch_overhead(), "", *run_loop()]
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
