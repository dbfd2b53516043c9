"""What a compiled graph returns, as the importer describes it: `Ret` and `Const`
leaves in the structure of the function's result (tuples, lists, dicts).

    return (y, 2, {"h": h})   ->   (Ret(0), Const(2), {"h": Ret(1)})

Kept apart from the importer, which needs xDSL, so that a program loaded from the
warm-start cache can rebuild its results without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from xdsl.ir import SSAValue


@dataclass(frozen=True)
class Ret:
    index: int


@dataclass(frozen=True)
class Const:
    """A node whose value is known at import time."""

    value: Any
    from_shape: bool = False
    source: SSAValue | None = None
    """For a whole size (`x.shape`): the tensor it is read from, so a returned size
    can be `aten.size` of it instead of a constant."""
    symbolic: bool = False
    """Dynamo recorded this value with symbolic sizes: its value here is only this
    call's, so it must never become a constant of the program."""
