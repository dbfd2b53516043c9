"""How the `fuse` pass scales: pointwise graphs of 1k, 4k and 16k ops.

    python benchmarks/fuse_scaling.py [--repeats 3] [--shape chain ...]

Three shapes: a chain (`x -> exp -> neg -> ...`), a diamond lattice (layers of
width 8, each node adding two neighbours of the layer before), and a wide fan-out
(one value read by n/2 ops whose results are summed back by a tree of adds).
Prints the pass time per size (best of `--repeats` runs, graphs built outside the
timed region) and time(16k)/time(1k); exits 1 if any ratio reaches 24 (linear
would be 16, quadratic 256).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable

from fusec.dialects.aten import AddOp, ExpOp, MulOp, NegOp, SigmoidOp, TanhOp
from fusec.dialects.fusion import GroupOp
from fusec.passes.fuse import FusePass
from xdsl.context import Context
from xdsl.dialects.builtin import Float32Type, ModuleOp, TensorType
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue

T = TensorType(Float32Type(), [64, 64])
UNARY = (ExpOp, NegOp, SigmoidOp, TanhOp)


def _module(build: Callable[[Block], list[SSAValue]], n_args: int) -> ModuleOp:
    block = Block(arg_types=[T] * n_args)
    results = build(block)
    block.add_op(ReturnOp(*results))
    func = FuncOp("f", ((T,) * n_args, (T,) * len(results)), Region(block))
    return ModuleOp([func])


def chain(n: int) -> ModuleOp:
    def build(block: Block) -> list[SSAValue]:
        v: SSAValue = block.args[0]
        for i in range(n):
            op: Operation = UNARY[i % 4](v)
            block.add_op(op)
            v = op.results[0]
        return [v]

    return _module(build, 1)


def diamond_lattice(n: int, width: int = 8) -> ModuleOp:
    def build(block: Block) -> list[SSAValue]:
        layer: list[SSAValue] = list(block.args)
        count = 0
        while count + width <= n:
            nxt: list[SSAValue] = []
            for j in range(width):
                op = AddOp(layer[j], layer[(j + 1) % width])
                block.add_op(op)
                nxt.append(op.result)
            layer = nxt
            count += width
        return layer[:1]

    return _module(build, width)


def fan_out(n: int) -> ModuleOp:
    def build(block: Block) -> list[SSAValue]:
        root = ExpOp(block.args[0])
        block.add_op(root)
        leaves: list[SSAValue] = []
        for i in range(n // 2):
            op = MulOp(root.result, block.args[1 + i % 4])
            block.add_op(op)
            leaves.append(op.result)
        while len(leaves) > 1:
            nxt = []
            for a, b in zip(leaves[::2], leaves[1::2], strict=False):
                op = AddOp(a, b)
                block.add_op(op)
                nxt.append(op.result)
            if len(leaves) % 2:
                nxt.append(leaves[-1])
            leaves = nxt
        return leaves

    return _module(build, 5)


def time_fuse(make: Callable[[int], ModuleOp], n: int, repeats: int) -> tuple[float, int]:
    """Best of `repeats` runs of the pass on fresh graphs of `n` ops (built untimed).

    The minimum is the run least disturbed by other work on a shared machine; the
    cyclic GC is collected before and disabled during each run (as timeit does),
    since its full collections grow with the heap and would be charged to the pass.
    """
    best = float("inf")
    groups = 0
    for _ in range(repeats):
        module = make(n)
        module.verify()
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            FusePass().apply(Context(), module)
            elapsed = time.perf_counter() - start
        finally:
            gc.enable()
        module.verify()
        best = min(best, elapsed)
        groups = sum(1 for op in module.walk() if isinstance(op, GroupOp))
        del module
    return best, groups


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per size (best kept)")
    parser.add_argument("--shape", choices=sorted(SHAPES), action="append", help="default: all")
    args = parser.parse_args(argv)
    sizes = (1000, 4000, 16000)
    print(f"{'shape':<16}" + "".join(f"{n:>12}" for n in sizes) + f"{'16k/1k':>10}  groups@16k")
    worst = 0.0
    for name in args.shape or SHAPES:
        times: list[float] = []
        groups = 0
        for n in sizes:
            t, groups = time_fuse(SHAPES[name], n, args.repeats)
            times.append(t)
        ratio = times[-1] / times[0]
        worst = max(worst, ratio)
        print(
            f"{name:<16}" + "".join(f"{t * 1000:>10.1f}ms" for t in times) + f"{ratio:>10.1f}"
            f"  {groups}",
            flush=True,
        )
    print(f"worst ratio {worst:.1f} (limit {LIMIT})")
    return 0 if worst < LIMIT else 1


SHAPES: dict[str, Callable[[int], ModuleOp]] = {
    "chain": chain,
    "diamond-lattice": diamond_lattice,
    "wide-fan-out": fan_out,
}
LIMIT = 24
"""time(16k)/time(1k) must stay below this (linear is 16, quadratic 256)."""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
