"""Output targets `fusec-opt -t <name>` adds to xdsl-opt's (filled by code generation)."""

from collections.abc import Callable
from typing import IO

from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.target import Target

FUSEC_TARGETS: dict[str, Callable[[ModuleOp, IO[str]], None] | Callable[[], type[Target]]] = {}
