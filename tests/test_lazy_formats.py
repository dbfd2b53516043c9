"""Assembly formats built on first print/parse (`fusec.lazy_formats`)."""

from __future__ import annotations

import subprocess
import sys

from fusec.dialects.aten import Aten
from fusec.dialects.fusion import Fusion
from fusec.lazy_formats import LAZY_PROGRAM, build_all
from xdsl.context import Context
from xdsl.dialects import arith, func, get_all_dialects, llvm
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser


def test_every_format_of_fusec_dialects_and_the_xdsl_ones_it_lowers_through_builds() -> None:
    """A malformed format raises when first built, not at import: build all of
    them here (aten, fusion, and xDSL's arith/func/llvm as fusec imports them)."""
    ops = [*Aten.operations, *Fusion.operations, *arith.Arith.operations]
    ops += [*func.Func.operations, *llvm.LLVM.operations]
    lazy = [op for op in ops if LAZY_PROGRAM in op.__dict__]
    assert len(lazy) > 150, "the formats are not lazy: is `lazy_formats` installed?"
    assert build_all(ops) == len(lazy)


def test_all_registered_dialects_build_their_formats() -> None:
    """Every dialect `fusec-opt` can load (xDSL's registry and fusec's)."""
    built = 0
    for name, factory in get_all_dialects().items():
        try:
            dialect = factory()
        except ImportError:  # a dialect needing an optional package
            continue
        built += build_all(dialect.operations)
        assert name
    assert built > 500


_TEXT = """\
func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = aten.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
  %r = aten.relu %s : tensor<4xf32> -> tensor<4xf32>
  %c = arith.constant 2 : i32
  %d = arith.addi %c, %c : i32
  func.return %r : tensor<4xf32>
}
"""


def test_custom_format_round_trips() -> None:
    ctx = Context()
    for dialect in (Builtin, Aten, Fusion, arith.Arith, func.Func):
        ctx.load_dialect(dialect)
    module = Parser(ctx, _TEXT).parse_module()
    assert isinstance(module, ModuleOp)
    printed = str(module)
    assert "aten.add %a, %b : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>" in printed
    assert "arith.addi %c, %c : i32" in printed
    assert str(Parser(ctx, printed).parse_module()) == printed


def test_import_fusec_imports_no_xdsl() -> None:
    """The hook waits for xDSL's import: a warm-started call never imports it."""
    code = "import sys, fusec; print(any(m.startswith('xdsl') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
