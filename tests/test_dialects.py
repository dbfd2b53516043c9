"""The aten and fusion dialects: traits, builders, docstrings, and that every op has
round-trip and invalid-IR FileCheck coverage."""

from __future__ import annotations

from pathlib import Path

import pytest
from fusec.dialects import aten, fusion
from fusec.dialects import inference as inf
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

FILECHECK = Path(__file__).resolve().parent.parent / "filecheck" / "dialects"
POINTWISE = {
    "aten.neg", "aten.abs", "aten.relu", "aten.exp", "aten.expm1", "aten.log", "aten.log1p",
    "aten.sqrt", "aten.rsqrt", "aten.reciprocal", "aten.sigmoid", "aten.tanh", "aten.silu",
    "aten.erf", "aten.sin", "aten.cos", "aten.logical_not", "aten.leaky_relu", "aten.gelu",
    "aten.clamp", "aten.to", "aten.add", "aten.sub", "aten.div", "aten.mul", "aten.pow",
    "aten.maximum", "aten.minimum", "aten.eq", "aten.ne", "aten.lt", "aten.le", "aten.gt",
    "aten.ge", "aten.logical_and", "aten.logical_or", "aten.logical_xor", "aten.where",
    "aten.full_like",
}  # fmt: skip
SHAPE_OPS = {
    "aten.expand", "aten.view", "aten.reshape", "aten.unsqueeze", "aten.squeeze",
    "aten.permute", "aten.transpose", "aten.chunk", "aten.split", "aten.cat", "aten.narrow",
    "aten.slice",
}  # fmt: skip


def _roundtrip_sources(dialect: str) -> str:
    return "\n".join(
        p.read_text() for p in (FILECHECK / dialect).glob("*.mlir") if "invalid" not in p.name
    )


@pytest.mark.parametrize("op", aten.ATEN_OPS, ids=lambda o: o.name)
def test_traits(op: type[aten.AtenOp]) -> None:
    assert op.has_trait(aten.Pointwise) == (op.name in POINTWISE)
    assert op.has_trait(aten.ShapeOp) == (op.name in SHAPE_OPS)


@pytest.mark.parametrize(
    "op", aten.ATEN_OPS + [fusion.GroupOp, fusion.YieldOp], ids=lambda o: o.name
)
def test_docstring_has_ir_example(op: type) -> None:
    assert op.__doc__ and f"{op.name} " in op.__doc__


@pytest.mark.parametrize("op", aten.ATEN_OPS, ids=lambda o: o.name)
def test_aten_op_has_roundtrip_test(op: type) -> None:
    assert f"{op.name} " in _roundtrip_sources("aten")


@pytest.mark.parametrize("op", [fusion.GroupOp, fusion.YieldOp], ids=lambda o: o.name)
def test_fusion_op_has_roundtrip_test(op: type) -> None:
    assert f"{op.name} " in _roundtrip_sources("fusion")


def test_builders_infer_result_types() -> None:
    x, y, s = Block(arg_types=[TensorType(inf.I32, [4, 1]), TensorType(inf.F16, [3]), inf.F64]).args
    add = aten.AddOp(x, y, alpha=aten.number_attr(2))
    assert add.result.type == TensorType(inf.F16, [4, 3])
    assert aten.MulOp(x, s).result.type == TensorType(inf.F32, [4, 1])
    assert aten.ExpOp(x).result.type == TensorType(inf.F32, [4, 1])
    assert aten.ToOp(x, inf.BF16).result.type == TensorType(inf.BF16, [4, 1])
    assert aten.ViewOp(x, [2, 2]).result.type == TensorType(inf.I32, [2, 2])
    cat = aten.CatOp([y, y], 0)
    assert cat.result.type == TensorType(inf.F16, [6])
    for op in (add, cat):
        op.verify()


def test_builder_rejects_what_the_verifier_rejects() -> None:
    (b,) = Block(arg_types=[TensorType(inf.BOOL, [4])]).args
    with pytest.raises(VerifyException, match="bool"):
        aten.NegOp(b)


def test_number_attr() -> None:
    assert aten.number_value(aten.number_attr(2), 0) == 2
    assert aten.number_value(aten.number_attr(0.5), 0) == 0.5
    assert aten.number_attr(True).type == inf.BOOL
    assert aten.number_value(None, 7) == 7


def test_chunk_sizes() -> None:
    assert aten.chunk_sizes(5, 3) == [2, 2, 1]
    assert aten.chunk_sizes(6, 4) == [2, 2, 2]
    assert aten.chunk_sizes(0, 2) == [0, 0]


def test_group_empty_and_yield() -> None:
    a, c = Block(arg_types=[TensorType(inf.F32, [4]), TensorType(inf.F32, [4])]).args
    group, block = fusion.GroupOp.empty([a, c])
    neg = aten.NegOp(block.args[0])
    block.add_ops([neg, fusion.YieldOp(neg)])
    assert group.yield_op.values[0] is neg.result
    with pytest.raises(VerifyException, match="group returns"):
        group.verify()
