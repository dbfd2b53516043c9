"""What `fusec.passes.xdsl_compat` relies on in the installed xDSL.

Each test names the xDSL internal it checks, so an upgrade that renames or
drops one fails here with that name rather than somewhere in the compiler.
"""

from __future__ import annotations

import re
from importlib.metadata import version

import pytest
from fusec.passes import xdsl_compat
from fusec.passes.xdsl_compat import (
    LinearLexer,
    current_token,
    llvm_intrinsic_names,
    set_block_args,
    use_lexer,
)
from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import Builtin, f32, i32
from xdsl.ir import Block, BlockArgument, Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRLexer, MLIRTokenKind


def test_installed_xdsl_is_a_tested_release() -> None:
    release = ".".join(version("xdsl").split(".")[:2])
    assert release in xdsl_compat.XDSL_TESTED, (
        f"xDSL {version('xdsl')} is not among the releases xdsl_compat was checked "
        f"against {xdsl_compat.XDSL_TESTED}: run this file, then add it"
    )


def test_set_block_args_replaces_what_block_args_returns() -> None:
    """`Block._args` is the tuple behind `Block.args`."""
    block = Block(arg_types=[i32, f32])
    assert isinstance(vars(block).get("_args"), tuple), "xDSL's Block no longer keeps `_args`"
    kept = block.args[1]
    new = BlockArgument(i32, block, 1)
    kept.index = 0
    set_block_args(block, [kept, new])
    assert block.args == (kept, new)
    assert block.arg_types == (f32, i32)
    block.insert_arg(f32, 2)  # xDSL's own editing still sees them
    assert [a.index for a in block.args] == [0, 1, 2]


def test_current_token_is_the_parsers_next_token() -> None:
    """`GenericParser._current_token`: the token the parser is at."""
    parser = Parser(Context(), "  %x ")
    token = current_token(parser)
    assert token.kind == MLIRTokenKind.PERCENT_IDENT
    assert token.text == "%x"
    assert current_token(Parser(Context(), "// only a comment\n")).kind == MLIRTokenKind.EOF


def test_use_lexer_makes_the_parser_read_that_lexer() -> None:
    """`GenericParser._parser_state` holds the lexer the parser reads."""
    ctx = Context()
    ctx.load_dialect(Builtin)
    parser = Parser(ctx, "")
    use_lexer(parser, LinearLexer(Input('"builtin.module"() ({}) : () -> ()', "<t>")))
    assert current_token(parser).kind == MLIRTokenKind.STRING_LIT
    assert parser.parse_module().name == "builtin.module"


def test_linear_lexer_pattern_is_the_one_xdsl_lexes_strings_with() -> None:
    """`MLIRLexer._unescaped_characters_regex` matches string literals: a
    subclass's pattern is what its instances lex with."""
    assert isinstance(vars(MLIRLexer).get("_unescaped_characters_regex"), re.Pattern), (
        "xDSL's MLIRLexer no longer has `_unescaped_characters_regex`"
    )

    class NoStrings(MLIRLexer):
        _unescaped_characters_regex = re.compile(r"(?!)")

    with pytest.raises(ParseError):
        NoStrings(Input('"abc"', "<t>")).lex()
    for text in ('"abc"', r'"a\"b\n\\c\41"', '""'):
        a, b = LinearLexer(Input(text, "<t>")).lex(), MLIRLexer(Input(text, "<t>")).lex()
        assert (a.kind, a.text) == (b.kind, b.text) == (MLIRTokenKind.STRING_LIT, text)


def test_llvm_intrinsic_names_cover_the_intrinsic_ops() -> None:
    """`convert_op._UNARY_INTRINSIC_MAP` / `_BINARY_INTRINSIC_MAP`: op class ->
    unmangled intrinsic name."""
    names = llvm_intrinsic_names()
    assert names, "xDSL's convert_op no longer lists its intrinsic ops"
    assert all(isinstance(v, str) and v.startswith("llvm.") for v in names.values())
    assert all(issubclass(k, Operation) for k in names)
    assert names[llvm.FCopySignOp] == "llvm.copysign"
    assert names[llvm.FExpOp] == "llvm.exp"
