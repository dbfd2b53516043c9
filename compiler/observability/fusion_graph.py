"""The fusion graph as one self-contained HTML page (inline SVG, CSS and script;
nothing is fetched): groups are boxes, ops are nodes, tensors are edges.

    fusec.explain(model, x).save_html("fusion.html")
    fusec.explain(model, x, profile=True).save_html("fusion.html")   # with times
    fusec-opt --fuse --view-fusion-graph=fusion.html model.mlir

The layout is layered (`fusec.observability.fusion_layout`, no library): edges run down
between layers and never through a node or a group they do not enter. Ops
outside groups are drawn dashed, and their remark (why the `fuse` pass left
them out) is the node's tooltip and a row of the table under the drawing. With
a profile, each group and op is shaded by its share of the call, shows its time,
and a table lists where the time goes. A search box highlights the ops whose
name, value or source line matches; clicking a group's title collapses it to
one box.

Every node and box carries `data-op` / `data-group` attributes (what the tests
look for). The page's script records script errors (`error` events, unhandled
rejections, `console.error`) and,
once drawn, marks the body `data-rendered="<count>"` (nodes and boxes laid out
with a non-empty box), `data-expected`, `data-errors` and `data-ok`.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import TYPE_CHECKING

from fusec.observability.fusion_layout import NODE_H, NODE_W, PAD, Drawing, layout

if TYPE_CHECKING:
    from fusec.observability.explanation import GraphReport
    from fusec.observability.profiling import GraphProfile

_CSS = """
body { font: 13px system-ui, sans-serif; margin: 16px; color: #222; }
h2 { font-size: 16px; margin: 18px 0 6px; }
.tools { position: sticky; top: 0; background: #fff; padding: 6px 0; z-index: 2; }
.tools input { width: 320px; padding: 3px 6px; }
.scroll { overflow: auto;  border: 1px solid #ddd; }
svg { background: #fcfcfc; display: block; }
.group > rect { fill: #eaf2fb; stroke: #3a78c2; stroke-width: 1.5; }
.group.fallback > rect { fill: #fdf0e6; stroke: #c2773a; }
.group > text { font-size: 11px; fill: #1d4f8a; cursor: pointer; }
.group .summary { display: none; font-size: 12px; }
.group.collapsed .summary { display: inline; }
.collapsed-member { display: none; }
.op > rect { fill: #fff; stroke: #555; }
.op.unfused > rect { fill: #fff6f6; stroke: #b33; stroke-dasharray: 4 3; }
.op text { font-size: 12px; }
.op text.src { font-size: 10px; fill: #666; }
.op text.time { font-size: 10px; fill: #a33; }
.arg > rect, .result > rect { fill: #f0f0f0; stroke: #aaa; }
.edge { fill: none; stroke: #8a8fa3; stroke-width: 1.2; marker-end: url(#arrow); }
.dim { opacity: 0.18; }
.hit > rect { stroke: #e07b00; stroke-width: 3; }
table { border-collapse: collapse; margin-top: 8px; }
td, th { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
td.num { white-space: nowrap; text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f6f6; padding: 8px; overflow: auto; }
"""

_ERRORS = """
window.fusecErrors = [];
window.addEventListener("error", function (e) { window.fusecErrors.push(String(e.message)); });
window.addEventListener("unhandledrejection", function (e) {
  window.fusecErrors.push("unhandled rejection: " + String(e.reason));
});
(function () {
  var log = console.error;
  console.error = function () {
    window.fusecErrors.push(Array.prototype.join.call(arguments, " "));
    return log.apply(console, arguments);
  };
})();
"""

_SCRIPT = """
function fusecSearch(box) {
  var q = box.value.trim().toLowerCase();
  var svg = document.getElementById(box.getAttribute("data-for"));
  var first = null, hits = 0;
  svg.querySelectorAll(".op").forEach(function (n) {
    var text = (n.getAttribute("data-op") + " " + n.getAttribute("data-node") + " " +
                n.getAttribute("data-src") + " " + n.getAttribute("data-id")).toLowerCase();
    var hit = q !== "" && text.indexOf(q) >= 0;
    n.classList.toggle("hit", hit);
    n.classList.toggle("dim", q !== "" && !hit);
    if (hit) { hits += 1; if (first === null) { first = n; } }
  });
  svg.querySelectorAll(".edge").forEach(function (e) { e.classList.toggle("dim", q !== ""); });
  box.nextElementSibling.textContent = q === "" ? "" : hits + " match(es)";
  if (first !== null) { first.scrollIntoView({block: "center", inline: "center"}); }
}
function fusecToggle(group) {
  var svg = group.ownerSVGElement, name = group.getAttribute("data-group");
  var collapsed = group.classList.toggle("collapsed");
  svg.querySelectorAll('.op[data-group="' + name + '"], .edge[data-inside="' + name + '"]')
    .forEach(function (n) { n.classList.toggle("collapsed-member", collapsed); });
}
function fusecCollapseAll(button) {
  var svg = document.getElementById(button.getAttribute("data-for"));
  var collapse = button.getAttribute("data-collapsed") !== "1";
  svg.querySelectorAll(".group").forEach(function (g) {
    if (g.classList.contains("collapsed") !== collapse) { fusecToggle(g); }
  });
  button.setAttribute("data-collapsed", collapse ? "1" : "0");
  button.textContent = collapse ? "expand all groups" : "collapse all groups";
}
window.addEventListener("load", function () {
  document.querySelectorAll(".group > text.title").forEach(function (t) {
    t.addEventListener("click", function () { fusecToggle(t.parentNode); });
  });
  var nodes = document.querySelectorAll("svg .op, svg .group");
  var shown = 0;
  nodes.forEach(function (n) {
    var b = n.getBBox();
    if (b.width > 0 && b.height > 0) { shown += 1; n.setAttribute("data-laid-out", "1"); }
  });
  var body = document.body;
  body.setAttribute("data-rendered", String(shown));
  body.setAttribute("data-expected", String(nodes.length));
  body.setAttribute("data-errors", String(window.fusecErrors.length));
  if (window.fusecErrors.length) { body.setAttribute("data-error-text", window.fusecErrors.join(" | ")); }
  body.setAttribute("data-ok", window.fusecErrors.length === 0 && shown === nodes.length ? "1" : "0");
});
"""


def _clip(text: str, n: int = 27) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


def _shade(share: float, top: float, depth: float = 150) -> str:
    """A fill from white to red by `share` of the call (relative to the top row);
    `depth` is how red the top row gets (a group's box less, so its ops read)."""
    t = 0.0 if top <= 0 else min(1.0, share / top)
    g = round(255 - depth * t)
    return f' style="fill: rgb(255,{g},{round(g * 0.92)})"'


def render_svg(report: GraphReport, index: int = 0) -> str:
    """One graph's SVG."""
    d: Drawing = layout(report)
    prof = report.profile
    top = max((r.share for r in prof.rows), default=0.0) if prof is not None else 0.0
    prefix = f"g{index}"
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{prefix}" width="{d.width:.0f}" '
        f'height="{d.height:.0f}" viewBox="0 0 {d.width:.0f} {d.height:.0f}" '
        f'data-graph="{escape(report.name)}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#8a8fa3"/></marker></defs>',
    ]
    for g in report.groups:
        x, y, w, h = d.groups[g.name]
        fallback = g.kernel is not None and g.kernel.status == "none"
        if g.kernel is None:
            status, short = "one kernel", "kernel"
        elif fallback:
            status, short = "no kernel: runs through PyTorch", "via PyTorch"
        else:
            status = f"kernel {g.kernel.status}"
            short = "kernel built" if g.kernel.status == "compiled" else "kernel cached"
        timing, shade = "", ""
        if prof is not None and (row := next((r for r in prof.rows if r.id == g.name), None)):
            timing = f" · {_us(row.seconds)} ({100 * row.share:.0f}%)"
            shade = _shade(row.share, top, 80)
        ops = " ".join(o.id for o in g.ops)
        out.append(
            f'<g class="group{" fallback" if fallback else ""}" id="{prefix}-{g.name}" '
            f'data-group="{g.name}" data-ops="{ops}" data-key="{g.key}">'
            f"<title>{escape(g.name)}: {len(g.ops)} ops, key {g.key}, {escape(status)}"
            f"{escape('; guard failed: ' + g.guard_failure) if g.guard_failure else ''}"
            " (click the title to collapse)</title>"
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8"{shade}/>'
            f'<text class="title" x="{x + PAD:.1f}" y="{y + 15:.1f}">'
            f"{escape(g.name)} · {len(g.ops)} ops · {short}{timing}</text>"
            f'<text class="summary" x="{x + PAD:.1f}" y="{y + 36:.1f}">'
            f"{escape(_clip(' '.join(o.name.removeprefix('aten.') for o in g.ops), 40))}</text></g>"
        )
    for src, dst, inside, path in d.edges:
        attr = f' data-inside="{inside}"' if inside else ""
        out.append(
            f'<path class="edge" data-from="{escape(src)}" data-to="{escape(dst)}"{attr} d="{path}"/>'
        )
    for name in report.args:
        out.append(_box("arg", name, name.removeprefix("arg:"), d.nodes[name], d.widths[name], ""))
    for k, _ in enumerate(report.results):
        rid = f"result:{k}"
        out.append(_box("result", rid, f"result {k}", d.nodes[rid], d.widths[rid], ""))
    for op in report.ops:
        cls = "op fused" if op.group is not None else "op unfused"
        tip = op.label() + (f"\n{op.remark}" if op.remark is not None else "")
        src = str(op.source) if op.source is not None else ""
        attrs = (
            f' data-op="{escape(op.name)}" data-id="{op.id}" data-node="{escape(op.node or "")}"'
            f' data-src="{escape(src)}"'
        )
        if op.group is not None:
            attrs += f' data-group="{op.group}"'
        if op.remark is not None:
            attrs += f' data-remark="{escape(op.remark.kind)}"'
        timing = shade = ""
        if prof is not None and op.group is None:
            row = next((r for r in prof.rows if r.id == op.id), None)
            if row is not None:
                timing, shade = _us(row.seconds), _shade(row.share, top)
                tip += f"\n{timing}, {100 * row.share:.1f}% of the call"
        sub = src or (f"%{op.node}" if op.node else "")
        out.append(
            _box(
                cls,
                f"{prefix}-{op.id}",
                op.name,
                d.nodes[op.id],
                NODE_W,
                sub,
                tip,
                attrs,
                timing,
                shade,
            )
        )
    out.append("</svg>")
    return "\n".join(out)


def _box(
    cls: str,
    ident: str,
    label: str,
    centre: tuple[float, float],
    width: float,
    sub: str,
    tip: str = "",
    attrs: str = "",
    timing: str = "",
    shade: str = "",
) -> str:
    x, y = centre[0] - width / 2, centre[1] - NODE_H / 2
    text_y = y + (15 if sub else 22)
    chars = int(width / 7)
    parts = [
        f'<g class="{cls}" id="{escape(ident)}"{attrs}>',
        f"<title>{escape(tip or label)}</title>" if tip or label else "",
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.0f}" height="{NODE_H}" rx="4"{shade}/>',
        f'<text x="{x + 7:.1f}" y="{text_y:.1f}">{escape(_clip(label, chars))}</text>',
    ]
    if sub:
        parts.append(
            f'<text class="src" x="{x + 7:.1f}" y="{y + 29:.1f}">{escape(_clip(sub, 22 if timing else 31))}</text>'
        )
    if timing:
        parts.append(
            f'<text class="time" x="{x + width - 6:.1f}" y="{y + 29:.1f}" text-anchor="end">'
            f"{escape(timing)}</text>"
        )
    parts.append("</g>")
    return "".join(parts)


def _profile_table(prof: GraphProfile) -> str:
    """Where the time goes: the profile's rows, slowest first, and the totals."""
    rows = [
        f"<h3>Where the time goes (mean of the {prof.kept} fastest of {prof.runs} runs)</h3>"
        '<table class="profile"><tr><th>group / op</th><th>runs as</th><th>time</th>'
        "<th>share</th><th>ops (source)</th></tr>"
    ]
    for r in prof.rows:
        rows.append(
            f'<tr data-profile-row="{r.id}"><td>{r.id}</td><td>{escape(r.kind)}</td>'
            f'<td class="num">{_us(r.seconds)}</td><td class="num">{100 * r.share:.1f}%</td>'
            f"<td>{escape(r.label)}</td></tr>"
        )
    share = prof.host / prof.total if prof.total else 0.0
    rows.append(
        f'<tr><td>host</td><td>between steps</td><td class="num">{_us(prof.host)}</td>'
        f'<td class="num">{100 * share:.1f}%</td><td>run loop, guards</td></tr>'
    )
    ratio = prof.total / prof.call if prof.call else 0.0
    rows.append(
        f'<tr><th colspan="2">total</th><td class="num">{_us(prof.total)}</td><td></td>'
        f"<td>kernels {_us(prof.kernel_seconds)}, PyTorch ops {_us(prof.torch_seconds)}; "
        f"an ordinary call {_us(prof.call)} (the breakdown is {100 * ratio:.1f}% of it)</td></tr>"
    )
    rows.append("</table>")
    return "".join(rows)


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
        if r.unprofiled is not None:
            body.append(f"<p>Not profiled: {escape(r.unprofiled)}</p>")
        body.append(
            f'<div class="tools"><input type="search" data-for="g{i}" '
            'placeholder="find an op by name, value or source line" '
            'oninput="fusecSearch(this)"> <span class="hits"></span> '
            f'<button data-for="g{i}" onclick="fusecCollapseAll(this)">collapse all groups</button></div>'
        )
        body.append(f'<div class="scroll">{render_svg(r, i)}</div>')
        if r.profile is not None:
            body.append(_profile_table(r.profile))
        body.append(_table(r))
        body.append(
            f"<details><summary>text report</summary><pre>{escape(chr(10).join(r.lines()))}</pre></details>"
        )
        body.append("</section>")
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_CSS}</style>"
        f"<script>{_ERRORS}</script></head>\n<body>"
        f'<h1 style="font-size:18px">{escape(title)}</h1>'
        "<p>Boxes are fusion groups (one kernel each), nodes are ops, edges are tensors; "
        "dashed red nodes run outside any group (hover for the reason); click a group's "
        "title to collapse it. With a profile, red shading is each one's share of the call.</p>\n"
        + "\n".join(body)
        + f"<script>{_SCRIPT}</script></body></html>\n"
    )
