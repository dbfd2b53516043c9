"""Runs the whole lit/FileCheck suite under pytest, so `pytest` tests everything."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_filecheck_suite() -> None:
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "from lit.main import main; main()",
            "-q",
            "-j",
            str(os.cpu_count() or 2),
            str(ROOT / "filecheck"),
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, f"lit failed:\n{proc.stdout}\n{proc.stderr}"
