"""Eager PyTorch vs torch.compile (Inductor) vs IREE vs fusec, in one run.

    python benchmarks/compile_bench.py [--sizes 6,16,20,24] [--no-inductor] [--no-iree]
                                       [--threads N] [--cpu-time] [--per-call]

Workloads (float32): the LSTM cell's pointwise tail (gates precomputed by the
matmuls, then chunk), an 8-op pointwise chain, a bias + GELU ([R,C] + [C]),
a transposed-input add (relu(a.t() + b)) and a broadcast add ([R,1] + [1,C]),
each at 2^6, 2^16, 2^20 and 2^24 elements (of the output). GB/s counts the
bytes each call must read and write at least, next to the machine's measured
copy bandwidth; `f/e` and `f/i` are fusec's time over eager's and Inductor's
(below 1: fusec is faster). IREE's CPU backend (`torch.compile(backend=
"turbine_cpu")`, from the optional `bench` extra: iree-base-compiler,
iree-base-runtime, iree-turbine) is a column when installed and skipped
otherwise. Then fusec's first-call times in fresh processes (each the median of
5 rounds): cold (empty cache), warm (the disk caches filled by the cold run:
program, kernel, machine code), warm and cold with all of fusec's modules (and
so xDSL's dialects and llvmlite) imported before the clock starts. fusec's
modules are byte-compiled first, as pip does when it installs a wheel (an
editable install leaves that to the first import, and a
`PYTHONDONTWRITEBYTECODE` environment never does it: each process would then
compile fusec's sources again, which a user's second process does not pay);
and the per-call time at 2^6 elements against the bare kernel call, and through
`torch.compile(backend="fusec")` against eager and Dynamo's own "eager" backend.
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


def bias_gelu(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x + b)


def transposed_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a.t() + b)


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
    if name == "bias_gelu":
        c = min(n, 1024)
        args = [torch.randn(n // c, c), torch.randn(c)]
        return bias_gelu, args, 4 * (2 * n + c)
    if name == "transposed_add":
        r = 1 << (log2 // 2)
        args = [torch.randn(n // r, r), torch.randn(r, n // r)]
        return transposed_add, args, 4 * 3 * n
    r = 1 << (log2 // 2)
    c = n // r
    args = [torch.randn(r, 1), torch.randn(1, c)]
    return broadcast_add, args, 4 * (n + r + c)


CLOCK: Callable[[], float] = time.perf_counter
"""What `bench` reads: wall time, or with `--cpu-time` the process's CPU time
(steadier on a machine shared with other jobs; with one thread it is the call's
own time)."""


PER_CALL = False
"""With `--per-call`, `bench` takes the median of single calls' times instead of
batches' means: a call the OS scheduler stalls for milliseconds (threads of a
parallel region waiting on a busy machine) is one outlier among many rather than
a share of its batch's mean."""


def bench(fn: Callable[..., Any], args: list[Any], budget: float = 0.4) -> float:
    """Median seconds per call."""
    if PER_CALL:
        return _bench_per_call(fn, args, budget)
    fn(*args)
    start = CLOCK()
    fn(*args)
    once = max(CLOCK() - start, 1e-7)
    reps = max(3, min(2000, int(budget / once)))
    times = []
    batch = max(1, reps // 15)
    for _ in range(max(3, reps // batch)):
        t0 = CLOCK()
        for _ in range(batch):
            fn(*args)
        times.append((CLOCK() - t0) / batch)
    return statistics.median(times)


def _bench_per_call(fn: Callable[..., Any], args: list[Any], budget: float) -> float:
    fn(*args)
    times = []
    end = CLOCK() + budget
    while len(times) < 15 or (CLOCK() < end and len(times) < 5000):
        t0 = CLOCK()
        fn(*args)
        times.append(CLOCK() - t0)
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
    if {preload}:
        import importlib, pkgutil
        for pkg in {packages!r}:
            for m in pkgutil.iter_modules(importlib.import_module(pkg).__path__):
                importlib.import_module(pkg + "." + m.name)
    from compile_bench import lstm_tail
    args = (torch.randn(64, 256), torch.randn(64, 64))
    t0, c0 = time.perf_counter(), time.process_time()
    f = fusec.compile(lstm_tail)
    f(*args)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    xdsl = "xdsl" in sys.modules
    print(json.dumps({{"seconds": dt, "cpu": cpu, "xdsl": xdsl, **fusec.cache_stats(),
                      "launches": f.launches_per_call}}))
    """
)


FUSEC_PACKAGES = ("fusec", "fusec.dialects", "fusec.passes", "fusec.runtime")
"""The packages a wheel of fusec installs (pyproject's `packages`)."""

FIRST_CALL_ROUNDS = 5
"""Rounds of fresh processes each first-call figure is the median of."""


def byte_compile_fusec() -> None:
    """Writes the `__pycache__` of every fusec package, as a wheel install does
    (even where `PYTHONDONTWRITEBYTECODE` is set, as in this benchmark's own
    environment here)."""
    import compileall
    import importlib

    for name in FUSEC_PACKAGES:
        for path in importlib.import_module(name).__path__:
            compileall.compile_dir(path, maxlevels=0, quiet=1)


def _first_calls() -> list[dict[str, Any]]:
    """One round of `compile_times`: four fresh processes."""
    here = os.path.dirname(os.path.abspath(__file__))
    runs = []
    with tempfile.TemporaryDirectory() as d, tempfile.TemporaryDirectory() as d2:
        for preload, cache in ((False, d), (False, d), (True, d), (True, d2)):
            code = _CHILD.format(path=here, preload=preload, packages=FUSEC_PACKAGES)
            env = {**os.environ, "FUSEC_CACHE_DIR": cache}
            p = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True
            )
            if p.returncode != 0:
                raise RuntimeError(p.stderr)
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return runs


def compile_times(rounds: int = FIRST_CALL_ROUNDS) -> list[dict[str, Any]]:
    """First-call times in fresh processes: cold (empty cache dir), warm (second
    process), warm with fusec's modules imported beforehand, and cold (another
    empty cache dir) with them imported beforehand: what compiling costs apart
    from importing the compiler (xDSL's dialects, llvmlite). Each is the run of
    median wall time over `rounds` rounds: one process's first call is a single
    sample on a shared machine."""
    byte_compile_fusec()
    rounds_runs = [_first_calls() for _ in range(rounds)]
    return [
        sorted((r[i] for r in rounds_runs), key=lambda run: run["seconds"])[rounds // 2]
        for i in range(4)
    ]


def _bare_kernel(program: Any, args: Sequence[Any]) -> tuple[Any, list[Any]]:
    """The first kernel step and its inputs, found through the guard's `scf.if`
    (the then-branch holds the kernel; its inputs are what the if step captures)."""
    values = {**dict(zip(program.arg_slots, args, strict=True)), **program.consts}
    for step in program.steps:
        if step.kind == "kernel":
            return step, [values[i] for i in step.ins]
        if step.branches:
            then = step.branches[0]
            captured = [values[i] for i in step.ins[1:]]
            return _bare_kernel(then, captured)
    raise RuntimeError("no kernel in the compiled program")


def lstm_cell(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gates = torch.nn.functional.linear(x, w_ih, b_ih) + torch.nn.functional.linear(hx, w_hh, b_hh)
    return lstm_tail(gates, cx)


def _record(program: Any, args: Sequence[Any]) -> tuple[list[Callable[[], Any]], list[Any]]:
    """The work one run of `program` does, as argument-free calls: torch steps as
    they are, each kernel as its bare native call on prepared arguments (guards
    and the host program's own bookkeeping left out)."""
    values = {**dict(zip(program.arg_slots, args, strict=True)), **program.consts}
    calls: list[Callable[[], Any]] = []
    for step in program.steps:
        ins = [values[i] for i in step.ins]
        if step.kind == "if":
            sub, outs = _record(step.branches[0 if ins[0] else 1], ins[1:])
            calls += sub
        else:
            outs = step.fn(*ins)
            if step.kind == "kernel":
                calls.append(_bare_native_call(step.fn.kernel, ins, outs))
            elif step.kind != "guard":
                calls.append(lambda fn=step.fn, ins=ins: fn(*ins))
        for slot, v in zip(step.outs, outs, strict=True):
            values[slot] = v
    return calls, [values[i] for i in program.out_slots]


def _bare_native_call(kernel: Any, ins: Sequence[Any], outs: Sequence[Any]) -> Callable[[], Any]:
    """The kernel's packed native call with the plan of `ins` (writing into fresh
    buffers of the plan's allocation shapes, kept alive by the closure)."""
    key = []
    for i in kernel._keyed:
        key += [ins[i].shape, ins[i].stride()]
    plan = kernel._plans[tuple(key)]
    allocs = [torch.empty(shape, dtype=dtype) for shape, dtype in plan.allocs]
    args = kernel._array.from_buffer_copy(plan.template)
    for slot, src, offset in plan.pointers:
        t = ins[src] if src >= 0 else allocs[-1 - src]
        args[slot] = t.data_ptr() + offset
    if kernel._scalar_slots:
        kernel._put_scalars(args, ins)
    if plan.launch is None:
        return lambda: (kernel._fn(args), allocs)
    return lambda: (kernel._parallel(args, plan.launch), allocs)


def lstm_loop_overhead(steps: int = 50, batch: int = 64, hidden: int = 256) -> dict[str, float]:
    """A 50-step LSTM loop through `fusec.compile(lstm_cell)`: time per loop, and
    the same steps' work without the host program (matmuls + bare kernel calls),
    recorded per step on the loop's own data (`work`), and, as before, step 1's
    work done 50 times (`work_first`: its inputs stay in cache, so the loop's
    fresh inputs and outputs count as host overhead there)."""
    f = fusec.compile(lstm_cell)
    w = [torch.randn(4 * hidden, hidden) * 0.1 for _ in range(2)]
    b = [torch.randn(4 * hidden) * 0.1 for _ in range(2)]
    xs = [torch.randn(batch, hidden) for _ in range(steps)]
    h0, c0 = torch.zeros(batch, hidden), torch.zeros(batch, hidden)

    def loop(cell: Callable[..., Any]) -> Any:
        h, c = h0, c0
        for x in xs:
            h, c = cell(x, h, c, w[0], w[1], b[0], b[1])
        return h

    torch.testing.assert_close(loop(f), loop(lstm_cell), rtol=1e-4, atol=1e-5)
    first, _ = _record(f.last.program, [xs[0], h0, c0, w[0], w[1], b[0], b[1]])
    per_step = []
    h, c = h0, c0
    for x in xs:
        calls, (h, c) = _record(f.last.program, [x, h, c, w[0], w[1], b[0], b[1]])
        per_step.append(calls)

    def work() -> None:
        for calls in per_step:
            for call in calls:
                call()

    def work_first() -> None:
        for _ in range(steps):
            for call in first:
                call()

    total, work_t, first_t, eager = interleaved(
        [lambda: loop(f), work, work_first, lambda: loop(lstm_cell)]
    )
    return {"loop": total, "work": work_t, "work_first": first_t, "eager": eager,
            "launches": f.launches_per_call}  # fmt: skip


def interleaved(fns: Sequence[Callable[[], Any]], rounds: int = 41) -> list[float]:
    """Per function, the lower quartile of its times over `rounds` rounds that
    run each function once in turn: on a machine shared with other jobs, the
    functions see the same load, and a low quantile is what they cost when
    they are not interrupted (a median of separate runs drifts by more than
    the few percent a host overhead is)."""
    for fn in fns:
        fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(rounds):
        for fn, ts in zip(fns, times, strict=True):
            t0 = CLOCK()
            fn()
            ts.append(CLOCK() - t0)
    return [sorted(ts)[len(ts) // 4] for ts in times]


def dispatch_overhead(name: str = "lstm_cell") -> dict[str, float]:
    """Per-call time at 2^6 elements: the whole compiled call, the kernel's step
    (its plan looked up, outputs allocated, the native call), their difference
    (key checks, guards, host program), and the packed native call alone."""
    fn, args, _ = workload(name, 6)
    f = fusec.compile(fn)
    f(*args)
    total = bench(f, args, budget=0.5)
    step, ins = _bare_kernel(f.last.program, args)
    call = step.fn.kernel.call  # what the host program calls
    kernel = bench(lambda *xs: call(xs), ins, budget=0.5)
    native = bench(_bare_native_call(step.fn.kernel, ins, step.fn(*ins)), [], budget=0.5)
    eager = bench(fn, args, budget=0.5)
    return {"call": total, "kernel": kernel, "overhead": total - kernel, "eager": eager,
            "native": native, "launches": f.launches_per_call}  # fmt: skip


def backend_per_call(name: str, batch: int = 200, rounds: int = 41) -> dict[str, float]:
    """Per-call time at 2^6 elements through `torch.compile`: eager, Dynamo with
    its "eager" backend (Dynamo's own guards and frame, the floor of any
    backend), fusec as the backend, and Inductor, each call's time the lower
    quartile over `rounds` interleaved batches of `batch` calls."""
    fn, args, _ = workload(name, 6)
    torch._dynamo.reset()
    dynamo = torch.compile(fn, backend="eager", dynamic=False)
    fu = torch.compile(fn, backend="fusec", dynamic=False)
    ind = torch.compile(fn, dynamic=False)
    before = {id(g) for g in fusec.dynamo_graphs()}
    _check(fn, fu, args)
    launches = sum(g.launches_per_call for g in fusec.dynamo_graphs() if id(g) not in before)

    def batched(f: Callable[..., Any]) -> Callable[[], Any]:
        def run() -> None:
            for _ in range(batch):
                f(*args)

        return run

    times = interleaved([batched(f) for f in (fn, dynamo, fu, ind)], rounds)
    eager, dyn, fus, inductor = (t / batch for t in times)
    return {"eager": eager, "dynamo": dyn, "fusec": fus, "inductor": inductor,
            "launches": launches}  # fmt: skip


def iree_backend() -> str | None:
    """The IREE CPU Dynamo backend's name when iree-turbine is installed."""
    try:
        import iree.turbine  # noqa: F401
        import iree.turbine.dynamo.backends.base  # noqa: F401
    except Exception:  # noqa: BLE001 - absent or broken: the column is skipped
        return None
    return "turbine_cpu"


def _check(fn: Callable[..., Any], f: Callable[..., Any], args: list[Any]) -> None:
    want, got = fn(*args), f(*args)
    for w, g in zip(
        want if isinstance(want, tuple) else (want,),
        got if isinstance(got, tuple) else (got,),
        strict=True,
    ):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="6,16,20,24", help="log2 of the element counts")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--no-iree", action="store_true")
    ap.add_argument(
        "--workloads", default="lstm_cell,chain8,bias_gelu,transposed_add,broadcast_add"
    )
    ap.add_argument(
        "--threads", type=int, default=0, help="threads for torch and fusec (0: all cores)"
    )
    ap.add_argument("--cpu-time", action="store_true", help="time with process CPU time")
    ap.add_argument(
        "--per-call", action="store_true", help="median of single calls, not of batch means"
    )
    ap.add_argument(
        "--only-per-call", action="store_true", help="only the per-call lines at 2^6 (no tables)"
    )
    opts = ap.parse_args()
    global CLOCK, PER_CALL
    if opts.cpu_time:
        CLOCK = time.process_time
    PER_CALL = opts.per_call
    if opts.threads:
        torch.set_num_threads(opts.threads)
        os.environ["FUSEC_NUM_THREADS"] = str(opts.threads)
    torch.manual_seed(0)
    iree = None if opts.no_iree else iree_backend()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, fusec {fusec.__version__}, "
        f"IREE: {'turbine_cpu' if iree else 'not installed (skipped)'}"
    )
    if opts.only_per_call:
        print_per_call()
        return
    bw = copy_bandwidth()
    print(f"copy bandwidth (2^24 f32, read+write): {bw:.1f} GB/s\n")
    header = (
        f"{'workload':14} {'elems':>6} | {'eager us':>10} | {'inductor us':>11} | "
        f"{'iree us':>10} | {'fusec us':>10} {'GB/s':>6} {'k/call':>6} | {'f/e':>5} {'f/i':>5}"
    )
    print(header)
    print("-" * len(header))
    for name in opts.workloads.split(","):
        for log2 in (int(s) for s in opts.sizes.split(",")):
            fn, args, nbytes = workload(name, log2)
            eager = bench(fn, args)
            ind = iree_t = float("nan")
            if not opts.no_inductor:
                torch._dynamo.reset()
                ind = bench(torch.compile(fn, dynamic=False), args)
            if iree:
                torch._dynamo.reset()
                try:
                    g = torch.compile(fn, backend=iree, dynamic=False)
                    _check(fn, g, args)
                    iree_t = bench(g, args)
                except Exception as e:  # noqa: BLE001 - a peer's failure is reported, not fatal
                    print(f"  (IREE failed on {name}: {type(e).__name__})")
            f = fusec.compile(fn)
            _check(fn, f, args)
            fu = bench(f, args)

            def us(t: float, width: int = 10) -> str:
                return f"{t * 1e6:{width}.1f}" if t == t else f"{'-':>{width}}"

            print(
                f"{name:14} {'2^' + str(log2):>6} | {us(eager)} | {us(ind, 11)} | {us(iree_t)} | "
                f"{us(fu)} {nbytes / fu / 1e9:6.2f} {f.launches_per_call:6d} | "
                f"{fu / eager:5.2f} {fu / ind if ind == ind else float('nan'):5.2f}"
            )
    print()
    cold, warm, preloaded, cold_preloaded = compile_times()
    print(
        f"fusec first call, LSTM tail (fresh processes, median of {FIRST_CALL_ROUNDS}; wall, "
        f"cpu): cold "
        f"{cold['seconds'] * 1e3:.0f} ms, {cold['cpu'] * 1e3:.0f} ms "
        f"(kernels_compiled={cold['kernels_compiled']}), warm {warm['seconds'] * 1e3:.0f} ms, "
        f"{warm['cpu'] * 1e3:.0f} ms (disk_hits={warm['disk_hits']}, "
        f"kernels_compiled={warm['kernels_compiled']}, xdsl imported: {warm['xdsl']}), "
        f"warm with all of fusec's modules (and so xDSL, llvmlite) imported first "
        f"{preloaded['seconds'] * 1e3:.0f} ms, {preloaded['cpu'] * 1e3:.0f} ms; cold with them "
        f"imported first {cold_preloaded['seconds'] * 1e3:.0f} ms, "
        f"{cold_preloaded['cpu'] * 1e3:.0f} ms (kernels_compiled="
        f"{cold_preloaded['kernels_compiled']})"
    )
    lo = lstm_loop_overhead()
    print(
        f"fusec 50-step LSTM loop (batch 64, hidden 256, {lo['launches']} kernel/step): "
        f"{lo['loop'] * 1e3:.2f} ms, of which steps' work (matmuls + bare kernels, on the "
        f"loop's data) {lo['work'] * 1e3:.2f} ms: host overhead "
        f"{100 * (lo['loop'] / lo['work'] - 1):.1f}% (against step 1's work done 50 times, "
        f"{lo['work_first'] * 1e3:.2f} ms: {100 * (lo['loop'] / lo['work_first'] - 1):.1f}%) "
        f"(eager {lo['eager'] * 1e3:.2f} ms)"
    )
    print_per_call()


def print_per_call() -> None:
    """The per-call lines at 2^6 elements: through `torch.compile`, and fusec's
    host overhead over its bare kernel."""
    for name in ("broadcast_add", "lstm_cell"):
        b = backend_per_call(name)
        print(
            f"torch.compile per-call at 2^6 ({name}, fusec {b['launches']} kernel): eager "
            f"{b['eager'] * 1e6:.2f} us, backend=\"eager\" (Dynamo alone) {b['dynamo'] * 1e6:.2f} us, "
            f"backend=\"fusec\" {b['fusec'] * 1e6:.2f} us ({(b['fusec'] - b['dynamo']) * 1e6:+.2f} us "
            f"over Dynamo alone), Inductor {b['inductor'] * 1e6:.2f} us"
        )
    for name in ("lstm_cell", "chain8"):
        d = dispatch_overhead(name)
        print(
            f"fusec per-call at 2^6 ({name}, {d['launches']} kernel): call {d['call'] * 1e6:.1f} us, "
            f"kernel step {d['kernel'] * 1e6:.1f} us (native call alone "
            f"{d['native'] * 1e6:.1f} us), host overhead {d['overhead'] * 1e6:.1f} us "
            f"(eager: {d['eager'] * 1e6:.1f} us)"
        )


if __name__ == "__main__":
    main()
