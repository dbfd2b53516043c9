"""Declarative assembly formats parsed on first use instead of at import.

xDSL parses an op's `assembly_format` when the op class is defined
(`irdl_op_definition` -> `FormatProgram.from_str`): importing the dialects a
fusec process needs (builtin, arith, math, memref, scf, vector, llvm, and
fusec's aten dialect with 292 ops) parses about 230 formats, 60-70 ms of every
process start, although `fusec.compile` never prints or parses most of those
ops and `fusec-opt` only the ones in its input and output.

`install()` wraps xDSL's `get_accessors_from_op_def` so that an op class
defined afterwards gets `parse`/`print` methods that build its
`FormatProgram` the first time either is called, then keep it.
`install_on_import()` (run by `import fusec`) calls it as soon as
`xdsl.irdl.operations` is imported, before any dialect defines its ops, and
imports nothing itself: a warm-started `fusec.compile` never imports xDSL.

    class AddOp(IRDLOperation):
        assembly_format = "$lhs `,` $rhs attr-dict `:` type($result)"
    AddOp.print(op, printer)   # parses the format now, once, then prints

The text an op prints and the text it accepts are the same as with eager
parsing; a malformed format raises when the op is first printed or parsed
rather than at import (`tests/test_lazy_formats.py` builds every format of
every dialect fusec registers, so a bad one still fails the tests). Ops
defined before `install()` (a dialect imported before fusec) keep xDSL's own
methods.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from typing import Any

_INSTALLED = False
LAZY_PROGRAM = "lazy_format_program"
"""The class attribute holding an op's (lazy) `FormatProgram` builder."""


def install() -> None:
    """Makes formats of ops defined from now on lazy (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    from xdsl.irdl import operations

    eager = operations.get_accessors_from_op_def

    def get_accessors_from_op_def(op_def: Any, custom_verify: Any | None) -> dict[str, Any]:
        fmt = op_def.assembly_format
        if fmt is None:
            return eager(op_def, custom_verify)
        op_def.assembly_format = None
        try:
            attrs = eager(op_def, custom_verify)
        finally:
            op_def.assembly_format = fmt
        attrs.update(_lazy_methods(op_def))
        return attrs

    operations.get_accessors_from_op_def = get_accessors_from_op_def
    _INSTALLED = True


_HOOKED = "xdsl.irdl.operations"


class _InstallAfterImport(importlib.abc.MetaPathFinder):
    """Finds `xdsl.irdl.operations` through the other finders and runs
    `install()` right after the module has executed."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != _HOOKED:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_then_install(module: Any) -> None:
            exec_module(module)
            install()

        loader.exec_module = exec_then_install  # type: ignore[method-assign]
        return spec


def install_on_import() -> None:
    """`install()` now if xDSL's IRDL is already imported, else as soon as it is."""
    if _HOOKED in sys.modules:
        install()
    elif not any(isinstance(f, _InstallAfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _InstallAfterImport())


def _lazy_methods(op_def: Any) -> dict[str, Any]:
    program: list[Any] = []

    def format_program() -> Any:
        if not program:
            from xdsl.irdl.declarative_assembly_format import FormatProgram
            from xdsl.irdl.operations import PyRDLOpDefinitionError
            from xdsl.utils.exceptions import ParseError

            try:
                program.append(FormatProgram.from_str(op_def.assembly_format, op_def))
            except ParseError as e:
                raise PyRDLOpDefinitionError(
                    "Error during the parsing of the assembly format: ", e.args
                ) from e
        return program[0]

    @classmethod  # type: ignore[misc]
    def parse_with_format(cls: Any, parser: Any) -> Any:
        return format_program().parse(parser, cls)

    def print_with_format(self: Any, printer: Any) -> None:
        return format_program().print(printer, self)

    return {
        "parse": parse_with_format,
        "print": print_with_format,
        LAZY_PROGRAM: staticmethod(format_program),
    }


def build_all(ops: Any) -> int:
    """Builds the format program of each op class in `ops` that has a lazy one
    (what a test calls to find malformed formats); returns how many."""
    built = 0
    for op in ops:
        program = op.__dict__.get(LAZY_PROGRAM)
        if program is not None:
            program()
            built += 1
    return built
