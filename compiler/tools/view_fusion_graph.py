"""`fusec-opt --view-fusion-graph=out.html`: the fusion graph of the IR after the
pipeline, as the same self-contained HTML/SVG page `fusec.explain(...).save_html`
writes (one section per function, and per `--split-input-file` chunk):

    fusec-opt --fuse --view-fusion-graph=lstm.html filecheck/examples/lstm_tail.mlir

The `fuse` pass's remarks (why an op stayed outside every group) are collected
while the pipeline runs, so unfused ops carry their reasons as in `fusec.explain`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from fusec.observability.explanation import GraphReport, module_report
from fusec.observability.fusion_graph import render_html
from fusec.passes.fusion_remarks import FusionRemark, collect_remarks
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation


@dataclass
class FusionGraphView:
    """Collects each processed module's graph and writes the page."""

    path: str
    title: str = "fusec-opt fusion graph"
    graphs: list[GraphReport] = field(default_factory=list)

    @contextlib.contextmanager
    def watching(self) -> Iterator[dict[Operation, FusionRemark]]:
        """Collect the remarks of the passes run inside the block."""
        with collect_remarks() as remarks:
            yield remarks

    def add(self, module: ModuleOp, remarks: dict[Operation, FusionRemark]) -> None:
        for f in module.walk():
            if isinstance(f, func.FuncOp):
                self.graphs.append(_function_report(f, remarks))

    def write(self) -> None:
        with open(self.path, "w", encoding="utf-8") as out:
            out.write(render_html(self.graphs, title=self.title))


def _function_report(f: func.FuncOp, remarks: dict[Operation, FusionRemark]) -> GraphReport:
    # `module_report` reads the first function it walks: `f` itself.
    report = module_report(f, f.sym_name.data, remarks)
    report.launches_per_call = len(report.groups)
    return report
