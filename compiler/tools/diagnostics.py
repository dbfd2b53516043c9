"""Located diagnostics: `file:line:col: error: message`, as mlir-opt prints them.

The parser records where each op starts (as its `FileLineColLoc`, the MLIR way),
so a verifier failure found after parsing still points at the source line.
"""

from __future__ import annotations

from fusec.passes.op_locations import LocatedError, op_location
from fusec.passes.xdsl_compat import LinearLexer, current_token, use_lexer
from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, OpResult
from xdsl.parser import Parser
from xdsl.utils.exceptions import (
    MultipleSpansParseError,
    ParseError,
    VerifyException,
)
from xdsl.utils.lexer import Input
from xdsl.utils.mlir_lexer import MLIRTokenKind


def decode_source(source: str | bytes, name: str, line_offset: int = 0) -> str:
    """`source` as text; a located error at the first byte that is not UTF-8."""
    if isinstance(source, str):
        return source
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError as e:
        line = source.count(b"\n", 0, e.start) + 1 + line_offset
        col = e.start - (source.rfind(b"\n", 0, e.start) + 1) + 1
        bad = source[e.start : e.start + 1].hex()
        raise LocatedError(
            f"{name}:{line}:{col}: error: input is not valid UTF-8 (byte 0x{bad})"
        ) from None


class LocatedParser(Parser):
    """A parser that gives every op it builds the source location it was read from
    (and lexes with `LinearLexer`)."""

    line_offset: int = 0

    def __init__(self, ctx: Context, source: str | bytes, name: str = "<unknown>") -> None:
        text = decode_source(source, name)
        super().__init__(ctx, "", name)
        use_lexer(self, LinearLexer(Input(text, name)))

    def parse_operation(self) -> Operation:
        span = current_token(self).span
        try:
            op = super().parse_operation()
        except Exception as e:
            # The innermost op being parsed is where a constructor's error belongs.
            if not hasattr(e, "fusec_op_span"):
                e.fusec_op_span = span  # type: ignore[attr-defined]
            raise
        if not isinstance(op.location, FileLineColLoc):
            loc = span.get_location()
            op.location = FileLineColLoc(
                StringAttr(loc.file), IntAttr(loc.line + self.line_offset), IntAttr(loc.col)
            )
        return op


def format_parse_error(err: ParseError, line_offset: int = 0) -> str:
    """`file:line:col: error: msg` followed by the source line and a caret."""
    span = err.span
    if line_offset:
        span = type(span)(span.start, span.end, span.input, line_offset)
    loc = span.get_location()
    context = span.print_with_context(None).split("\n", 1)[1].rstrip("\n")
    text = f"{loc.file}:{loc.line}:{loc.col}: error: {err.msg}\n{context}"
    if isinstance(err, MultipleSpansParseError):
        for ref_span, ref_msg in err.refs:
            ref = ref_span.get_location()
            text += f"\n{ref.file}:{ref.line}:{ref.col}: note: {ref_msg or ''}"
    return text


def located_verify_error(module: ModuleOp, err: Exception) -> LocatedError:
    """Turn a verifier failure anywhere in `module` into a located error on the op
    that fails (found by checking each op on its own, innermost first)."""
    for op in module.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            return LocatedError(f"{op_location(op)}: error: '{op.name}' op {e}")
    return LocatedError(f"{op_location(module)}: error: {err}")


def _at(parser: Parser, error: BaseException | None = None) -> str:
    """`file:line:col` of the op `error` was raised in, else of the parser's token."""
    span = getattr(error, "fusec_op_span", None) or current_token(parser).span
    loc = span.get_location()
    return f"{loc.file}:{loc.line + getattr(parser, 'line_offset', 0)}:{loc.col}"


def parse_and_verify(
    ctx: Context, source: str | bytes, name: str, line_offset: int = 0
) -> ModuleOp:
    """Parse and verify a module; every failure is a located `DiagnosticException`."""
    text = decode_source(source, name, line_offset)
    try:
        parser = LocatedParser(ctx, text, name)  # lexes the first token
    except ParseError as e:
        raise LocatedError(format_parse_error(e, line_offset)) from None
    parser.line_offset = line_offset
    if current_token(parser).kind == MLIRTokenKind.EOF:
        return ModuleOp([])  # as mlir-opt: no ops (or only comments) is an empty module
    try:
        module = parser.parse_module()
    except ParseError as e:
        raise LocatedError(format_parse_error(e, line_offset)) from None
    except RecursionError:
        raise LocatedError(f"{_at(parser)}: error: input nested too deeply") from None
    except LocatedError:
        raise
    except Exception as e:  # noqa: BLE001 - malformed input is never a traceback
        # Attribute constructors reject values (an integer past its type's range)
        # with verifier errors, struct.error, ... while parsing: report them where
        # the parser is.
        raise LocatedError(f"{_at(parser, e)}: error: {e}") from None
    try:
        module.verify()
    except (VerifyException, ValueError) as e:
        raise located_verify_error(module, e) from None
    except RecursionError:
        raise LocatedError(f"{op_location(module)}: error: input nested too deeply") from None
    misuse = first_use_before_definition(module)
    if misuse is not None:
        raise misuse
    return module


def first_use_before_definition(module: ModuleOp) -> LocatedError | None:
    """MLIR's dominance check, for what xDSL's verifier leaves out: an operand
    defined later in its block (or by its own op), or in a block that does not
    enclose the use (`%1 = aten.mul %1, %s` parses, and passes would then look
    the value up before it exists). Uses across the blocks of one region follow
    the CFG and are left to the verifier."""
    positions: dict[int, dict[Operation, int]] = {}

    def position(op: Operation) -> int:
        block = op.parent_block()
        assert block is not None
        table = positions.get(id(block))
        if table is None:
            table = positions[id(block)] = {o: i for i, o in enumerate(block.ops)}
        return table[op]

    for op in module.walk():
        for i, v in enumerate(op.operands):
            defined_in = v.op.parent_block() if isinstance(v, OpResult) else v.block  # type: ignore[union-attr]
            user: Operation | None = op
            while user is not None and user.parent_block() is not defined_in:
                user = user.parent_op()
            if user is None:
                if _shares_region(op, defined_in):
                    continue
                why = "is not visible here"
            elif isinstance(v, OpResult) and (user is v.op or position(user) < position(v.op)):
                why = "is used before it is defined"
            else:
                continue
            return LocatedError(f"{op_location(op)}: error: '{op.name}' op operand #{i} {why}")
    return None


def _shares_region(op: Operation, block: Block | None) -> bool:
    region = None if block is None else block.parent
    cur: Operation | None = op
    while cur is not None:
        parent = cur.parent_block()
        if parent is not None and parent.parent is region:
            return True
        cur = cur.parent_op()
    return False
