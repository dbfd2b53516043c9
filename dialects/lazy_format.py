"""`LazyFormatOp`: fusec's ops parse their declarative assembly format on first use.

xDSL parses an op's `assembly_format` when `@irdl_op_definition` defines the op
(about 30 ms for the aten and fusion dialects, every process that imports the
compiler), though a compile prints or parses few of these ops. A subclass of
`LazyFormatOp` writes `assembly_format` as usual; at class creation the text is
taken off the class (so xDSL sees an op without a declarative format) and the
class gets `parse`/`print` methods, the documented way to give an op custom
syntax, that build xDSL's `FormatProgram` from the text the first time the
concrete op class is printed or parsed, then reuse it. Nothing in xDSL changes:
ops of other dialects keep their eager formats.

    @irdl_op_definition
    class AddOp(LazyFormatOp):
        name = "aten.add"
        assembly_format = "$lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)"

    print(AddOp(...))   # builds AddOp's format program now, once, then prints

Subclasses inherit the format (and a subclass can set its own). The text an op
prints and accepts is xDSL's for that format; a malformed format raises
`PyRDLOpDefinitionError` when the op is first printed or parsed (`build_formats`
builds them all, which the tests do).
"""

from __future__ import annotations

from abc import ABC
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from xdsl.irdl import IRDLOperation

if TYPE_CHECKING:
    from xdsl.irdl.declarative_assembly_format import FormatProgram
    from xdsl.parser import Parser
    from xdsl.printer import Printer

_FORMATS: dict[type, str] = {}
"""The format text each class set (subclasses look theirs up along the MRO)."""

_PROGRAMS: dict[type, FormatProgram] = {}
"""Built programs, per concrete op class (a program is tied to its op's definition)."""


def format_text(op_type: type) -> str | None:
    """The declarative format `op_type` has (its own or inherited), if any."""
    for klass in op_type.__mro__:
        text = _FORMATS.get(klass)
        if text is not None:
            return text
    return None


def format_program(op_type: type[IRDLOperation]) -> FormatProgram:
    """`op_type`'s format program, built on the first call."""
    program = _PROGRAMS.get(op_type)
    if program is None:
        from xdsl.irdl.declarative_assembly_format import FormatProgram
        from xdsl.irdl.operations import PyRDLOpDefinitionError
        from xdsl.utils.exceptions import ParseError

        text = format_text(op_type)
        assert text is not None, f"{op_type.__name__} has no assembly format"
        try:
            program = FormatProgram.from_str(text, op_type.get_irdl_definition())
        except ParseError as e:
            raise PyRDLOpDefinitionError(
                f"{op_type.__name__}: error in its assembly format: ", e.args
            ) from e
        _PROGRAMS[op_type] = program
    return program


class LazyFormatOp(IRDLOperation, ABC):
    """An op whose `assembly_format` is parsed when first used (module docstring)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        text = cls.__dict__.get("assembly_format")
        if text is None:
            return
        _FORMATS[cls] = text
        del cls.assembly_format  # xDSL would parse it now
        cls.parse = classmethod(_parse)  # type: ignore[method-assign, assignment]
        cls.print = _print  # type: ignore[method-assign, assignment]


def _parse(cls: type[IRDLOperation], parser: Parser) -> IRDLOperation:
    return format_program(cls).parse(parser, cls)


def _print(self: IRDLOperation, printer: Printer) -> None:
    format_program(type(self)).print(printer, self)


def build_formats(ops: Iterable[type]) -> int:
    """Builds the format program of each op class in `ops` that has a lazy
    format (how the tests find a malformed one); returns how many."""
    built = 0
    for op in ops:
        if isinstance(op, type) and format_text(op) is not None:
            format_program(op)
            built += 1
    return built
