"""The IR text fusec keeps for itself, in MLIR's generic op format.

The warm-start program (`fusec.runtime.program_cache`), a kernel entry's group
(`fusec.runtime.cache.group_text`) and the hash that names a kernel
(`fusec.codegen.kernel`) are read by fusec alone, never by a person. The generic
format needs no op's declarative assembly format, which xDSL parses on first
use (`fusec.lazy_formats`) after importing its format parser: printing the
LSTM tail's module the custom way cost 7-8 ms of a cold first call, the
generic way 3-4 ms, and no other step of a first call needs the formats.
Both formats parse back to the same IR.

    %0 = aten.neg %x : tensor<4xf32> -> tensor<4xf32>
    ->
    %0 = "aten.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
"""

from __future__ import annotations

from io import StringIO

from xdsl.ir import Block, Operation
from xdsl.printer import Printer


def generic_text(ir: Operation | Block) -> str:
    """`ir` printed in the generic op format."""
    out = StringIO()
    printer = Printer(stream=out, print_generic_format=True)
    if isinstance(ir, Block):
        printer.print_block(ir)
    else:
        printer.print_op(ir)
    return out.getvalue()
