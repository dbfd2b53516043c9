"""The fusion graph view (`report.save_html`, `fusec-opt --view-fusion-graph`) and
the explanation of a GPT-2 block: every group and op is on the page (checked by
parsing the HTML here, in headless Chromium in `test_fusion_graph_browser.py`),
and every op outside a group has a reason that is true of the IR."""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser
from pathlib import Path

import fusec
import pytest
import torch
from fusec.dialects.fusion import GroupOp, GuardOp
from fusec.passes.fusion_remarks import KINDS
from gpt2_block import Block
from xdsl.dialects import arith, scf
from xdsl.ir import Operation

ROOT = Path(__file__).resolve().parents[1]


class Page(HTMLParser):
    """The SVG nodes and boxes of a fusion-graph page."""

    def __init__(self, text: str):
        super().__init__()
        self.ops: dict[tuple[int, str], dict[str, str]] = {}
        self.groups: dict[tuple[int, str], dict[str, str]] = {}
        self.edges = 0
        self.svgs = 0
        self.external: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        for key in ("src", "href"):
            if key in a and not a[key].startswith("#"):
                self.external.append(a[key])
        if tag == "svg":
            self.svgs += 1
        classes = a.get("class", "").split()
        if tag == "g" and "op" in classes:
            self.ops[(self.svgs - 1, a["data-id"])] = a
        elif tag == "g" and "group" in classes:
            self.groups[(self.svgs - 1, a["data-group"])] = a
        elif tag == "path" and "edge" in classes:
            self.edges += 1


def check_page(report, text: str) -> Page:
    page = Page(text)
    assert page.external == [], "the page must not fetch anything"
    assert page.svgs == len(report.graphs)
    for i, graph in enumerate(report.graphs):
        for group in graph.groups:
            box = page.groups[(i, group.name)]
            assert box["data-ops"].split() == [o.id for o in group.ops]
            assert box["data-key"] == group.key
        for op in graph.ops:
            node = page.ops[(i, op.id)]
            assert node["data-op"] == op.name
            assert node.get("data-group") == op.group
            if op.remark is not None:
                assert node["data-remark"] == op.remark.kind
    assert len(page.ops) == sum(len(g.ops) for g in report.graphs)
    assert len(page.groups) == len(report.groups)
    return page


def gpt2_report(backend: str = "fusec"):
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 16, 32)
    with torch.no_grad():
        report = fusec.explain(model, x, backend=backend)
        torch.testing.assert_close(fusec.compile(model)(x), model(x))
    return report


def test_gpt2_block_every_unfused_op_has_a_true_reason():
    report = gpt2_report()
    (graph,) = report.graphs
    assert graph.groups and all(g.runs_as_kernel for g in graph.groups)
    # The bias adds fuse with the residual adds and with GELU; each layer norm is
    # one group (the second norm with the residual before it), and so are the
    # attention's scale, its causal mask (`masked_fill` as `where`) and softmax.
    fused = sorted(sorted(o.name for o in g.ops) for g in graph.groups)
    assert ["aten.add", "aten.gelu"] in fused
    assert ["aten.add", "aten.add"] in fused
    softmax = ["amax", "exp", "mul", "mul", "reciprocal", "sub", "sum", "where"]
    assert [f"aten.{n}" for n in softmax] in fused
    assert sum(1 for g in fused if "aten.rsqrt" in g and "aten.mean" in g) == 2
    assert len(fused) == 5
    for op in graph.unfused:
        assert op.remark is not None and op.remark.kind in KINDS, op
        assert op.remark.detail, op
        assert op.source is not None and op.source.file.endswith("gpt2_block.py"), op
    names = {o.name for o in graph.unfused}
    assert {"aten.linear", "aten.matmul"} <= names
    assert not any("softmax" in n or "layer_norm" in n for n in names)


def test_gpt2_reasons_agree_with_the_ir():
    """A barrier is not pointwise; a pointwise op with no partner has no pointwise
    producer or consumer (and no group) next to it in the final IR."""
    from fusec.observability.explanation import graph_report
    from fusec.passes.fusion_utils import is_pointwise

    torch.manual_seed(0)
    model = Block().eval()
    f = fusec.compile(model)
    with torch.no_grad():
        f(torch.randn(2, 16, 32))
    spec = f.last
    graph = graph_report(f, spec)
    checked = 0
    for op, remark in spec.remarks.items():
        if op.parent_op() is not spec.imported.func:
            continue
        if remark.kind == "barrier":
            assert not is_pointwise(op), op.name
        if remark.kind == "no-partner":
            assert is_pointwise(op)
            neighbours = [v.owner for v in op.operands if isinstance(v.owner, Operation)]
            neighbours += [u.operation for r in op.results for u in r.uses]
            for n in neighbours:
                assert not isinstance(n, GroupOp | GuardOp | scf.IfOp), op.name
                assert isinstance(n, arith.ConstantOp) or not is_pointwise(n), (op.name, n.name)
        checked += 1
    assert checked == len(graph.unfused)


def test_gpt2_through_torch_compile_explains_the_graph():
    import torch._dynamo

    torch._dynamo.reset()
    report = gpt2_report("torch.compile")
    assert len(report.graphs) >= 1
    assert report.groups and report.kernels == len(report.groups)
    for op in report.unfused:
        assert op.remark is not None and op.remark.kind in KINDS and op.remark.detail


@pytest.mark.parametrize("model", ["readme_cell", "gpt2"])
def test_html_view_shows_every_group_and_op(model, tmp_path):
    if model == "gpt2":
        report = gpt2_report()
    else:
        from test_explain import readme_cell

        report = fusec.explain(readme_cell, torch.randn(8, 64), torch.randn(8, 16))
    path = tmp_path / "fusion.html"
    report.save_html(path)
    page = check_page(report, path.read_text())
    assert page.edges >= sum(len(g.ops) for g in report.graphs)
    text = path.read_text()
    for op in report.unfused:
        assert op.remark.detail.replace("'", "&#x27;") in text or op.remark.detail in text


def test_fusec_opt_view_fusion_graph(tmp_path):
    out = tmp_path / "lstm.html"
    src = ROOT / "filecheck" / "examples" / "lstm_tail.mlir"
    done = subprocess.run(
        ["fusec-opt", "--fuse", f"--view-fusion-graph={out}", str(src)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "fusion.group" in done.stdout  # the IR is still printed
    page = Page(out.read_text())
    assert len(page.groups) == 1
    (box,) = page.groups.values()
    assert len(box["data-ops"].split()) == 10  # chunk + 9 pointwise ops
    assert {a["data-group"] for a in page.ops.values()} == {"group_0"}
