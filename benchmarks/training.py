"""Training steps: eager PyTorch vs torch.compile (Inductor) vs fusec, in one run.

    python benchmarks/training.py [--rounds 10] [--no-inductor] [--models lstm,mlp,gpt2]

One step is zero_grad, forward, loss, backward and an SGD step (float32, CPU).
The three variants of a model step in turn, round after round, and each time is
the median over the rounds, so load from other processes hits all three alike.
Workloads: the seeds' LSTM (the usual cell unrolled over T=50 steps, H=256,
batch 32), an MLP (512-1024-1024-10, batch 256) and a GPT-2-style block (dim 256,
4 heads, batch 8, sequence 128); the models are those of the training tests
(`tests/training_models.py`). Each compiled model is checked against eager on its
first step (loss and gradients). Kernels: Inductor's generated kernels in the
forward and the backward graph (`torch._inductor.metrics.generated_kernel_count`
across the first forward and the first backward, Inductor's caches off); fusec's fused kernels launched
per call of its forward and backward graphs; `kernels_compiled` is fusec's kernel
cache count (kernels shared between graphs or time steps count once).
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import fusec
import torch
from fusec.training import clear_compiled_graphs, compiled_graphs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from training_models import make_gpt2, make_lstm, make_mlp  # noqa: E402

WORKLOADS: dict[str, Callable[[], tuple[torch.nn.Module, tuple, Any]]] = {
    "lstm": lambda: make_lstm(batch=32, hidden=256, steps=50),
    "mlp": lambda: make_mlp(batch=256, sizes=(512, 1024, 1024, 10)),
    "gpt2": lambda: make_gpt2(batch=8, seq=128, dim=256),
}


def step_fn(model: torch.nn.Module, forward: Callable[..., Any], inputs: tuple, loss_fn: Any):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(*inputs))
        loss.backward()
        opt.step()
        return loss

    return step


def bench(steps: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median seconds per training step of each variant, timed in turn (after
    two warm-up steps each)."""
    for step in steps.values():
        step()
        step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def first_step(model: torch.nn.Module, forward: Callable[..., Any], inputs: tuple, loss_fn: Any):
    """Loss and gradients of one forward/backward (no optimizer step)."""
    model.zero_grad(set_to_none=True)
    loss = loss_fn(forward(*inputs))
    loss.backward()
    return loss.detach(), [p.grad.clone() for p in model.parameters()]


def check(got: Any, want: Any) -> None:
    torch.testing.assert_close(got[0], want[0], rtol=1e-3, atol=1e-4)
    for g, w in zip(got[1], want[1], strict=True):
        torch.testing.assert_close(g, w, rtol=1e-3, atol=1e-4)


def inductor_kernels(model: torch.nn.Module, inputs: tuple, loss_fn: Any) -> tuple[Any, ...]:
    """(compiled forward, kernels in the forward graph, in the backward graph, compile s)."""
    from torch._inductor import config, metrics

    torch._dynamo.reset()
    metrics.reset()
    forward = torch.compile(model)
    t0 = time.perf_counter()
    with config.patch(force_disable_caches=True):  # a cache hit generates no kernels
        out = loss_fn(forward(*inputs))
        fw = metrics.generated_kernel_count
        out.backward()
    compile_s = time.perf_counter() - t0
    return forward, fw, metrics.generated_kernel_count - fw, compile_s


def fusec_kernels(model: torch.nn.Module, inputs: tuple, loss_fn: Any) -> tuple[Any, ...]:
    """(compiled forward, launches per forward call, per backward call, compile s)."""
    torch._dynamo.reset()
    clear_compiled_graphs()
    forward = torch.compile(model, backend="fusec")
    t0 = time.perf_counter()
    loss_fn(forward(*inputs)).backward()
    compile_s = time.perf_counter() - t0
    graphs = compiled_graphs()
    fw = sum(g.launches_per_call for g in graphs if g.kind == "forward")
    bw = sum(g.launches_per_call for g in graphs if g.kind == "backward")
    return forward, fw, bw, compile_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10, help="timed training steps per variant")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--models", default="lstm,mlp,gpt2")
    opts = ap.parse_args()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, fusec {fusec.__version__}"
    )
    header = (
        f"{'model':6} | {'eager ms':>9} | {'inductor ms':>11} {'fw k':>5} {'bw k':>5} "
        f"{'compile s':>9} | {'fusec ms':>9} {'fw k':>5} {'bw k':>5} {'compile s':>9} "
        f"{'kernels_compiled':>16}"
    )
    print(header)
    print("-" * len(header))
    for name in opts.models.split(","):
        torch.manual_seed(0)
        model, inputs, loss_fn = WORKLOADS[name]()
        want = first_step(model, model, inputs, loss_fn)
        eager_model = copy.deepcopy(model)
        steps = {"eager": step_fn(eager_model, eager_model, inputs, loss_fn)}

        ind_cells = f"{'-':>11} {'-':>5} {'-':>5} {'-':>9}"
        if not opts.no_inductor:
            m = copy.deepcopy(model)
            forward, ind_fw, ind_bw, ind_cs = inductor_kernels(m, inputs, loss_fn)
            check(first_step(m, forward, inputs, loss_fn), want)
            steps["inductor"] = step_fn(m, forward, inputs, loss_fn)

        m = copy.deepcopy(model)
        before = fusec.cache_stats()["kernels_compiled"]
        forward, fw, bw, cs = fusec_kernels(m, inputs, loss_fn)
        check(first_step(m, forward, inputs, loss_fn), want)
        compiled = fusec.cache_stats()["kernels_compiled"] - before
        steps["fusec"] = step_fn(m, forward, inputs, loss_fn)

        t = bench(steps, opts.rounds)
        if not opts.no_inductor:
            ind_cells = f"{t['inductor'] * 1e3:11.2f} {ind_fw:5d} {ind_bw:5d} {ind_cs:9.1f}"
        print(
            f"{name:6} | {t['eager'] * 1e3:9.2f} | {ind_cells} | {t['fusec'] * 1e3:9.2f} "
            f"{fw:5d} {bw:5d} {cs:9.1f} {compiled:16d}",
            flush=True,
        )


if __name__ == "__main__":
    main()
