"""Where an op is in its source file, for the errors passes raise.

`fusec-opt`'s parser gives each op its `FileLineColLoc` (`fusec.tools.diagnostics`);
a pass that rejects an op says where, as mlir-opt does:

    lower-group-to-loops on an op parsed at line 7 of k.mlir
    -> LocatedError("k.mlir:7:5: error: lower-group-to-loops: ...")

An op without a location reports its closest located ancestor.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


class LocatedError(DiagnosticException):
    """A diagnostic already formatted as `file:line:col: error: ...`."""


def op_location(op: Operation) -> str:
    """`file:line:col` of `op`, or of its closest located ancestor."""
    cur: Operation | None = op
    while cur is not None:
        if isinstance(cur.location, FileLineColLoc):
            loc = cur.location
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
        cur = cur.parent_op()
    return "<unknown>"
