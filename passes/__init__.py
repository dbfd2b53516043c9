"""fusec's passes, one per file. `FUSEC_PASSES` maps each pass name (as used in
`fusec-opt -p`) to a loader, so the tool imports only the passes a pipeline names."""

from collections.abc import Callable

from xdsl.passes import ModulePass

FUSEC_PASSES: dict[str, Callable[[], type[ModulePass]]] = {}
