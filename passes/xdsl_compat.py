"""Every use fusec makes of xDSL's internals (underscore names), in one place.

xDSL has no public API for these; each helper says why fusec needs it.
`tests/test_xdsl_compat.py` checks what each relies on against the installed
xDSL, so an upgrade that moves one fails there, with the name, instead of as a
wrong result somewhere in the compiler. Nothing here changes xDSL: helpers read
or write the fields of objects fusec made, and `LinearLexer` is a subclass.

    set_block_args(block, args)      # args already numbered 0..n-1, owned by block
    current_token(parser).kind       # MLIRTokenKind.EOF on an empty input
    use_lexer(parser, LinearLexer(Input(text, name)))
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from xdsl.utils.mlir_lexer import MLIRLexer, MLIRToken, MLIRTokenKind

if TYPE_CHECKING:
    from xdsl.ir import Block, BlockArgument, Operation
    from xdsl.parser import Parser
    from xdsl.utils.lexer import Lexer

XDSL_TESTED = ("0.75",)
"""The xDSL releases (major.minor) these helpers were checked against."""


def set_block_args(block: Block, args: Sequence[BlockArgument]) -> None:
    """Make `args` the arguments of `block` in one step.

    The caller has set each `arg.index` and `arg.block`; `Block.insert_arg` and
    `erase_arg` renumber every later argument on each call, which made a fusion
    step O(arguments) per added or dropped argument."""
    block._args = tuple(args)  # pyright: ignore[reportPrivateUsage]


def current_token(parser: Parser) -> MLIRToken:
    """The token `parser` is at (xDSL's `_current_token`): where a diagnostic
    points when no op was being parsed, and EOF on an input without ops."""
    return parser._current_token  # pyright: ignore[reportPrivateUsage]


def use_lexer(parser: Parser, lexer: Lexer[MLIRTokenKind, str]) -> None:
    """Make `parser` read its tokens from `lexer` (from its first token on);
    xDSL's `Parser` builds its own `MLIRLexer` with no way to pass another."""
    from xdsl.parser.generic_parser import ParserState

    parser._parser_state = ParserState(lexer)  # pyright: ignore[reportPrivateUsage]


class LinearLexer(MLIRLexer):
    """xDSL's MLIR lexer with a string-literal pattern that cannot backtrack
    exponentially: xDSL's `(?:[^"\\...]+|\\...)*"` tries every split of an
    unterminated literal's text (40 characters: hours); one character per
    repetition matches the same literals in linear time."""

    _unescaped_characters_regex = re.compile(r'"(?:[^"\\\n\v\f]|\\(?:["nt\\]|[0-9A-Fa-f]{2}))*"')


def llvm_intrinsic_names() -> dict[type[Operation], str]:
    """The `llvm.intr.*` op classes xDSL translates to intrinsic calls, with the
    intrinsic's unmangled name (`llvm.copysign`): fusec calls them by their
    mangled name instead (`fusec.codegen.kernel._mangle_intrinsics`)."""
    from xdsl.backend.llvm import convert_op  # imports llvmlite: only when translating

    return {
        **convert_op._UNARY_INTRINSIC_MAP,  # pyright: ignore[reportPrivateUsage]
        **convert_op._BINARY_INTRINSIC_MAP,  # pyright: ignore[reportPrivateUsage]
    }
