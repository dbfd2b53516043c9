"""Model-level workloads: eager PyTorch vs torch.compile (Inductor) vs fusec, in one run.

    python benchmarks/training.py [--rounds 10] [--no-inductor] [--no-iree]
                                  [--models lstm,mlp,gpt2] [--modes train,infer]
                                  [--threads N] [--cpu-time]
                                  [--mlp-shapes 64x512-256-256-10,256x512-1024-1024-10]

Two tables. Training: one step is zero_grad, forward, loss, backward and an SGD
step. Inference: one forward under `torch.no_grad()`, where IREE's CPU backend
(`torch.compile(backend="turbine_cpu")`, from the optional `bench` extra, as in
`compile_bench.py`) is a column too when installed. float32, CPU.
The variants of a model step in turn, round after round (each round starting
at the next variant), and each time is the median over the rounds, so load from
other processes, or another runtime's threads still spinning, hits all alike;
`f/e` and `f/i` are fusec's time over eager's and Inductor's (below 1: fusec
is faster). `--threads N` runs torch and fusec on N threads; `--cpu-time`
times with the process's CPU time (sums the threads' time: on a loaded machine,
with `--threads 1`, it leaves out the time spent waiting for a core).
Workloads: the seeds' LSTM (the usual cell unrolled over T=50 steps, H=256,
batch 32), an MLP (512-1024-1024-10, batch 256) and a GPT-2-style block (dim 256,
4 heads, batch 8, sequence 128); the models are those of the training tests
(`tests/training_models.py`). `--mlp-shapes` runs the MLP at other sizes, one
row each (`BATCHxIN-HIDDEN-...-OUT`, named so in the table). Each compiled model is checked against eager on its
first step (loss and gradients; for inference, the outputs). Kernels: Inductor's
generated kernels in the forward and the backward graph
(`torch._inductor.metrics.generated_kernel_count` across the first forward and
the first backward, Inductor's caches off); fusec's fused kernels launched per
call of its forward and backward graphs (`k`: of its inference graphs);
`kernels_compiled` is fusec's kernel cache count (kernels shared between graphs
or time steps count once).
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
from fusec.api.training import clear_compiled_graphs, compiled_graphs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from training_models import make_gpt2, make_lstm, make_mlp  # noqa: E402

WORKLOADS: dict[str, Callable[[], tuple[torch.nn.Module, tuple, Any]]] = {
    "lstm": lambda: make_lstm(batch=32, hidden=256, steps=50),
    "mlp": lambda: make_mlp(batch=256, sizes=(512, 1024, 1024, 10)),
    "gpt2": lambda: make_gpt2(batch=8, seq=128, dim=256),
}


def mlp_workload(shape: str) -> Callable[[], tuple[torch.nn.Module, tuple, Any]]:
    """`"256x512-1024-1024-10"` -> the MLP of those layer widths on a batch of 256."""
    try:
        batch, widths = shape.split("x")
        sizes = tuple(int(w) for w in widths.split("-"))
        if int(batch) < 1 or len(sizes) < 2 or min(sizes) < 1:
            raise ValueError
        if sizes[-1] < 10:
            raise SystemExit(
                f"--mlp-shapes: {shape!r}: the loss's targets are 10 classes (OUT >= 10)"
            )
    except ValueError:
        raise SystemExit(
            f"--mlp-shapes: {shape!r} is not BATCHxIN-HIDDEN-...-OUT (e.g. 64x512-256-256-10)"
        ) from None
    return lambda: make_mlp(batch=int(batch), sizes=sizes)


def step_fn(model: torch.nn.Module, forward: Callable[..., Any], inputs: tuple, loss_fn: Any):
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step() -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(*inputs))
        loss.backward()
        opt.step()
        return loss

    return step


CLOCK: Callable[[], float] = time.perf_counter
NAME_WIDTH = 6
"""The model column's width (`--mlp-shapes` rows are named by their shape)."""


def bench(steps: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median seconds per step of each variant, timed in turn (after two
    warm-up steps each)."""
    for step in steps.values():
        step()
        step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    names = list(steps)
    for r in range(rounds):
        # Each round starts at the next variant: a runtime that leaves its threads
        # spinning after its turn (IREE's) slows whichever variant comes next.
        for name in names[r % len(names) :] + names[: r % len(names)]:
            t0 = CLOCK()
            steps[name]()
            times[name].append(CLOCK() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def no_grad_step(forward: Callable[..., Any], inputs: tuple) -> Callable[[], Any]:
    def step() -> Any:
        with torch.no_grad():
            return forward(*inputs)

    return step


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


def ratios(t: dict[str, float]) -> str:
    """`f/e` and `f/i` cells."""
    fi = t["fusec"] / t["inductor"] if "inductor" in t else float("nan")
    return f"{t['fusec'] / t['eager']:5.2f} {fi:5.2f}"


def train_table(models: list[str], rounds: int, inductor: bool) -> None:
    header = (
        f"{'model':{NAME_WIDTH}} | {'eager ms':>9} | {'inductor ms':>11} {'fw k':>5} {'bw k':>5} "
        f"{'compile s':>9} | {'fusec ms':>9} {'fw k':>5} {'bw k':>5} {'compile s':>9} "
        f"{'kernels_compiled':>16} | {'f/e':>5} {'f/i':>5}"
    )
    print(f"training step\n{header}\n{'-' * len(header)}")
    for name in models:
        torch.manual_seed(0)
        model, inputs, loss_fn = WORKLOADS[name]()
        want = first_step(model, model, inputs, loss_fn)
        eager_model = copy.deepcopy(model)
        steps = {"eager": step_fn(eager_model, eager_model, inputs, loss_fn)}

        ind_cells = f"{'-':>11} {'-':>5} {'-':>5} {'-':>9}"
        if inductor:
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

        t = bench(steps, rounds)
        if inductor:
            ind_cells = f"{t['inductor'] * 1e3:11.2f} {ind_fw:5d} {ind_bw:5d} {ind_cs:9.1f}"
        print(
            f"{name:{NAME_WIDTH}} | {t['eager'] * 1e3:9.2f} | {ind_cells} | {t['fusec'] * 1e3:9.2f} "
            f"{fw:5d} {bw:5d} {cs:9.1f} {compiled:16d} | {ratios(t)}",
            flush=True,
        )


def compiled_inference(
    model: torch.nn.Module, inputs: tuple, want: Any, backend: str
) -> tuple[Callable[[], Any], float]:
    """(the no-grad step of `torch.compile(model, backend=...)`, first-call s),
    its first output checked against eager's."""
    torch._dynamo.reset()
    step = no_grad_step(torch.compile(model, backend=backend), inputs)
    t0 = time.perf_counter()
    got = step()
    compile_s = time.perf_counter() - t0
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-4)
    return step, compile_s


def infer_table(models: list[str], rounds: int, inductor: bool, iree: str | None) -> None:
    header = (
        f"{'model':{NAME_WIDTH}} | {'eager ms':>9} | {'inductor ms':>11} {'compile s':>9} | "
        f"{'iree ms':>9} {'compile s':>9} | {'fusec ms':>9} {'k':>4} {'compile s':>9} | "
        f"{'f/e':>5} {'f/i':>5}"
    )
    print(f"inference (no_grad forward)\n{header}\n{'-' * len(header)}")
    for name in models:
        torch.manual_seed(0)
        model, inputs, _ = WORKLOADS[name]()
        model.eval()
        steps = {"eager": no_grad_step(model, inputs)}
        want = steps["eager"]()
        cells = {"inductor": f"{'-':>11} {'-':>9}", "iree": f"{'-':>9} {'-':>9}"}
        compile_s: dict[str, float] = {}
        if inductor:
            steps["inductor"], compile_s["inductor"] = compiled_inference(
                model, inputs, want, "inductor"
            )
        if iree:
            try:
                steps["iree"], compile_s["iree"] = compiled_inference(model, inputs, want, iree)
            except Exception as e:  # noqa: BLE001 - a peer's failure is reported, not fatal
                cells["iree"] = f"{'failed':>9} {'-':>9}"
                print(f"  (IREE failed on {name}: {type(e).__name__}: {str(e)[:200]})")
        known = set(map(id, fusec.dynamo_graphs()))
        steps["fusec"], compile_s["fusec"] = compiled_inference(model, inputs, want, "fusec")
        graphs = [g for g in fusec.dynamo_graphs() if id(g) not in known]
        t = bench(steps, rounds)
        kernels = sum(g.launches_per_call for g in graphs)
        if "inductor" in t:
            cells["inductor"] = f"{t['inductor'] * 1e3:11.2f} {compile_s['inductor']:9.1f}"
        if "iree" in t:
            cells["iree"] = f"{t['iree'] * 1e3:9.2f} {compile_s['iree']:9.1f}"
        print(
            f"{name:{NAME_WIDTH}} | {t['eager'] * 1e3:9.2f} | {cells['inductor']} | {cells['iree']} | "
            f"{t['fusec'] * 1e3:9.2f} {kernels:4d} {compile_s['fusec']:9.1f} | {ratios(t)}",
            flush=True,
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10, help="timed steps per variant")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--no-iree", action="store_true")
    ap.add_argument("--models", default="lstm,mlp,gpt2")
    ap.add_argument("--modes", default="train,infer", help="train, infer or both")
    ap.add_argument(
        "--threads", type=int, default=0, help="threads for torch and fusec (0: all cores)"
    )
    ap.add_argument("--cpu-time", action="store_true", help="time with the process's CPU time")
    ap.add_argument(
        "--mlp-shapes",
        default="",
        help="MLP sizes to run as well, comma-separated BATCHxIN-HIDDEN-...-OUT",
    )
    opts = ap.parse_args()
    global CLOCK, NAME_WIDTH
    if opts.cpu_time:
        CLOCK = time.process_time
    if opts.threads:
        torch.set_num_threads(opts.threads)
        os.environ["FUSEC_NUM_THREADS"] = str(opts.threads)
    modes = opts.modes.split(",")
    iree = None
    if "infer" in modes and not opts.no_iree:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from compile_bench import iree_backend

        iree = iree_backend()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, fusec {fusec.__version__}, "
        f"IREE: {iree or 'not installed (skipped)'}, "
        f"{'CPU' if opts.cpu_time else 'wall'} time, median of {opts.rounds}"
    )
    models = [m for m in opts.models.split(",") if m]
    for shape in filter(None, opts.mlp_shapes.split(",")):
        WORKLOADS[shape] = mlp_workload(shape)
        models.append(shape)
    NAME_WIDTH = max([6, *map(len, models)])
    unknown = [m for m in models if m not in WORKLOADS]
    if unknown:
        raise SystemExit(f"--models: unknown {unknown}; known: {sorted(WORKLOADS)}")
    if "train" in modes:
        train_table(models, opts.rounds, not opts.no_inductor)
    if "infer" in modes:
        infer_table(models, opts.rounds, not opts.no_inductor, iree)


if __name__ == "__main__":
    main()
