"""Kernel benchmark: fusec's generated host kernels against eager PyTorch and
torch.compile (Inductor), next to the machine's measured copy bandwidth.

    python benchmarks/kernels.py [--sizes 16,20,24] [--no-inductor]

Cases: the LSTM cell tail (chunk + 3 sigmoid + 2 tanh + mul/add, 2 outputs) and
an 8-op transcendental chain. GB/s counts each input and output byte once.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fusec.codegen.kernel import build_kernel  # noqa: E402
from fusec.runtime.cpu import load_kernel, num_threads  # noqa: E402
from test_codegen import lstm_body, lstm_eager, make_group  # noqa: E402


def chain_body(b, x):
    y = b.ExpOp(b.NegOp(b.AbsOp(x)))
    y = b.MulOp(b.TanhOp(x), y)
    y = b.AddOp(b.SigmoidOp(y), b.SinOp(x))
    return b.Log1pOp(b.MulOp(y, y))


def chain_eager(x: torch.Tensor) -> torch.Tensor:
    y = torch.exp(-torch.abs(x))
    y = torch.tanh(x) * y
    y = torch.sigmoid(y) + torch.sin(x)
    return torch.log1p(y * y)


def timeit(fn: Callable[[], object], min_time: float = 0.3) -> float:
    """Best-of median-ish: seconds per call, after a warm-up."""
    fn()
    n, t = 1, 0.0
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        t = time.perf_counter() - start
        if t > min_time:
            return t / n
        n *= 2


def copy_bandwidth() -> float:
    src = torch.randn(1 << 25)
    dst = torch.empty_like(src)
    s = timeit(lambda: dst.copy_(src))
    return 2 * src.numel() * 4 / s / 1e9


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="16,20,24", help="log2 of the element counts")
    ap.add_argument("--no-inductor", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(num_threads())
    bw = copy_bandwidth()
    print(f"threads: {num_threads()}   measured copy bandwidth: {bw:.1f} GB/s")
    print(f"{'case':<10}{'elements':>10}  {'impl':<9}{'time (us)':>12}{'GB/s':>8}{'vs eager':>10}")
    for log2 in (int(s) for s in args.sizes.split(",")):
        n = 1 << log2
        h = 256
        rows = n // h
        gates, cx = torch.randn(rows, 4 * h), torch.randn(rows, h)
        x = torch.randn(n)
        cases = [
            ("lstm", make_group([gates, cx], lstm_body), lstm_eager, [gates, cx],
             (gates.numel() + 3 * cx.numel()) * 4),
            ("chain8", make_group([x], chain_body), chain_eager, [x], 2 * x.numel() * 4),
        ]  # fmt: skip
        for name, group, eager, inputs, nbytes in cases:
            kernel = load_kernel(build_kernel(group))
            for got, want in zip(
                kernel(inputs), eager(*inputs) if name == "lstm" else [eager(*inputs)], strict=True
            ):
                torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
            impls: list[tuple[str, Callable[[], object]]] = [
                ("eager", lambda eager=eager, inputs=inputs: eager(*inputs)),
                ("fusec", lambda kernel=kernel, inputs=inputs: kernel(inputs)),
            ]
            if not args.no_inductor:
                compiled = torch.compile(eager)
                compiled(*inputs)
                impls.append(("inductor", lambda c=compiled, inputs=inputs: c(*inputs)))
            base = None
            for impl, fn in impls:
                s = timeit(fn)
                base = base or s
                print(
                    f"{name:<10}{n:>10}  {impl:<9}{s * 1e6:>12.1f}{nbytes / s / 1e9:>8.2f}{base / s:>9.2f}x"
                )


if __name__ == "__main__":
    main()
