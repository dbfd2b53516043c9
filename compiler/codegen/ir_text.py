"""The IR text fusec keeps for itself, in MLIR's generic op format.

The warm-start program (`fusec.runtime.program_cache`), a kernel entry's group
(`group_text`) and the hash that names a kernel
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

from fusec.dialects.aten import Aten
from fusec.dialects.fusion import Fusion, GroupOp
from xdsl.context import Context
from xdsl.dialects import func, get_all_dialects
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region
from xdsl.parser import Parser
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


def context() -> Context:
    """A context that parses fusec's IR: xDSL's dialects and fusec's own."""
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    for dialect in (Aten, Fusion):
        if dialect.name not in ctx.registered_dialect_names:
            ctx.register_dialect(dialect.name, lambda d=dialect: d)
    return ctx


def parse_module(text: str) -> ModuleOp:
    """The module of `text` (either op format), parsed with `context()`."""
    return Parser(context(), text).parse_module()


def group_text(group: GroupOp) -> str:
    """`group` as a module that parses on its own (`group_from_text`): a
    function whose arguments stand for the group's operands. What a CPU
    kernel's entry keeps, so that a process that loads the kernel by key can
    build its tiled variant (`fusec.runtime.kernel_signature.TILED_CPU`) on first need."""
    block = Block(arg_types=[v.type for v in group.operands])
    # A new group over the function's arguments with a copy of the body: the body
    # is isolated from above, so nothing in it refers to the old operands.
    clone = GroupOp(list(block.args), list(group.result_types), group.body.clone())
    clone.attributes.update(group.attributes)
    block.add_ops([clone, func.ReturnOp(*clone.results)])
    types = ([v.type for v in group.operands], list(group.result_types))
    fn = func.FuncOp("group", types, Region(block))
    return generic_text(ModuleOp([fn]))


def group_from_text(text: str) -> GroupOp | None:
    """The group of a `group_text`, or None when the text does not parse to one."""
    try:
        module = parse_module(text)
    except Exception:  # noqa: BLE001 - a damaged entry's text: no variant, not an error
        return None
    return next((op for op in module.walk() if isinstance(op, GroupOp)), None)
