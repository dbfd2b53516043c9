"""The `fuse` pass on small and random graphs: structure and invariants."""

from __future__ import annotations

import random

from fusec.dialects.aten import AddOp, Aten, ExpOp, MulOp, NegOp, OpaqueOp, SigmoidOp
from fusec.dialects.fusion import Fusion, GroupOp, YieldOp
from fusec.passes.fuse import FusePass
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, Float32Type, ModuleOp, TensorType
from xdsl.dialects.func import Func, FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.parser import Parser

T = TensorType(Float32Type(), [4])


def _ctx() -> Context:
    ctx = Context()
    for d in (Builtin, Func, Arith, Aten, Fusion):
        ctx.load_dialect(d)
    return ctx


def _groups(module: ModuleOp) -> list[GroupOp]:
    return [g for g in module.walk() if isinstance(g, GroupOp)]


def test_seed_run_example_ends_as_one_group() -> None:
    src = """
    func.func @f(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %1 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
      %2 = aten.neg %1 : tensor<4xf32> -> tensor<4xf32>
      %3 = aten.sigmoid %1 : tensor<4xf32> -> tensor<4xf32>
      %4 = aten.tanh %3 : tensor<4xf32> -> tensor<4xf32>
      func.return %4, %2 : tensor<4xf32>, tensor<4xf32>
    }"""
    module = Parser(_ctx(), src).parse_module()
    FusePass().apply(_ctx(), module)
    module.verify()
    (group,) = _groups(module)
    assert [op.name for op in group.body.block.ops] == [
        "aten.exp", "aten.neg", "aten.sigmoid", "aten.tanh", "fusion.yield",
    ]  # fmt: skip
    assert len(group.outputs) == 2


def _random_module(seed: int, n: int = 60) -> ModuleOp:
    rng = random.Random(seed)
    block = Block(arg_types=[T] * 3)
    values: list[SSAValue] = list(block.args)
    for _ in range(n):
        kind = rng.random()
        pick = lambda: values[rng.randrange(max(0, len(values) - 8), len(values))]  # noqa: E731
        op: Operation
        if kind < 0.1:
            op = OpaqueOp("aten.foo", [pick()], [T])
        elif kind < 0.5:
            op = rng.choice([ExpOp, NegOp, SigmoidOp])(pick())
        else:
            op = rng.choice([AddOp, MulOp])(pick(), pick())
        block.add_op(op)
        values.append(op.results[0])
    outs = values[-3:]
    block.add_op(ReturnOp(*outs))
    return ModuleOp([FuncOp("f", ((T,) * 3, (T,) * 3), Region(block))])


def _op_count(module: ModuleOp) -> dict[str, int]:
    counts: dict[str, int] = {}
    for op in module.walk():
        if op.name.startswith("aten."):
            counts[op.name] = counts.get(op.name, 0) + 1
    return counts


def test_random_graphs_stay_valid_and_keep_their_ops() -> None:
    for seed in range(15):
        module = _random_module(seed)
        before = _op_count(module)
        FusePass(arg_limit=6).apply(_ctx(), module)
        module.verify()  # dominance: no cycles were made
        after = _op_count(module)
        # CSE may merge equal ops, but nothing is lost outright.
        assert set(after) == set(before), seed
        for group in _groups(module):
            body = list(group.body.block.ops)
            assert isinstance(body[-1], YieldOp)
            assert len(group.inputs) + len(group.outputs) <= 6, seed
            assert sum(1 for op in body if op.name.startswith("aten.")) >= 2, seed
            assert not any(op.name == "aten.opaque" for op in body), seed
