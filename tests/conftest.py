"""Shared pytest fixtures: every test gets its own empty kernel cache; options
of the randomized differential test (`test_random_graphs.py`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh `$FUSEC_CACHE_DIR` and an empty in-process cache, so no test sees
    another's kernels or writes into the user's cache directory."""
    from fusec.runtime import cache as cache_mod

    d = tmp_path / "cache"
    monkeypatch.setenv("FUSEC_CACHE_DIR", str(d))
    cache_mod.reset()
    yield d
    cache_mod.reset()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--random-graphs",
        type=int,
        default=int(os.environ.get("FUSEC_RANDOM_GRAPHS", "50")),
        help="how many random graphs test_random_graphs.py runs (FUSEC_RANDOM_GRAPHS)",
    )
    parser.addoption(
        "--random-graphs-start",
        type=int,
        default=0,
        help="the first random graph's seed",
    )
