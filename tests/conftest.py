"""Shared pytest fixtures: every test gets its own empty kernel cache."""

from __future__ import annotations

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
