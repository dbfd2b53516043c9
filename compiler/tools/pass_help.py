"""The "fusec passes" section of `fusec-opt --help`: each pass with the first
paragraph of its module docstring and its options (the pass dataclass's fields).

    fuse
        `fuse`: pointwise producers fuse into their consumers' `fusion.group`s.
        options: arg-limit=128 max-group-ops=512 horizontal=false
            sibling-reductions=true singleton-groups=false

Only `--help` builds it, since it imports every pass module.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import textwrap

from fusec.codegen.pipelines import EMIT_PIPELINES, FUSE_PIPELINE
from fusec.passes import _PASSES


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    para: list[str] = []
    for line in doc.strip().splitlines():
        if not line.strip():
            break
        para.append(line.strip())
    return " ".join(para)


def _options(cls: type) -> str:
    if not dataclasses.is_dataclass(cls):
        return ""
    out = []
    for f in dataclasses.fields(cls):
        default = f.default
        if isinstance(default, bool):
            shown = str(default).lower()
        elif default is dataclasses.MISSING or default is None:
            shown = "none"
        else:
            shown = str(default)
        out.append(f"{f.name.replace('_', '-')}={shown}")
    return " ".join(out)


def passes_help() -> str:
    """The epilog text."""
    lines = ["fusec passes (use with -p, e.g. -p 'fuse{arg-limit=32},cse'):", ""]
    for name, module, cls_name in _PASSES:
        mod = importlib.import_module(f"fusec.passes.{module}")
        cls = getattr(mod, cls_name)
        lines.append(f"  {name}")
        text = _first_paragraph(mod.__doc__) or _first_paragraph(cls.__doc__)
        lines += textwrap.wrap(text, 76, initial_indent="      ", subsequent_indent="      ")
        options = _options(cls)
        if options:
            lines += textwrap.wrap(
                f"options: {options}",
                76,
                initial_indent="      ",
                subsequent_indent="        ",
                break_on_hyphens=False,
            )
    lines += [
        "",
        "pipelines:",
        *textwrap.wrap(
            f"--fuse = -p {FUSE_PIPELINE}",
            76,
            initial_indent="  ",
            subsequent_indent="      ",
            break_on_hyphens=False,
        ),
        f"  --emit=<stage>: {', '.join(sorted(EMIT_PIPELINES))} "
        "(-t 'ptx{arch=sm_90}' picks the PTX architecture)",
        "  --view-fusion-graph=out.html: the fusion groups after the pipeline, as HTML/SVG",
    ]
    return "\n".join(lines)


def wants_help(argv: list[str]) -> bool:
    return any(a in ("-h", "--help") for a in argv)


if __name__ == "__main__":
    sys.stdout.write(passes_help() + "\n")
