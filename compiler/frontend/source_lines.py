"""Where in the user's code an op came from, for logs, explanations and warnings.

fx nodes carry a `stack_trace` (Dynamo's graphs always; `fusec.compile`'s own
trace records one, see `fusec.frontend.importer.trace`). Its innermost frame outside torch
and fusec is the user's line:

    node.stack_trace == 'File "model.py", line 12, in forward\\n    y = x.sigmoid()'
    user_line(node)  == SourceLine("model.py", 12, "y = x.sigmoid()")

Warnings point at that line (`warnings.warn_explicit`), or at the innermost
caller outside torch and fusec when there is no graph line.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Any

from fusec.runtime.host_code import FILE_PREFIX

# A frame's line, then its code unless the next line is already a frame (a
# `<string>` frame has no code line).
_FRAME = re.compile(
    r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>[^\n]+)'
    r'(?:\n(?!\s*File ")(?P<code>[^\n]*))?'
)


@dataclass(frozen=True)
class SourceLine:
    file: str
    line: int
    code: str = ""

    def __str__(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}"


@functools.cache
def library_dirs() -> tuple[str, ...]:
    """Directories whose frames are never the user's: torch's and fusec's packages."""
    dirs: list[str] = []
    for name in ("torch", "fusec", "fusec.dialects", "fusec.passes", "fusec.runtime"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            dirs += [os.path.join(d, "") for d in spec.submodule_search_locations]
    return tuple(dirs)


def is_library_file(filename: str) -> bool:
    # Generated host code (`fusec.runtime.host_code`) is fusec's too: a warning
    # raised under a fast path names the user's call, not the fast path.
    return filename.startswith(library_dirs()) or filename.startswith(("<frozen", FILE_PREFIX))


def user_line(node: Any) -> SourceLine | None:
    """The innermost user frame of an fx node's stack trace, if it has one."""
    trace = getattr(node, "stack_trace", None) or (
        getattr(node, "meta", {}).get("stack_trace") if node is not None else None
    )
    if not trace:
        return None
    found: SourceLine | None = None
    for m in _FRAME.finditer(trace):
        if not is_library_file(m["file"]):
            found = SourceLine(m["file"], int(m["line"]), (m["code"] or "").strip())
    return found


def warn_user(message: str, node: Any = None, category: type[Warning] = UserWarning) -> None:
    """Warn at the user's line for `node`, else at the innermost caller outside
    torch and fusec (so the warning names the user's code, not fusec's)."""
    where = user_line(node) if node is not None else None
    if where is not None:
        warnings.warn_explicit(message, category, where.file, where.line, module="fusec")
        return
    frame = sys._getframe(1)
    level = 2  # 1 is this function; 2 its caller, the first frame looked at
    while frame is not None and is_library_file(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level if frame is not None else 2)
