"""The README's examples do what the README says: its `fusec.explain` example
prints the reasons it shows, and its LSTM cell is one group with nothing unfused."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def blocks(lang: str) -> list[str]:
    """The README's fenced blocks of language `lang` ("" for plain ones)."""
    fences = re.findall(r"^```(\w*)\n(.*?)^```", README, re.S | re.M)
    return [body for tag, body in fences if tag == lang]


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    script = cwd / "model.py"
    script.write_text(code)
    return subprocess.run(
        [sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_readme_explain_example_prints_what_the_readme_shows(tmp_path):
    (code,) = [b for b in blocks("python") if "fusec.explain(model" in b]
    shown = next(b for b in blocks("") if b.startswith("graph model:"))
    out = run_python(code, tmp_path)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "fusion.html").read_text().startswith("<!DOCTYPE html>")

    # Every line but the key (a hash of the canonical IR) and the kernel's status.
    def stable(text: str) -> list[str]:
        return [
            re.sub(r"key [0-9a-f]{16}, kernel \w+( \w+)*", "key K", line)
            for line in text.strip().splitlines()
        ]

    assert stable(out.stdout) == stable(shown)


def test_readme_lstm_cell_has_nothing_unfused(tmp_path):
    (code,) = [b for b in blocks("python") if "def cell(" in b]
    code += (
        "r = fusec.explain(cell, torch.randn(8, 64), torch.randn(8, 16))\n"
        "assert r.unfused == [] and len(r.groups) == 1 and r.kernels == 1, r\n"
        "torch.testing.assert_close(fast(torch.ones(8, 64), torch.ones(8, 16))[1],"
        " cell(torch.ones(8, 64), torch.ones(8, 16))[1])\n"
    )
    out = run_python(code, tmp_path)
    assert out.returncode == 0, out.stderr


# ---------------------------------------------------------------- the README's shape

# The README and the documents it hands detail to: their relative links must resolve.
LINKED_DOCS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "benchmarks" / "README.md",
    *sorted((ROOT / "benchmarks" / "results").glob("*.md")),
]


def table_cells(text: str) -> list[str]:
    """Every cell of every Markdown table row (`\\|` is a literal bar, not a border)."""
    cells = []
    for line in text.splitlines():
        if line.startswith("|") and not re.fullmatch(r"\|[-:| ]+\|", line):
            cells += [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
    return cells


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchors for a document's headings (outside fenced code)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    anchors = set()
    for title in re.findall(r"^#+\s+(.*)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")
        anchors.add(slug)
    return anchors


def relative_links(text: str) -> list[str]:
    """The targets of a document's Markdown links, but for URLs (code left out)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t for t in targets if not re.match(r"[a-z]+:", t)]


def test_readme_is_short_and_its_table_cells_are_short():
    assert len(README.splitlines()) <= 150
    long = [c for c in table_cells(README) if len(c.split()) > 40]
    assert not long, long


def test_readme_and_docs_relative_links_resolve():
    broken = []
    for doc in LINKED_DOCS:
        assert doc.is_file(), doc
        for target in relative_links(doc.read_text()):
            path, _, anchor = target.partition("#")
            dest = (doc.parent / path).resolve() if path else doc
            if not dest.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such file)")
            elif (
                anchor and dest.suffix == ".md" and anchor not in heading_anchors(dest.read_text())
            ):
                broken.append(f"{doc.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken
