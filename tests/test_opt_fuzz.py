"""A fuzz test of `fusec-opt`: the lit inputs under `filecheck/`, mutated, run with
their own RUN-line flags. Whatever the input, fusec-opt exits 0 or 1, prints no
Python traceback (nor "internal error"), and finishes within a per-input timeout.

The seed is fixed, so CI runs the same inputs every time; the count is bounded
for CI. More: `FUSEC_FUZZ_COUNT=2000 FUSEC_FUZZ_SEED=7 pytest tests/test_opt_fuzz.py`.
A failure names the seed and case and writes the input next to the test's tmp dir.
"""

from __future__ import annotations

import os
import random
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FUSEC_OPT = str(Path(sys.executable).parent / "fusec-opt")
COUNT = int(os.environ.get("FUSEC_FUZZ_COUNT", "40"))
SEED = int(os.environ.get("FUSEC_FUZZ_SEED", "15"))
TIMEOUT = float(os.environ.get("FUSEC_FUZZ_TIMEOUT", "60"))
"""Seconds per input; a hang (the lexer's exponential backtracking was one) fails."""


@dataclass(frozen=True)
class Seed:
    path: Path
    text: str
    args: tuple[str, ...]


def run_line_args(line: str) -> tuple[str, ...] | None:
    """fusec-opt's flags in a RUN line (`%s` and what follows a pipe dropped)."""
    m = re.search(r"fusec-opt\s+(.*)", line)
    if m is None:
        return None
    try:
        words = shlex.split(m.group(1))
    except ValueError:
        return None
    args: list[str] = []
    for w in words:
        if w in ("|", "2>&1", ">", "||") or w.startswith(("2>", ">")):
            break
        if w != "%s":
            args.append(w)
    return tuple(args)


def seeds() -> list[Seed]:
    out = []
    for path in sorted((ROOT / "filecheck").rglob("*.mlir")):
        text = path.read_text()
        for line in text.splitlines():
            if line.startswith("// RUN:"):
                args = run_line_args(line)
                if args is not None:
                    out.append(Seed(path, text, args))
    return out


_TOKENS = [
    "{", "}", "(", ")", "<", ">", "[", "]", '"', "%", "@", ":", ",", "=", "->", "^bb0",
    "?", "x", "0", "-1", "18446744073709551616", "1e309", "0x", "tensor<", "vector<4x",
    "f32", "i1", "f16", "bf16", "index", "memref<?x", "!llvm.ptr", "// -----", "\\", "\n",
    "fusion.group", "fusion.yield", "aten.add", "aten.chunk", "func.return", "dense<",
    "\u00e9", "\x00", "#loc", "attributes {", "%0", "%1", "%x",
]  # fmt: skip


def mutate(text: str, rng: random.Random) -> str:
    """One to three random edits: lines deleted, duplicated or swapped, bytes cut,
    tokens of the IR's own syntax inserted or substituted, numbers and types changed."""
    for _ in range(rng.randint(1, 3)):
        lines = text.split("\n")
        kind = rng.randrange(9)
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[j])
        elif kind == 2:
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3:
            return text[: rng.randrange(len(text) + 1)]
        elif kind in (4, 5):
            pos = rng.randrange(len(text) + 1)
            text = text[:pos] + rng.choice(_TOKENS) + text[pos:]
            continue
        elif kind == 6:
            pos = rng.randrange(len(text) + 1)
            text = text[:pos] + text[pos + rng.randint(1, 12) :]
            continue
        elif kind == 7:
            nums = list(re.finditer(r"\b\d+\b", text))
            if nums:
                m = rng.choice(nums)
                new = rng.choice(["0", "1", "2", "3", "64", "-5", "4294967296", "99999999999"])
                text = text[: m.start()] + new + text[m.end() :]
            continue
        else:
            types = list(re.finditer(r"\b(f32|f64|f16|bf16|i1|i32|i64|index)\b", text))
            if types:
                m = rng.choice(types)
                new = rng.choice(["f32", "f64", "f16", "bf16", "i1", "i8", "i64", "index"])
                text = text[: m.start()] + new + text[m.end() :]
            continue
        text = "\n".join(lines)
    return text


@dataclass(frozen=True)
class Outcome:
    case: int
    seed: Seed
    source: str
    status: int | None
    stderr: str


def run_case(case: int, seed: Seed, source: str, workdir: Path) -> Outcome:
    path = workdir / f"case{case}.mlir"
    path.write_text(source, encoding="utf-8", errors="surrogateescape")
    try:
        # lit's `%t` (a RUN line's scratch file) is a file in the work dir, not
        # a file named "%t..." in whatever directory pytest runs from.
        args = [a.replace("%t", str(workdir / f"case{case}.t")) for a in seed.args]
        proc = subprocess.run([FUSEC_OPT, str(path), *args], capture_output=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return Outcome(case, seed, source, None, f"no result within {TIMEOUT}s")
    err = (proc.stdout + proc.stderr).decode(errors="replace")
    return Outcome(case, seed, source, proc.returncode, err)


def bad(o: Outcome) -> bool:
    return o.status not in (0, 1) or "Traceback" in o.stderr or "internal error" in o.stderr


def test_fusec_opt_survives_mutated_filecheck_inputs(tmp_path):
    rng = random.Random(SEED)
    pool = seeds()
    assert len(pool) >= 40  # every lit file with a fusec-opt RUN line
    cases = []
    for case in range(COUNT):
        seed = rng.choice(pool)
        cases.append((case, seed, mutate(seed.text, rng)))
    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as ex:
        outcomes = list(ex.map(lambda c: run_case(*c, tmp_path), cases))
    failures = [o for o in outcomes if bad(o)]
    report = []
    for o in failures[:5]:
        kept = tmp_path / f"failing_case{o.case}.mlir"
        kept.write_text(o.source, encoding="utf-8", errors="surrogateescape")
        last = o.stderr.strip().splitlines()[-3:]
        report.append(
            f"case {o.case} (seed {SEED}) from {o.seed.path.relative_to(ROOT)} with "
            f"{' '.join(o.seed.args)}: exit {o.status}; input {kept}\n    " + "\n    ".join(last)
        )
    assert not failures, f"{len(failures)} of {COUNT} inputs failed:\n" + "\n".join(report)
    # The mutations must reach past the parser, or the test checks little.
    assert any(o.status == 0 for o in outcomes) and any(o.status == 1 for o in outcomes)
