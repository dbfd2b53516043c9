"""Located diagnostics: `file:line:col: error: message`, as mlir-opt prints them.

The parser records where each op starts (as its `FileLineColLoc`, the MLIR way),
so a verifier failure found after parsing still points at the source line.
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import (
    DiagnosticException,
    MultipleSpansParseError,
    ParseError,
    VerifyException,
)


class LocatedParser(Parser):
    """A parser that gives every op it builds the source location it was read from."""

    line_offset: int = 0

    def parse_operation(self) -> Operation:
        span = self._current_token.span
        op = super().parse_operation()
        if not isinstance(op.location, FileLineColLoc):
            loc = span.get_location()
            op.location = FileLineColLoc(
                StringAttr(loc.file), IntAttr(loc.line + self.line_offset), IntAttr(loc.col)
            )
        return op


class LocatedError(DiagnosticException):
    """A diagnostic already formatted as `file:line:col: error: ...`."""


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


def op_location(op: Operation) -> str:
    """`file:line:col` of `op`, or of its closest located ancestor."""
    cur: Operation | None = op
    while cur is not None:
        if isinstance(cur.location, FileLineColLoc):
            loc = cur.location
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        cur = cur.parent_op()
    return "<unknown>"


def located_verify_error(module: ModuleOp, err: Exception) -> LocatedError:
    """Turn a verifier failure anywhere in `module` into a located error on the op
    that fails (found by checking each op on its own, innermost first)."""
    for op in module.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            return LocatedError(f"{op_location(op)}: error: '{op.name}' op {e}")
    return LocatedError(f"{op_location(module)}: error: {err}")


def parse_and_verify(
    ctx: Context, source: str | bytes, name: str, line_offset: int = 0
) -> ModuleOp:
    """Parse and verify a module; every failure is a located `DiagnosticException`."""
    parser = LocatedParser(ctx, source, name)
    parser.line_offset = line_offset
    try:
        module = parser.parse_module()
    except ParseError as e:
        raise LocatedError(format_parse_error(e, line_offset)) from None
    try:
        module.verify()
    except (VerifyException, ValueError) as e:
        raise located_verify_error(module, e) from None
    return module
