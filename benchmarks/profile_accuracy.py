"""How well `fusec.explain(..., profile=True)` accounts for a call: the profile's
total (kernels + PyTorch ops + host time between them) against ordinary calls
timed apart, on the GPT-style block of the tests (issue 34's goal: within 10%).

    python benchmarks/profile_accuracy.py [--rounds 5] [--threads 1]

Prints one line per round and the median ratio; a benchmark, not a test, since
the ratio is a timing on a shared machine."""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import fusec  # noqa: E402
from gpt2_block import Block  # noqa: E402
from test_profile import ordinary_call_seconds  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 16, 32)
    compiled = fusec.compile(model, program_cache=False)
    ratios = []
    print(f"{'round':>5} {'profile total us':>17} {'ordinary call us':>17} {'ratio':>6}")
    with torch.no_grad():
        for r in range(args.rounds):
            (graph,) = fusec.explain(compiled, x, profile=True).graphs
            call = ordinary_call_seconds(compiled, x)
            ratios.append(graph.profile.total / call)
            print(f"{r:>5} {graph.profile.total * 1e6:>17.1f} {call * 1e6:>17.1f} {ratios[-1]:>6.3f}")
    print(f"median ratio {statistics.median(ratios):.3f} (goal: within 0.90-1.10)")


if __name__ == "__main__":
    main()
