"""Reductions and normalizations: eager PyTorch vs torch.compile (Inductor) vs fusec.

    python benchmarks/reductions.py [--shapes 1024x1024,8192x4096] [--no-inductor]

Workloads (float32): softmax over the last dim, `F.layer_norm` (weight and bias),
an RMSNorm written out (`x * rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w`),
a column sum (`x.sum(0)`, a reduction over the outer dim) and a bias gradient
(relu's backward `g * (x > 0)` and its column sum, both returned), each at the
given [rows, cols] shapes, and a GPT-2-style block (layer norms, a
causal-free attention softmax, GELU MLP, residual adds; the matmuls run through
PyTorch for every contender). Per workload: time per call, GB/s (the bytes each
call must at least read and write: input, output and parameters) next to the
machine's measured copy bandwidth, and kernels per call (eager: ATen ops
dispatched; Inductor: kernels it generated; fusec: fused kernels launched, the
rest of its ops run through PyTorch).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import fusec
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compile_bench import bench, copy_bandwidth  # noqa: E402


def softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, (x.shape[-1],), w, b)


def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def col_sum(x: torch.Tensor) -> torch.Tensor:
    return x.sum(0)


def bias_grad(g: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    gx = g * (x > 0)
    return gx, gx.sum(0)


class Block(nn.Module):
    """A GPT-2 block: pre-norm attention (softmax over keys) and GELU MLP."""

    def __init__(self, d: int = 256, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, h).transpose(1, 2)
        k = k.view(b, t, self.heads, h).transpose(1, 2)
        v = v.view(b, t, self.heads, h).transpose(1, 2)
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / h**0.5), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


def workload(name: str, shape: tuple[int, int]) -> tuple[Callable[..., Any], list[Any], float]:
    """(fn, inputs, minimum bytes per call; NaN where not meaningful)."""
    r, c = shape
    x = torch.randn(r, c)
    if name == "softmax":
        return softmax, [x], 4 * 2 * r * c
    if name == "layer_norm":
        return layer_norm, [x, torch.randn(c), torch.randn(c)], 4 * (2 * r * c + 2 * c)
    if name == "rms_norm":
        return rms_norm, [x, torch.randn(c)], 4 * (2 * r * c + c)
    if name == "col_sum":
        return col_sum, [x], 4 * (r * c + c)
    if name == "bias_grad":
        return bias_grad, [torch.randn(r, c), x], 4 * (3 * r * c + c)
    block = Block().eval()
    return block, [torch.randn(8, 128, 256)], float("nan")


class _CountOps(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.ops += 1
        return func(*args, **(kwargs or {}))


def eager_ops(fn: Callable[..., Any], args: list[Any]) -> int:
    with _CountOps() as mode:
        fn(*args)
    return mode.ops


def inductor(fn: Callable[..., Any], args: list[Any]) -> tuple[Callable[..., Any], int]:
    from torch._inductor import metrics

    torch._dynamo.reset()
    metrics.reset()
    compiled = torch.compile(fn, dynamic=False)
    compiled(*args)
    return compiled, metrics.generated_kernel_count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1024x1024,8192x4096")
    ap.add_argument(
        "--workloads", default="softmax,layer_norm,rms_norm,col_sum,bias_grad,gpt2_block"
    )
    ap.add_argument("--no-inductor", action="store_true")
    opts = ap.parse_args()
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, fusec {fusec.__version__}"
    )
    bw = copy_bandwidth()
    print(f"copy bandwidth (2^24 f32, read+write): {bw:.1f} GB/s\n")
    header = (
        f"{'workload':11} {'shape':>10} | {'eager ms':>9} {'GB/s':>6} {'ops':>4} | "
        f"{'inductor ms':>11} {'GB/s':>6} {'k':>3} | {'fusec ms':>9} {'GB/s':>6} {'k':>3}"
    )
    print(header)
    print("-" * len(header))
    shapes = [tuple(int(v) for v in s.split("x")) for s in opts.shapes.split(",")]
    with torch.no_grad():
        for name in opts.workloads.split(","):
            for shape in shapes if name != "gpt2_block" else [(8 * 128, 256)]:
                fn, args, nbytes = workload(name, shape)  # type: ignore[arg-type]
                eager = bench(fn, args)
                ops = eager_ops(fn, args)
                if opts.no_inductor:
                    ind, ind_k = float("nan"), -1
                else:
                    compiled, ind_k = inductor(fn, args)
                    ind = bench(compiled, args)
                f = fusec.compile(fn)
                torch.testing.assert_close(f(*args), fn(*args), rtol=1e-4, atol=1e-4)
                fu = bench(f, args)
                cells = [
                    f"{t * 1e3:9.2f} {nbytes / t / 1e9:6.2f}"
                    if t == t and nbytes == nbytes
                    else (f"{t * 1e3:9.2f} {'-':>6}" if t == t else f"{'-':>9} {'-':>6}")
                    for t in (eager, ind, fu)
                ]
                label = "x".join(map(str, shape)) if name != "gpt2_block" else "8x128x256"
                print(
                    f"{name:11} {label:>10} | {cells[0]} {ops:4d} | {cells[1]:>18} "
                    f"{ind_k if ind_k >= 0 else '-':>3} | {cells[2]} {f.launches_per_call:3d}"
                )


if __name__ == "__main__":
    main()
