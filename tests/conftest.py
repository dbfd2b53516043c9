"""Shared pytest fixtures: every test gets its own empty kernel cache; options
of the randomized differential test (`test_random_graphs.py`); `--device cuda`,
which makes CUDA torch's default device so the differential tests' inputs (made
by `torch.randn(...)` and friends without a device) are CUDA tensors:

    pytest -q tests/test_differential.py tests/test_eager_parity.py --device cuda
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh `$FUSEC_CACHE_DIR` and an empty in-process cache, so no test sees
    another's kernels or writes into the user's cache directory; a fresh
    `$TORCHINDUCTOR_CACHE_DIR` too, where AOTAutograd caches fusec's training
    graphs (`fusec.api.aot_cache`)."""
    from fusec.runtime import cache as cache_mod

    d = tmp_path / "cache"
    monkeypatch.setenv("FUSEC_CACHE_DIR", str(d))
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "torch-cache"))
    cache_mod.reset()
    yield d
    cache_mod.reset()


@pytest.fixture(autouse=True)
def default_device(request: pytest.FixtureRequest) -> Iterator[None]:
    """Makes `--device`'s device torch's default for the test's own tensors."""
    device = request.config.getoption("--device")
    if device == "cpu":
        yield
        return
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        pytest.skip(f"--device {device}: no CUDA device")
    torch.set_default_device(device)
    try:
        yield
    finally:
        torch.set_default_device(None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--device",
        default=os.environ.get("FUSEC_TEST_DEVICE", "cpu"),
        help="torch's default device in the tests (cpu, cuda): the same differential "
        "tests on CUDA tensors (FUSEC_TEST_DEVICE)",
    )
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
