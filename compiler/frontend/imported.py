"""What an import produces (`ImportedGraph`, with the `OpaqueCall`s the runtime
makes: `fusec.runtime.opaque_calls`) and the exception a handler raises to
leave a node to PyTorch (`NotMapped`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from fusec.frontend.size_checks import SizeCheck
from fusec.runtime.opaque_calls import OpaqueCall
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation


class NotMapped(Exception):
    """Raised by a handler: this node has no `aten` form here; the importer
    makes it an `aten.opaque` op (run through PyTorch) and records the message
    as the reason (`ImportedGraph.opaque_reasons`)."""


@dataclass
class ImportedGraph:
    """An imported graph and what the runtime needs to run it."""

    module: ModuleOp
    func: func.FuncOp
    inputs: list[tuple[str, Any]]
    """One entry per function argument: ("arg", i) is the caller's i-th argument,
    ("attr", "lin.weight") a parameter or buffer read from the module each call."""
    outputs: Any
    """The output structure: `Ret(i)` for the i-th returned value, `Const` leaves."""
    opaque: dict[str, OpaqueCall] = field(default_factory=dict)
    shape_dependent: bool = False
    origins: dict[Operation, torch.fx.Node] = field(default_factory=dict)
    """The fx node each imported op came from (for explanations and logs)."""
    opaque_reasons: dict[str, str] = field(default_factory=dict)
    """Why a node (by name) became `aten.opaque`."""
    size_checks: tuple[SizeCheck, ...] = ()
    """Classes of argument sizes the import depends on (`fusec.frontend.size_checks`)."""
