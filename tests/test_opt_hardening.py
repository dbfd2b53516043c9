"""`fusec-opt` never hangs and never shows a traceback (issue 15, point 6): each
input an attacker or a fuzzer found gets a located error and exit status 1, or
works."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FUSEC_OPT = str(Path(sys.executable).parent / "fusec-opt")
ROOT = Path(__file__).resolve().parent.parent

TWO_OPS = """\
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
  %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
"""


def run(
    tmp_path: Path, source: str | bytes, *args: str, timeout: float = 60
) -> tuple[int, str, str]:
    path = tmp_path / "input.mlir"
    path.write_bytes(source.encode() if isinstance(source, str) else source)
    proc = subprocess.run(
        [FUSEC_OPT, str(path), *args], capture_output=True, text=True, timeout=timeout
    )
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def assert_located(tmp_path: Path, source: str | bytes, line: int, message: str, *args: str):
    rc, _, err = run(tmp_path, source, *args)
    assert rc == 1, err
    first = err.splitlines()[0]
    assert first.startswith(f"{tmp_path / 'input.mlir'}:{line}:"), err
    assert ": error: " in first and message in first, err


def test_an_unterminated_string_literal_is_an_error_at_once(tmp_path):
    source = 'func.func @f() {\n  "test.op"() {a = "' + "a" * 40 + "} : () -> ()\n}\n"
    assert_located(tmp_path, source, 2, "before closing string literal")
    long = '"test.op"() {a = "' + "ab\\n" * 20000 + "}"
    rc, _, err = run(tmp_path, long, timeout=30)
    assert rc == 1 and "before closing string literal" in err


def test_a_string_literal_with_escapes_still_parses(tmp_path):
    source = (
        'func.func @f() {\n  "test.op"() {a = "x\\n\\t\\"\\\\\\41y"} : () -> ()\n  func.return\n}\n'
    )
    rc, out, err = run(tmp_path, source, "--allow-unregistered-dialect")
    assert rc == 0, err
    assert '"x\\0A\\09\\22\\\\Ay"' in out  # the same string, as xDSL prints it


def test_non_utf8_input(tmp_path):
    assert_located(tmp_path, b"func.func @f() {\n  \xff\xfe\n}\n", 2, "not valid UTF-8 (byte 0xff)")


def test_deeply_nested_modules_work(tmp_path):
    rc, out, err = run(tmp_path, "builtin.module {" * 150 + "}" * 150)
    assert rc == 0, err
    assert out.count("builtin.module") == 150


@pytest.mark.parametrize(
    "source",
    [
        "builtin.module {" * 5000 + "}" * 5000,
        'func.func @f() { "test.op"() {a = ' + "(" * 200 + "} : () -> () }",
        'func.func @f() { "test.op"() {a = ' + "[" * 30000 + "} : () -> () }",
    ],
    ids=["5000-modules", "200-parens", "30000-brackets"],
)
def test_past_the_nesting_limit_is_a_located_error(tmp_path, source):
    assert_located(tmp_path, source, 1, "")


@pytest.mark.parametrize(
    "body",
    [
        "%0 = arith.constant 18446744073709551616 : i64",
        "%0 = arith.constant dense<18446744073709551616> : tensor<2xi64>",
        "%0 = arith.constant 2 : i1",
        '%0 = "test.op"() {x = array<i64: 18446744073709551616>} : () -> i32',
    ],
)
def test_integers_out_of_range(tmp_path, body):
    source = f"func.func @f() {{\n  {body}\n  func.return\n}}\n"
    assert_located(tmp_path, source, 2, "out of range", "--allow-unregistered-dialect")


def test_an_integer_past_i64_in_an_aten_attribute(tmp_path):
    source = TWO_OPS.replace(
        "aten.exp %x :", "aten.add %x, %x alpha = 18446744073709551616 : i64 :"
    ).replace(
        "tensor<4xf32> -> tensor<4xf32>\n  %1",
        "tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>\n  %1",
        1,
    )
    assert_located(tmp_path, source, 2, "out of range")


def test_vector_math_at_emit_llvmir(tmp_path):
    source = (
        "func.func @f(%a: vector<4xf32>) -> vector<4xf32> {\n"
        "  %0 = math.exp %a : vector<4xf32>\n"
        "  func.return %0 : vector<4xf32>\n}\n"
    )
    assert_located(
        tmp_path, source, 2, "'math.exp' op cannot be translated to LLVM IR", "--emit=llvmir"
    )


def test_a_scalar_only_group(tmp_path):
    source = (
        "func.func @f(%a: f32) -> f32 {\n"
        "  %0 = fusion.group (%x = %a) : (f32) -> (f32) {\n"
        "    fusion.yield %x : f32\n  }\n"
        "  func.return %0 : f32\n}\n"
    )
    assert_located(tmp_path, source, 2, "not a tensor", "--emit=loops")


def test_the_mlir_opt_pass_without_mlir_opt(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))
    rc, _, err = run(tmp_path, TWO_OPS, "-p", "mlir-opt")
    assert rc == 1 and "fusec-opt: error: pass 'mlir-opt' needs the 'mlir-opt'" in err, err


def test_emit_llvmir_of_a_nested_module(tmp_path):
    nested = "builtin.module {\nbuiltin.module {\n" + TWO_OPS + "}\n}\n"
    rc, out, err = run(tmp_path, nested, "--fuse", "--emit=llvmir")
    assert rc == 0, err
    assert "define void @" in out and "f_group0" in out


def test_emit_ptx_of_a_nested_module(tmp_path):
    nested = "builtin.module {\nbuiltin.module {\n" + TWO_OPS + "}\n}\n"
    rc, out, err = run(tmp_path, nested, "--fuse", "--emit=ptx")
    assert rc == 0, err
    assert ".entry f_group0" in out


def test_a_verifier_failure_after_a_pass_is_located(tmp_path, monkeypatch, capsys):
    """A pass that leaves invalid IR (here, the libdevice declarations put in the
    outermost module again, as before `enclosing_module`) is reported at the op
    that fails, or its closest located ancestor: the nested module."""
    from fusec.passes import convert_math_to_llvm
    from fusec.tools import opt

    monkeypatch.setattr(
        convert_math_to_llvm, "enclosing_module", lambda op: op.get_toplevel_object()
    )
    path = tmp_path / "input.mlir"
    path.write_text("builtin.module {\nbuiltin.module {\n" + TWO_OPS + "}\n}\n")
    assert opt.run([str(path), "--fuse", "--emit=ptx"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:1: error: "), err
    assert "'@__nv_expf' could not be found" in err, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-p", "fuse{arg-limit=-1}"), "arg-limit must be at least 2"),
        (("-p", "fuse-concat-exits{arg-limit=0}"), "arg-limit must be at least 2"),
        (("-p", "guard{device=banana}"), "device must be cpu, cuda or cuda:N"),
        (("-p", "lower-group-to-loops{target=amdgpu}"), "unknown target 'amdgpu'"),
        (("-p", "convert-math-to-llvm{target=amdgpu}"), "unknown target 'amdgpu'"),
        (("--emit=bogus",), "unknown stage 'bogus'"),
        (("--no-such-flag",), "unrecognized arguments"),
    ],
)
def test_bad_options_exit_1(tmp_path, args, message):
    rc, out, err = run(tmp_path, TWO_OPS, *args)
    assert rc == 1, err
    assert out == ""
    assert "error: " in err and message in err, err


@pytest.mark.parametrize("source", ["", "\n\n", "// only a comment\n"])
def test_an_empty_file_is_an_empty_module(tmp_path, source):
    rc, out, err = run(tmp_path, source)
    assert rc == 0, err
    assert out.split() == ["builtin.module", "{", "}"]


@pytest.mark.parametrize(
    ("body", "line"),
    [
        # Its own result as an operand (a fuzzer's mutation of a lit input).
        (
            "  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>\n"
            "  %1 = aten.neg %1 : tensor<4xf32> -> tensor<4xf32>\n",
            3,
        ),
        # A value defined by a later op of the block.
        (
            "  %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>\n"
            "  %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>\n",
            2,
        ),
    ],
)
def test_use_before_definition_is_a_located_error(tmp_path: Path, body: str, line: int) -> None:
    source = (
        "func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        + body
        + "  func.return %1 : tensor<4xf32>\n}\n"
    )
    for args in ((), ("--fuse",), ("-p", "lower-group-to-loops{target=nvptx}")):
        assert_located(tmp_path, source, line, "is used before it is defined", *args)
