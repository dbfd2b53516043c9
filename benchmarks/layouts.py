"""Operand layouts that defeat the plain CPU loop nest: one kernel per case, run
as the plain kernel and as its tiled variant (`fusec.codegen.kernel.TILED_CPU`, what
the launch plan switches to for such layouts), against eager PyTorch, in one run.

    python benchmarks/layouts.py [--sizes 16,20,24] [--threads N] [--cpu-time]

Cases (2^k output elements, a [R, C] output, R = 2^(k//2)):
  transposed   relu(a.t() + b), a [C, R] and b [R, C] contiguous
  permuted     relu(x.permute(2, 1, 0) + y), x [C, 4, R/4]: a 3-D transpose
  expanded     sigmoid(x) * c.expand(R, C), c [R, 1] expanded outside the
               graph: a runtime 0 stride on the inner dim
  bias         gelu(x + b), b [C]: a constant 0 stride (no tiling: a control)
`t/p` is the tiled variant's time over the plain kernel's, `t/e` over eager's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import compile_bench  # the same timing loop as the whole-graph benchmark
import torch
from compile_bench import bench
from fusec.codegen.kernel import TILED_CPU, build_kernel
from fusec.runtime import cpu

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.test_codegen import make_group  # noqa: E402 - the repository's group builder


def cases(
    log2: int,
) -> dict[str, tuple[list[torch.Tensor], Callable[..., Any], Callable[..., Any]]]:
    """name -> (kernel inputs, group body builder, eager function of the inputs)."""
    r = 1 << (log2 // 2)
    c = (1 << log2) // r
    a, b = torch.randn(c, r).t(), torch.randn(r, c)
    p = torch.randn(c, 4, r // 4).permute(2, 1, 0)  # [r/4, 4, c], contiguous along dim 0
    q = torch.randn(p.shape)
    x, col = torch.randn(r, c), torch.randn(r, 1).expand(r, c)
    bias = torch.randn(c)
    return {
        "transposed": (
            [a, b],
            lambda k, u, v: k.ReluOp(k.AddOp(u, v)),
            lambda u, v: torch.relu(u + v),
        ),
        "permuted": (
            [p, q],
            lambda k, u, v: k.ReluOp(k.AddOp(u, v)),
            lambda u, v: torch.relu(u + v),
        ),
        "expanded": (
            [x, col],
            lambda k, u, v: k.MulOp(k.SigmoidOp(u), v),
            lambda u, v: torch.sigmoid(u) * v,
        ),
        "bias": (
            [x, bias],
            lambda k, u, v: k.GeluOp(k.AddOp(u, v)),
            lambda u, v: torch.nn.functional.gelu(u + v),
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16,20,24", help="log2 of the element counts")
    ap.add_argument("--threads", type=int, default=0, help="threads for torch and fusec")
    ap.add_argument("--cpu-time", action="store_true", help="time with process CPU time")
    opts = ap.parse_args()
    if opts.cpu_time:
        compile_bench.CLOCK = time.process_time
    if opts.threads:
        torch.set_num_threads(opts.threads)
        os.environ["FUSEC_NUM_THREADS"] = str(opts.threads)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads\n")
    header = f"{'case':11} {'elems':>6} | {'eager us':>10} | {'plain us':>10} | {'tiled us':>10} | {'t/p':>5} {'t/e':>5}"
    print(header)
    print("-" * len(header))
    for log2 in (int(s) for s in opts.sizes.split(",")):
        for name, (inputs, body, eager) in cases(log2).items():
            group = make_group(inputs, body)
            plain = cpu.CpuKernel(build_kernel(group))
            tiled = cpu.CpuKernel(build_kernel(group, TILED_CPU))
            want = eager(*inputs)
            for k in (plain, tiled):
                torch.testing.assert_close(k(inputs)[0], want)
            e = bench(eager, inputs)
            tp = bench(plain, [inputs])
            tt = bench(tiled, [inputs])
            print(
                f"{name:11} {'2^' + str(log2):>6} | {e * 1e6:10.1f} | {tp * 1e6:10.1f} | "
                f"{tt * 1e6:10.1f} | {tt / tp:5.2f} {tt / e:5.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
