"""The fusion-graph pages of the README example and of a GPT-style block (with
its profile) in headless Chromium: a screenshot is taken, every group and op is
laid out with a non-empty box (the page's own script counts them after drawing,
and the DOM Chromium returns holds each one), and the page raised no script
error. In CI (`CI` set) a missing Chromium fails the test: `.ci/run` installs it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import fusec
import pytest
import torch
from test_explain import readme_cell
from test_fusion_graph import check_page, gpt2_report

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]


def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path is not None:
            return path
    if os.environ.get("CI"):
        pytest.fail("no chromium in CI: .ci/run installs Debian's chromium package")
    pytest.skip("no headless browser (chromium) installed")


def chromium(*args: str) -> str:
    out = subprocess.run([browser(), *FLAGS, *args], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def body(dom: str) -> dict[str, str]:
    tag = re.search(r"<body([^>]*)>", dom)
    assert tag is not None, dom[:500]
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag.group(1)))


def open_page(report, path: Path) -> tuple[dict[str, str], str]:
    """The page's body attributes and DOM after its script ran, and a screenshot
    next to it."""
    report.save_html(path)
    shot = path.with_suffix(".png")
    chromium(f"--screenshot={shot}", "--window-size=1000,1400", path.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000
    dom = chromium("--dump-dom", path.as_uri())
    return body(dom), dom


def readme_report():
    return fusec.explain(readme_cell, torch.randn(8, 64), torch.randn(8, 16))


def gpt_block_report():
    """The GPT-style block's report with its profile (times on the page)."""
    from gpt2_block import Block

    torch.manual_seed(0)
    with torch.no_grad():
        return fusec.explain(Block().eval(), torch.randn(2, 16, 32), profile=True, runs=4)


@pytest.mark.parametrize("make", [readme_report, gpt_block_report], ids=["readme", "gpt_block"])
def test_page_draws_every_group_and_op_without_script_errors(make, tmp_path):
    report = make()
    attrs, dom = open_page(report, tmp_path / "fusion.html")
    expected = sum(len(g.ops) for g in report.graphs) + len(report.groups)
    assert attrs.get("data-errors") == "0", attrs.get("data-error-text")
    assert attrs.get("data-rendered") == attrs.get("data-expected") == str(expected)
    assert attrs.get("data-ok") == "1"
    check_page(report, dom)
    assert dom.count('data-laid-out="1"') == expected
    if report.graphs[0].profile is not None:
        assert dom.count("data-profile-row=") == len(report.graphs[0].profile.rows)


@pytest.mark.parametrize(
    "script, text",
    [("noSuchFunction();", "noSuchFunction"), ('console.error("bad draw");', "bad draw")],
    ids=["exception", "console_error"],
)
def test_a_script_error_on_the_page_is_reported(script, text, tmp_path):
    """The check above can fail: a page whose script throws, or logs an error,
    says so."""
    report = readme_report()
    path = tmp_path / "broken.html"
    report.save_html(path)
    path.write_text(path.read_text().replace("</body>", f"<script>{script}</script></body>"))
    attrs = body(chromium("--dump-dom", path.as_uri()))
    assert attrs.get("data-errors") == "1" and attrs.get("data-ok") == "0"
    assert text in attrs.get("data-error-text", "")


def test_search_and_collapse_run_in_the_browser(tmp_path):
    """The page's search box, a group's collapse and "collapse all" work (run by a script added
    to a copy of the page, which then records what it saw)."""
    report = gpt2_report()
    path = tmp_path / "search.html"
    report.save_html(path)
    probe = """<script>window.addEventListener("load", function () {
      var box = document.querySelector("input[type=search]");
      box.value = "matmul"; fusecSearch(box);
      document.body.setAttribute("data-hits", String(document.querySelectorAll(".op.hit").length));
      var g = document.querySelector(".group"); fusecToggle(g);
      document.body.setAttribute("data-hidden",
        String(document.querySelectorAll(".op.collapsed-member").length));
      document.body.setAttribute("data-group-ops", g.getAttribute("data-ops").split(" ").length);
      fusecToggle(g);
      fusecCollapseAll(document.querySelector("button[data-for]"));
      document.body.setAttribute("data-all-hidden",
        String(document.querySelectorAll(".op.fused.collapsed-member").length));
    });</script></body>"""
    path.write_text(path.read_text().replace("</body>", probe))
    attrs = body(chromium("--dump-dom", path.as_uri()))
    assert attrs.get("data-errors") == "0", attrs.get("data-error-text")
    matmuls = sum(1 for o in report.graphs[0].ops if "matmul" in o.name)
    assert matmuls >= 2 and attrs.get("data-hits") == str(matmuls)
    assert attrs.get("data-hidden") == attrs.get("data-group-ops")
    fused = sum(len(g.ops) for g in report.groups)
    assert attrs.get("data-all-hidden") == str(fused)
