"""The generic-format IR text fusec keeps for itself (`fusec.codegen.ir_text`)."""

from __future__ import annotations

import torch
from fusec.api.compile_steps import context as _context
from fusec.api.compile_steps import run_pipeline
from fusec.codegen.ir_text import generic_text, group_from_text, group_text
from fusec.frontend.importer import import_fx, trace
from reference_models import lstm_tail
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser


def fused_lstm_tail() -> ModuleOp:
    args = [torch.randn(4, 32), torch.randn(4, 8)]
    imported = import_fx(trace(lstm_tail), args, "f")
    run_pipeline(imported.module)
    return imported.module


def test_generic_text_parses_back_to_the_same_ir() -> None:
    module = fused_lstm_tail()
    text = generic_text(module)
    assert '"aten.sigmoid"(' in text and "aten.sigmoid %" not in text
    again = Parser(_context(), text).parse_module()
    assert str(again) == str(module)
    assert generic_text(again) == text


def test_a_kernel_entrys_group_text_gives_the_group_back() -> None:
    from fusec.dialects.fusion import GroupOp

    (group,) = [op for op in fused_lstm_tail().walk() if isinstance(op, GroupOp)]
    back = group_from_text(group_text(group))
    assert back is not None
    assert generic_text(back.body.block) == generic_text(group.body.block)
    assert back.result_types == group.result_types
