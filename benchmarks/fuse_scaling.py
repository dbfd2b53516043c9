"""How the `fuse` pass scales: pointwise graphs of 1k, 4k and 16k ops.

    python benchmarks/fuse_scaling.py

Three shapes: a chain (`x -> exp -> neg -> ...`), a diamond lattice (layers of
width 8, each node adding two neighbours of the layer before), and a wide fan-out
(one value read by n/2 ops whose results are summed back by a tree of adds).
Prints the pass time per size and time(16k)/time(1k), which must stay under 24
(linear would be 16, quadratic 256).
"""

from __future__ import annotations

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


def time_fuse(module: ModuleOp) -> tuple[float, int]:
    # As timeit does: the cyclic GC's full collections grow with the heap and
    # would be measured as the pass's cost.
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        FusePass().apply(Context(), module)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    return elapsed, sum(1 for op in module.walk() if isinstance(op, GroupOp))


def main() -> int:
    sizes = (1000, 4000, 16000)
    shapes = {"chain": chain, "diamond lattice": diamond_lattice, "wide fan-out": fan_out}
    print(f"{'shape':<16}" + "".join(f"{n:>12}" for n in sizes) + f"{'16k/1k':>10}  groups@16k")
    worst = 0.0
    for name, make in shapes.items():
        times: list[float] = []
        groups = 0
        for n in sizes:
            module = make(n)
            module.verify()
            t, groups = time_fuse(module)
            module.verify()
            times.append(t)
        ratio = times[-1] / times[0]
        worst = max(worst, ratio)
        print(
            f"{name:<16}" + "".join(f"{t * 1000:>10.1f}ms" for t in times) + f"{ratio:>10.1f}"
            f"  {groups}"
        )
    print(f"worst ratio {worst:.1f} (limit 24)")
    return 0 if worst < 24 else 1


if __name__ == "__main__":
    sys.exit(main())
