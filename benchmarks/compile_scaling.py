"""Whole-compile time of long pointwise chains through `fusec.compile`, and where
a cold compile of the LSTM cell spends its time.

    python benchmarks/compile_scaling.py [--ops 500,2000,10000] [--cap 512]

Each chain length is compiled in a fresh process with an empty kernel cache
(cold) and with `fuse{max-group-ops}` at `--cap`; the table gives the first-call
seconds (wall clock, and the process's CPU seconds, which a machine shared with
other work inflates less), the groups formed and the kernels compiled (identical
capped pieces share one kernel), and checks the result against eager PyTorch. Then the LSTM
cell's cold compile in a fresh process, split into import, pipeline, kernel
generation (xDSL lowering + translation) and LLVM (O3 + JIT).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

_CHAIN_CHILD = textwrap.dedent(
    """
    import json, time, torch
    import fusec
    from fusec.codegen.pipelines import compile_pipeline
    n, cap = {n}, {cap}
    def chain(x):
        for i in range(n):
            x = (torch.sigmoid, torch.tanh, torch.neg, torch.exp)[i % 4](x) if i % 4 != 3 else x * 0.5
        return x
    pipeline = compile_pipeline().replace(",fuse,", f",fuse{{{{max-group-ops={{cap}}}}}},")
    x = torch.randn(256)
    t0, c0 = time.perf_counter(), time.process_time()
    f = fusec.compile(chain, pipeline=pipeline)
    got = f(x)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    torch.testing.assert_close(got, chain(x))
    print(json.dumps({{"seconds": dt, "cpu": cpu, "launches": f.launches_per_call,
                      **fusec.cache_stats()}}))
    """
)

_LSTM_CHILD = textwrap.dedent(
    """
    import json, time
    t_imports = time.perf_counter()
    import torch, fusec
    from fusec.codegen import kernel as codegen
    from fusec.backends import llvm_jit
    t_imported = time.perf_counter()
    spent = {{"kernel_llvm_ir": 0.0, "optimize_for_host": 0.0, "jit": 0.0}}
    def timed(mod, name, key):
        fn = getattr(mod, name)
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[key] += time.perf_counter() - t
        setattr(mod, name, wrapper)
    timed(codegen, "kernel_llvm_ir", "kernel_llvm_ir")
    timed(llvm_jit, "optimize_for_host", "optimize_for_host")
    from fusec.runtime import cpu
    orig_init = cpu.JitModule.__init__
    def jit_init(self, text):
        t = time.perf_counter()
        orig_init(self, text)
        spent["jit"] += time.perf_counter() - t
    cpu.JitModule.__init__ = jit_init
    def lstm_cell(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
        gates = torch.nn.functional.linear(x, w_ih, b_ih) + torch.nn.functional.linear(hx, w_hh, b_hh)
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(cy), cy
    b, i, h = 8, 32, 64
    args = [torch.randn(b, i), torch.randn(b, h), torch.randn(b, h), torch.randn(4 * h, i),
            torch.randn(4 * h, h), torch.randn(4 * h), torch.randn(4 * h)]
    t0, c0 = time.perf_counter(), time.process_time()
    f = fusec.compile(lstm_cell)
    got = f(*args)
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    for g, w in zip(got, lstm_cell(*args)):
        torch.testing.assert_close(g, w)
    spec = f.last
    print(json.dumps({{"imports": t_imported - t_imports, "first_call": total, "cpu": cpu,
                      "compile": spec.compile_seconds, "launches": f.launches_per_call, **spent}}))
    """
)


def _child(code: str) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "FUSEC_CACHE_DIR": d}
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr[-4000:])
        return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default="500,2000,10000")
    ap.add_argument("--cap", type=int, default=512)
    opts = ap.parse_args()
    print(
        f"{'chain ops':>10} {'cap':>6} | {'cold s':>8} {'cpu s':>8} {'kernels/call':>12} "
        f"{'compiled':>8}"
    )
    for n in (int(s) for s in opts.ops.split(",")):
        r = _child(_CHAIN_CHILD.format(n=n, cap=opts.cap))
        print(
            f"{n:>10} {opts.cap:>6} | {r['seconds']:8.2f} {r['cpu']:8.2f} {r['launches']:>12} "
            f"{r['kernels_compiled']:>8}"
        )
    r = _child(_LSTM_CHILD.format())
    print(
        f"\nLSTM cell, fresh process, empty cache: imports {r['imports']:.2f} s, first call "
        f"{r['first_call'] * 1e3:.0f} ms ({r['cpu'] * 1e3:.0f} ms cpu; "
        f"compile {r['compile'] * 1e3:.0f} ms: kernel lowering "
        f"{r['kernel_llvm_ir'] * 1e3:.0f} ms, LLVM O3 {r['optimize_for_host'] * 1e3:.0f} ms, "
        f"JIT {r['jit'] * 1e3:.0f} ms; {r['launches']} kernel)"
    )


if __name__ == "__main__":
    main()
