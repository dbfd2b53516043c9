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


def _fan_out_lattice(n: int) -> tuple[ModuleOp, Operation]:
    """`n` ops: a root read by n/2 products, summed by a tree of adds (as the scaling
    benchmark's wide fan-out), followed by a width-4 diamond lattice over the sum."""
    block = Block(arg_types=[T] * 5)
    root = ExpOp(block.args[0])
    block.add_op(root)
    leaves: list[SSAValue] = []
    for i in range(n // 4):
        op = MulOp(root.result, block.args[1 + i % 4])
        block.add_op(op)
        leaves.append(op.result)
    while len(leaves) > 1:
        nxt: list[SSAValue] = []
        for a, b in zip(leaves[::2], leaves[1::2], strict=False):
            op = AddOp(a, b)
            block.add_op(op)
            nxt.append(op.result)
        leaves = nxt + leaves[len(nxt) * 2 :]
    layer = [leaves[0], *block.args[1:4]]
    for _ in range(n // 8):
        layer = [AddOp(layer[j], layer[(j + 1) % 4]).result for j in range(4)]
        for v in layer:
            block.add_op(v.owner)  # pyright: ignore[reportArgumentType]
    block.add_op(ReturnOp(layer[0], root.result))
    return ModuleOp([FuncOp("f", ((T,) * 5, (T, T)), Region(block))]), root


def test_large_fan_out_and_lattice_fuse_correctly() -> None:
    module, root = _fan_out_lattice(2000)
    n_ops = sum(1 for op in module.walk() if op.name.startswith("aten."))
    FusePass().apply(_ctx(), module)
    module.verify()  # dominance holds: no cycles, every use after its definition
    groups = _groups(module)
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    top = [op for op in func.body.block.ops if op.name.startswith("aten.")]
    assert top == []  # every pointwise op joined a group
    for group in groups:
        assert len(group.inputs) + len(group.outputs) <= 128
        assert isinstance(group.body.block.last_op, YieldOp)
        for arg, value in zip(group.body.block.args, group.inputs, strict=True):
            assert arg.type == value.type
            assert arg.uses  # no dead arguments left behind by merges
        for out in group.outputs:
            assert out.uses  # outputs are made only for values used outside
    # The root is computed once, inside a group, and still reaches the return.
    assert root.parent_op() in groups
    ret = func.body.block.last_op
    assert isinstance(ret, ReturnOp)
    assert all(isinstance(v.owner, GroupOp) for v in ret.arguments)
    # Nothing was lost (CSE only merges the tree's equal products and sums).
    inside = sum(1 for op in module.walk() if op.name.startswith("aten."))
    assert 0 < inside <= n_ops
    assert {op.name for g in groups for op in g.body.block.ops} >= {
        "aten.exp", "aten.mul", "aten.add", "fusion.yield",
    }  # fmt: skip
