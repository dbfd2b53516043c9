"""Transcendental ops: eager PyTorch vs torch.compile (Inductor) vs fusec, per
element type, in one run.

    python benchmarks/math_ops.py [--sizes 16,20] [--ops exp,erf,sin] [--no-inductor]
                                  [--threads N] [--cpu-time]

Each case is `op(x) * 2` on a contiguous tensor of 2^k elements (x ~ 3*randn,
|x| where the op needs it), so fusec fuses it into one kernel (a lone op runs
eagerly) and every column runs the same graph. The kernels are what
`convert-math-to-llvm{target=cpu}` expands (math_polynomials.py) and, for
sin/cos, `sincos-fast-path`. `f/e` and `f/i` are fusec's time over eager's and
Inductor's (below 1: fusec is faster).
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

import compile_bench  # the same timing loop as the whole-graph benchmark
import fusec
import torch
from compile_bench import bench

OPS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "exp": lambda x: torch.exp(x) * 2,
    "expm1": lambda x: torch.expm1(x) * 2,
    "log": lambda x: torch.log(x.abs()) * 2,
    "log1p": lambda x: torch.log1p(x.abs()) * 2,
    "tanh": lambda x: torch.tanh(x) * 2,
    "sigmoid": lambda x: torch.sigmoid(x) * 2,
    "erf": lambda x: torch.erf(x) * 2,
    "gelu": lambda x: torch.nn.functional.gelu(x) * 2,
    "sin": lambda x: torch.sin(x) * 2,
    "cos": lambda x: torch.cos(x) * 2,
    "pow": lambda x: torch.pow(x.abs(), 1.7) * 2,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,20", help="log2 of the element counts")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--threads", type=int, default=0, help="threads (0: all cores)")
    ap.add_argument("--cpu-time", action="store_true", help="time with process CPU time")
    opts = ap.parse_args()
    if opts.cpu_time:
        compile_bench.CLOCK = time.process_time
    if opts.threads:
        torch.set_num_threads(opts.threads)
        os.environ["FUSEC_NUM_THREADS"] = str(opts.threads)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, fusec {fusec.__version__}"
    )
    header = (
        f"{'op':8} {'dtype':8} {'elems':>6} | {'eager us':>10} | {'inductor us':>11} | "
        f"{'fusec us':>10} | {'f/e':>5} {'f/i':>5}"
    )
    print(header)
    print("-" * len(header))
    for dtype in opts.dtypes.split(","):
        for name in opts.ops.split(","):
            fn = OPS[name]
            for log2 in (int(s) for s in opts.sizes.split(",")):
                torch.manual_seed(0)
                x = torch.randn(1 << log2, dtype=getattr(torch, dtype)) * 3
                eager = bench(fn, [x])
                ind = float("nan")
                if not opts.no_inductor:
                    torch._dynamo.reset()
                    ind = bench(torch.compile(fn, dynamic=False), [x])
                f = fusec.compile(fn)
                torch.testing.assert_close(f(x), fn(x), equal_nan=True)
                fu = bench(f, [x])
                print(
                    f"{name:8} {dtype:8} {'2^' + str(log2):>6} | {eager * 1e6:10.1f} | "
                    f"{ind * 1e6:11.1f} | {fu * 1e6:10.1f} | {fu / eager:5.2f} {fu / ind:5.2f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
