"""The fusion graph as one self-contained HTML page (inline SVG, CSS and script;
nothing is fetched): groups are boxes, ops are nodes, tensors are edges.

    fusec.explain(model, x).save_html("fusion.html")
    fusec-opt --fuse --view-fusion-graph=fusion.html model.mlir

Layout is layered and needs no library: a group (or an op outside every group)
is one item; items sit in rows by their longest path from the inputs (each
input in the row above its first reader), and a group's ops sit in rows inside
its box by their longest path within the group, so boxes never overlap. Ops outside groups are drawn dashed, and their remark
(why the `fuse` pass left them out) is the node's tooltip and a row of the table
under the drawing.

Every node and box carries `data-op` / `data-group` attributes (what the tests
look for), and a small script marks the page `data-rendered="<count>"` once the
browser has laid out every node with a non-empty box.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fusec.explanation import GraphReport, OpReport

NODE_W, NODE_H, GAP_X, GAP_Y, PAD, TITLE = 190, 34, 26, 30, 12, 20
TITLE_W = 330
"""Room for a group's title line (name, kernel status, key)."""

_CSS = """
body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; }
h2 { font-size: 16px; margin: 18px 0 6px; }
svg { border: 1px solid #ddd; background: #fcfcfc; }
.group > rect { fill: #e8f1fb; stroke: #3a78c2; stroke-width: 1.5; }
.group.fallback > rect { fill: #fdf0e6; stroke: #c2773a; }
.group > text { font-size: 11px; fill: #1d4f8a; }
.op > rect { fill: #fff; stroke: #555; }
.op.unfused > rect { fill: #fff6f6; stroke: #b33; stroke-dasharray: 4 3; }
.op text { font-size: 12px; }
.op text.src { font-size: 10px; fill: #777; }
.arg > rect, .result > rect { fill: #f2f2f2; stroke: #aaa; }
.edge { fill: none; stroke: #889; stroke-width: 1.2; marker-end: url(#arrow); }
table { border-collapse: collapse; margin-top: 8px; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
pre { background: #f6f6f6; padding: 8px; overflow: auto; }
"""

_SCRIPT = """
window.addEventListener("load", function () {
  var nodes = document.querySelectorAll("svg .op, svg .group");
  var shown = 0;
  nodes.forEach(function (n) {
    var b = n.getBBox();
    if (b.width > 0 && b.height > 0) { shown += 1; n.setAttribute("data-laid-out", "1"); }
  });
  document.body.setAttribute("data-rendered", String(shown));
  document.body.setAttribute("data-expected", String(nodes.length));
});
"""


class _Item:
    """A group box or a lone op, placed as one block."""

    def __init__(self, name: str | None, ops: list[OpReport]):
        self.name = name
        self.ops = ops
        self.rows: list[list[OpReport]] = []
        self.x = self.y = 0.0

    @property
    def width(self) -> float:
        cols = max((len(r) for r in self.rows), default=1)
        inner = cols * NODE_W + (cols - 1) * GAP_X
        if not self.name:
            return inner
        return max(inner, TITLE_W) + 2 * PAD

    @property
    def height(self) -> float:
        inner = len(self.rows) * NODE_H + (len(self.rows) - 1) * GAP_Y
        return inner + (2 * PAD + TITLE if self.name else 0)


def _layout(
    report: GraphReport,
) -> tuple[list[_Item], dict[str, tuple[float, float]], float, float]:
    """Items placed, and the centre of every node (ops, args, results) by id."""
    owner: dict[str, _Item] = {}
    items: list[_Item] = []
    groups = {g.name: _Item(g.name, list(g.ops)) for g in report.groups}
    for op in report.ops:
        if op.group is not None:
            item = groups[op.group]
            if item not in items:
                items.append(item)
        else:
            item = _Item(None, [op])
            items.append(item)
        owner[op.id] = item
    # Rows inside an item: longest path among its own ops.
    for item in items:
        depth: dict[str, int] = {}
        for op in item.ops:
            depth[op.id] = 1 + max(
                (depth[i] for i in op.inputs if i in depth and owner.get(i) is item), default=-1
            )
        rows = max(depth.values(), default=0) + 1
        item.rows = [[o for o in item.ops if depth[o.id] == r] for r in range(rows)]
    # Item rows: longest path between items (inputs are row 0).
    level: dict[int, int] = {}
    for item in items:
        preds = {owner[i] for op in item.ops for i in op.inputs if i in owner}
        preds.discard(item)
        level[id(item)] = 1 + max((level[id(p)] for p in preds), default=0)
    n_levels = max(level.values(), default=0) + 2
    rows_of: list[list[_Item]] = [[] for _ in range(n_levels)]
    # Each argument sits in the row just above its first reader, so weights stay
    # next to their matmuls instead of in one long row of inputs.
    arg_level: dict[str, int] = {}
    for item in items:
        for op in item.ops:
            for i in op.inputs:
                if i not in owner:
                    lvl = level[id(item)] - 1
                    arg_level[i] = min(arg_level.get(i, lvl), lvl)
    args_of: list[list[str]] = [[] for _ in range(n_levels)]
    for a in report.args:
        args_of[arg_level.get(a, 0)].append(a)
    for item in items:
        rows_of[level[id(item)]].append(item)
    centres: dict[str, tuple[float, float]] = {}
    y = PAD
    width = 0.0
    for r, row in enumerate(rows_of):
        if not row and not args_of[r]:
            continue
        x = PAD
        height = NODE_H
        for a in args_of[r]:
            centres[a] = (x + NODE_W / 2, y + NODE_H / 2)
            x += NODE_W + GAP_X
        for item in row:
            item.x, item.y = x, y
            top = y + (PAD + TITLE if item.name else 0)
            left = x + (PAD if item.name else 0)
            for i, ops in enumerate(item.rows):
                for j, op in enumerate(ops):
                    cx = left + j * (NODE_W + GAP_X) + NODE_W / 2
                    cy = top + i * (NODE_H + GAP_Y) + NODE_H / 2
                    centres[op.id] = (cx, cy)
            x += item.width + GAP_X
            height = max(height, item.height)
        width = max(width, x)
        y += height + GAP_Y
    # Last row: the results.
    x = PAD
    for k, _res in enumerate(report.results):
        centres[f"result:{k}"] = (x + NODE_W / 2, y + NODE_H / 2)
        x += NODE_W + GAP_X
    width = max(width, x)
    return items, centres, width + PAD, y + NODE_H + PAD


def _edge(a: tuple[float, float], b: tuple[float, float]) -> str:
    x1, y1 = a[0], a[1] + NODE_H / 2
    x2, y2 = b[0], b[1] - NODE_H / 2
    if y2 <= y1:  # same row (inside a box): go around the side
        x1, y1, x2, y2 = a[0] + NODE_W / 2, a[1], b[0] - NODE_W / 2, b[1]
        return (
            f"M{x1:.1f},{y1:.1f} C{x1 + 20:.1f},{y1:.1f} {x2 - 20:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        )
    mid = (y1 + y2) / 2
    return f"M{x1:.1f},{y1:.1f} C{x1:.1f},{mid:.1f} {x2:.1f},{mid:.1f} {x2:.1f},{y2:.1f}"


def _clip(text: str, n: int = 26) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def render_svg(report: GraphReport, index: int = 0) -> str:
    """One graph's SVG."""
    items, centres, width, height = _layout(report)
    prefix = f"g{index}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" data-graph="{escape(report.name)}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#889"/></marker></defs>',
    ]
    groups = {g.name: g for g in report.groups}
    for item in items:
        if item.name is None:
            continue
        g = groups[item.name]
        fallback = g.kernel is not None and g.kernel.status == "none"
        if g.kernel is None:
            status = "one kernel"
        elif fallback:
            status = "no kernel: runs through PyTorch"
        else:
            status = f"kernel {g.kernel.status}"
        ops = " ".join(o.id for o in g.ops)
        out.append(
            f'<g class="group{" fallback" if fallback else ""}" id="{prefix}-{g.name}" '
            f'data-group="{g.name}" data-ops="{ops}" data-key="{g.key}">'
            f"<title>{escape(g.name)}: {len(g.ops)} ops, key {g.key}, {escape(status)}"
            f"{escape('; guard failed: ' + g.guard_failure) if g.guard_failure else ''}</title>"
            f'<rect x="{item.x:.1f}" y="{item.y:.1f}" width="{item.width:.1f}" '
            f'height="{item.height:.1f}" rx="8"/>'
            f'<text x="{item.x + PAD:.1f}" y="{item.y + PAD + 6:.1f}">'
            f"{escape(g.name)} · {escape(status)} · {g.key[:10]}</text></g>"
        )
    for op in report.ops:
        for src in op.inputs:
            if src in centres and op.id in centres:
                out.append(
                    f'<path class="edge" data-from="{escape(src)}" data-to="{op.id}" '
                    f'd="{_edge(centres[src], centres[op.id])}"/>'
                )
    for k, res in enumerate(report.results):
        if res in centres:
            out.append(
                f'<path class="edge" data-from="{escape(res)}" data-to="result:{k}" '
                f'd="{_edge(centres[res], centres[f"result:{k}"])}"/>'
            )
    for name in report.args:
        out.append(_box("arg", name, name.removeprefix("arg:"), centres[name], ""))
    for k, _ in enumerate(report.results):
        out.append(_box("result", f"result:{k}", f"result {k}", centres[f"result:{k}"], ""))
    for op in report.ops:
        cls = "op fused" if op.group is not None else "op unfused"
        tip = op.label() + (f"\n{op.remark}" if op.remark is not None else "")
        attrs = f' data-op="{escape(op.name)}" data-id="{op.id}"'
        if op.group is not None:
            attrs += f' data-group="{op.group}"'
        if op.remark is not None:
            attrs += f' data-remark="{escape(op.remark.kind)}"'
        sub = str(op.source) if op.source is not None else (f"%{op.node}" if op.node else "")
        out.append(_box(cls, f"{prefix}-{op.id}", op.name, centres[op.id], sub, tip, attrs))
    out.append("</svg>")
    return "\n".join(out)


def _box(
    cls: str,
    ident: str,
    label: str,
    centre: tuple[float, float],
    sub: str,
    tip: str = "",
    attrs: str = "",
) -> str:
    x, y = centre[0] - NODE_W / 2, centre[1] - NODE_H / 2
    text_y = y + (14 if sub else 21)
    parts = [
        f'<g class="{cls}" id="{escape(ident)}"{attrs}>',
        f"<title>{escape(tip or label)}</title>" if tip or label else "",
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{NODE_H}" rx="4"/>',
        f'<text x="{x + 8:.1f}" y="{text_y:.1f}">{escape(_clip(label))}</text>',
    ]
    if sub:
        parts.append(
            f'<text class="src" x="{x + 8:.1f}" y="{y + 28:.1f}">{escape(_clip(sub, 30))}</text>'
        )
    parts.append("</g>")
    return "".join(parts)


def _table(report: GraphReport) -> str:
    if not report.unfused and not any(o.remark for g in report.groups for o in g.ops):
        return "<p>Every op is in a group.</p>"
    rows = ["<table><tr><th>op</th><th>source</th><th>why not fused</th><th>reason kind</th></tr>"]
    ops = list(report.unfused) + [o for g in report.groups for o in g.ops if o.remark]
    for op in ops:
        rows.append(
            f'<tr data-op-row="{op.id}"><td>{escape(op.name)}'
            f"{escape(' %' + op.node) if op.node else ''}</td>"
            f"<td>{escape(str(op.source) if op.source else '')}</td>"
            f"<td>{escape(op.remark.detail if op.remark else '')}</td>"
            f"<td>{escape(op.remark.kind if op.remark else '')}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def render_html(reports: Sequence[GraphReport], title: str = "fusec fusion graph") -> str:
    """The whole page: per graph, a heading, the SVG, the unfused-op table and
    the text report."""
    body: list[str] = []
    for i, r in enumerate(reports):
        body.append(
            f'<section data-graph="{escape(r.name)}"><h2>{escape(r.name)}: '
            f"{len(r.groups)} group(s), {r.launches_per_call} kernel launch(es) per call</h2>"
        )
        if r.eager_reason is not None:
            body.append(f"<p>Runs eagerly: {escape(r.eager_reason)}</p>")
        body.append(render_svg(r, i))
        body.append(_table(r))
        body.append(
            f"<details><summary>text report</summary><pre>{escape(chr(10).join(r.lines()))}</pre></details>"
        )
        body.append("</section>")
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n<body>"
        f'<h1 style="font-size:18px">{escape(title)}</h1>'
        "<p>Boxes are fusion groups (one kernel each), nodes are ops, edges are tensors; "
        "dashed red nodes run outside any group (hover for the reason).</p>\n"
        + "\n".join(body)
        + f"<script>{_SCRIPT}</script></body></html>\n"
    )
