"""`fusec-opt` reports every error as `file:line:col: error: ...`, exit status 1, and
never a Python traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

FUSEC_OPT = str(Path(sys.executable).parent / "fusec-opt")

GOOD = """\
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = aten.neg %x : tensor<4xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""


def run(tmp_path: Path, source: str | None, *args: str) -> tuple[int, str, str]:
    argv = [FUSEC_OPT, *args]
    if source is not None:
        path = tmp_path / "input.mlir"
        path.write_text(source)
        argv.append(str(path))
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def assert_located(
    tmp_path: Path, source: str, line: int, col: int | None, message: str, *args: str
) -> None:
    """`col=None` where xDSL's parser picks the column (it points past an unknown op name)."""
    rc, _, err = run(tmp_path, source, *args)
    assert rc == 1, err
    prefix = f"{tmp_path / 'input.mlir'}:{line}:"
    assert err.startswith(prefix), err
    rest = err[len(prefix) :]
    if col is not None:
        assert rest.startswith(f"{col}: error: "), err
    assert re.match(r"\d+: error: ", rest), err
    assert message in err.splitlines()[0], err


def test_good_input_exits_zero(tmp_path: Path) -> None:
    rc, out, err = run(tmp_path, GOOD)
    assert rc == 0, err
    assert "aten.neg" in out


def test_syntax_error(tmp_path: Path) -> None:
    source = GOOD.replace("%0 = aten.neg %x", "%0 = aten.neg %x,,")
    assert_located(tmp_path, source, 2, 19, "")


def test_unknown_op(tmp_path: Path) -> None:
    source = GOOD.replace("aten.neg", "aten.frobnicate")
    assert_located(tmp_path, source, 2, None, "aten.frobnicate")


def test_ssa_value_used_with_another_type(tmp_path: Path) -> None:
    source = GOOD.replace("func.return %0 : tensor<4xf32>", "func.return %0 : tensor<4xf16>")
    assert_located(tmp_path, source, 3, 15, "tensor<4xf16>")


def test_impossible_broadcast(tmp_path: Path) -> None:
    source = """\
func.func @f(%x: tensor<4xf32>, %y: tensor<3xf32>) -> tensor<4xf32> {
  %0 = aten.add %x, %y : tensor<4xf32>, tensor<3xf32> -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}
"""
    assert_located(tmp_path, source, 2, 3, "'aten.add' op shapes [4] and [3] cannot be broadcast")


def test_verifier_error_inside_a_group(tmp_path: Path) -> None:
    source = """\
func.func @f(%a: tensor<4xi1>) -> tensor<4xi1> {
  %r = fusion.group (%x = %a) : (tensor<4xi1>) -> (tensor<4xi1>) {
    %0 = aten.neg %x : tensor<4xi1> -> tensor<4xi1>
    fusion.yield %0 : tensor<4xi1>
  }
  func.return %r : tensor<4xi1>
}
"""
    assert_located(tmp_path, source, 3, 5, "'aten.neg' op does not support bool inputs")


def test_split_input_file_keeps_whole_file_lines(tmp_path: Path) -> None:
    bad = """\
func.func @g(%x: tensor<4xf32>) -> tensor<4xi32> {
  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xi32>
  func.return %0 : tensor<4xi32>
}
"""
    source = GOOD + "\n// -----\n\n" + bad
    line = GOOD.count("\n") + 5  # the separator adds three lines; the op is the 2nd
    assert_located(tmp_path, source, line, 3, "'aten.exp' op result #0", "--split-input-file")


def test_split_input_file_parse_error_line(tmp_path: Path) -> None:
    source = GOOD + "\n// -----\n\n" + GOOD.replace("aten.neg", "aten.nope")
    line = GOOD.count("\n") + 5  # the separator adds three lines; the op is the 2nd
    assert_located(tmp_path, source, line, None, "aten.nope", "--split-input-file")


def test_verify_diagnostics_prints_and_exits_zero(tmp_path: Path) -> None:
    source = GOOD.replace(
        "aten.neg %x : tensor<4xf32> -> tensor<4xf32>",
        "aten.neg %x : tensor<4xf32> -> tensor<4xf16>",
    )
    source = source.replace("func.return %0 : tensor<4xf32>", "func.return %0 : tensor<4xf16>")
    source = source.replace("-> tensor<4xf32> {", "-> tensor<4xf16> {")
    rc, out, err = run(tmp_path, source, "--verify-diagnostics")
    assert rc == 0, err
    assert out.startswith(f"{tmp_path / 'input.mlir'}:2:3: error: 'aten.neg' op result #0"), out


def test_nonexistent_input_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.mlir"
    rc, _, err = run(tmp_path, None, str(missing))
    assert rc == 1
    assert err.startswith("fusec-opt: error: "), err
    assert str(missing) in err


@pytest.mark.parametrize("pipeline", ["no-such-pass", "canonicalize{", "canonicalize{bogus=1}"])
def test_bad_pass_pipeline(tmp_path: Path, pipeline: str) -> None:
    rc, _, err = run(tmp_path, GOOD, "-p", pipeline)
    assert rc == 1, err
    assert err.startswith("fusec-opt: error: invalid pass pipeline"), err
