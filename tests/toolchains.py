"""Test helpers for the CUDA toolchain (PTX assembly needs no GPU, only the pip
`cuda` extra)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from fusec.backends.cuda_toolchain import CudaToolchain, cuda_extra_installed, find_toolchain


def cuda_toolchain_or_skip() -> CudaToolchain:
    """The toolchain; skips without one, and fails when the `cuda` extra is
    installed but incomplete (so CI can never skip the PTX tests silently)."""
    tc = find_toolchain()
    if tc.libdevice is None or (tc.nvjitlink is None and tc.ptxas is None):
        if cuda_extra_installed():
            pytest.fail(f"the cuda extra is installed but the toolchain is incomplete: {tc}")
        pytest.skip("no CUDA toolchain (install fusec[cuda])")
    return tc


def cuda_driver_bindings_or_skip() -> object:
    """`cuda.bindings.driver` (cuda-python, from the `cuda` extra); skips without
    it, and fails when the extra is installed but the bindings do not import."""
    try:
        from cuda.bindings import driver
    except ImportError as e:
        if cuda_extra_installed():
            pytest.fail(f"the cuda extra is installed but cuda-python does not import: {e}")
        pytest.skip("no cuda-python (install fusec[cuda])")
    return driver


def sibling_test_module(name: str) -> ModuleType:
    """A test module in tests/ by file name, imported once (pytest's importlib
    mode keeps tests/ off sys.path, so `import test_ptx` would not work)."""
    key = f"_fusec_tests_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
