"""fusec's ops build their assembly format on first print/parse (`fusec.dialects.lazy_format`)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from fusec.dialects import aten
from fusec.dialects.aten import Aten
from fusec.dialects.fusion import Fusion
from fusec.dialects.lazy_format import LazyFormatOp, build_formats, format_text
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import Builtin, ModuleOp, TensorType, f32
from xdsl.irdl import irdl_op_definition, operand_def, result_def
from xdsl.irdl.operations import PyRDLOpDefinitionError
from xdsl.parser import Parser
from xdsl.utils.test_value import create_ssa_value


def test_every_format_of_fusec_dialects_builds() -> None:
    """A malformed format raises when first built, not at import: build them all."""
    ops = [*Aten.operations, *Fusion.operations]
    with_format = [op for op in ops if format_text(op) is not None]
    assert len(with_format) > 70
    assert build_formats(ops) == len(with_format)


def test_xdsl_sees_ops_without_a_declarative_format() -> None:
    """The text is fusec's until first use: xDSL parsed none of it."""
    assert "assembly_format" not in vars(aten.AddOp)
    assert aten.AddOp.get_irdl_definition().assembly_format is None
    assert format_text(aten.NegOp) == format_text(aten.UnaryPointwiseOp)  # inherited


def test_importing_the_dialects_builds_no_format() -> None:
    code = (
        "import fusec.dialects.aten, fusec.dialects.fusion\n"
        "from fusec.dialects import lazy_format\n"
        "print(len(lazy_format._PROGRAMS))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


_TEXT = """\
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = aten.add %a, %b alpha = 2 : i64 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = aten.relu %s : tensor<4xf32> -> tensor<4xf32>
  %n = aten.neg %r : tensor<4xf32> -> tensor<4xf32>
  %c = arith.constant 2 : i32
  %d = arith.addi %c, %c : i32
  func.return %n : tensor<4xf32>
}
"""


def test_formats_round_trip() -> None:
    ctx = Context()
    for dialect in (Builtin, Aten, Fusion, arith.Arith, func.Func):
        ctx.load_dialect(dialect)
    module = Parser(ctx, _TEXT).parse_module()
    assert isinstance(module, ModuleOp)
    printed = str(module)
    for line in _TEXT.splitlines()[1:-2]:
        assert line.strip() in printed
    assert str(Parser(ctx, printed).parse_module()) == printed


def test_malformed_format_raises_on_first_use() -> None:
    @irdl_op_definition
    class BadOp(LazyFormatOp):
        name = "test.bad_lazy_format"
        x = operand_def(TensorType)
        r = result_def(TensorType)
        assembly_format = "$x `:` type($nothing)"

    t = TensorType(f32, [4])
    op = BadOp.create(operands=[create_ssa_value(t)], result_types=[t])
    with pytest.raises(PyRDLOpDefinitionError, match="BadOp"):
        str(op)
