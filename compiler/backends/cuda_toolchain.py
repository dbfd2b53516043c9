"""Where the CUDA code-generation tools are: libdevice, nvJitLink, ptxas.

pip packages (fusec's `cuda` extra) come first, then a CUDA toolkit at
`$CUDA_HOME` / `$CUDA_PATH` / `/usr/local/cuda`:

| tool                 | pip package (CUDA 13 wheels, `nvidia/cu13/...`) | toolkit path          |
|----------------------|--------------------------------------------------|-----------------------|
| `libdevice.10.bc`    | `nvidia-nvvm` (`nvvm/libdevice/`)                | `nvvm/libdevice/`     |
| `libnvJitLink.so.*`  | `nvidia-nvjitlink` (`lib/`)                      | `lib64/`              |
| `ptxas`              | `nvidia-cuda-nvcc` (`bin/`)                      | `bin/`, or on `PATH`  |

(`nvidia-cuda-nvcc` 13.x pulls in `nvidia-nvvm`.) Nothing here needs a GPU.

    >>> from fusec.backends.cuda_toolchain import find_toolchain
    >>> tc = find_toolchain()
    >>> tc.libdevice            # Path(...site-packages/nvidia/cu13/nvvm/libdevice/libdevice.10.bc)
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

CUDA_PIP_PACKAGES = ("nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-nvjitlink")
"""The distributions of the `cuda` extra that carry the code-generation tools."""

_PROVIDER = {
    "libdevice": "nvidia-nvvm (installed with nvidia-cuda-nvcc)",
    "nvjitlink": "nvidia-nvjitlink",
    "ptxas": "nvidia-cuda-nvcc",
}


class CudaToolchainError(RuntimeError):
    """A CUDA tool fusec needs was not found; the message says which and where
    it was looked for, and which pip package provides it."""


def _pip_roots() -> list[Path]:
    """`site-packages/nvidia/<cuXX>` (CUDA 13 wheels) and the older
    per-component `site-packages/nvidia/<component>` folders."""
    roots: list[Path] = []
    for entry in sys.path:
        nvidia = Path(entry or ".") / "nvidia"
        if not nvidia.is_dir():
            continue
        roots += sorted(nvidia.glob("cu[0-9]*"), reverse=True)
        roots += [nvidia / "cuda_nvcc", nvidia / "nvjitlink", nvidia / "nvvm"]
    return [r for r in roots if r.is_dir()]


def _toolkit_roots() -> list[Path]:
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    return [Path(r) for r in roots if r and Path(r).is_dir()]


def _first(candidates: list[Path]) -> Path | None:
    return next((c for c in candidates if c.is_file()), None)


def _libdevice_candidates() -> list[Path]:
    return [
        r / sub / "libdevice.10.bc"
        for r in _pip_roots() + _toolkit_roots()
        for sub in ("nvvm/libdevice", "libdevice")
    ]


def _nvjitlink_candidates() -> list[Path]:
    found: list[Path] = []
    for root in _pip_roots() + _toolkit_roots():
        for sub in ("lib", "lib64"):
            found += sorted((root / sub).glob("libnvJitLink.so*"), reverse=True)
    return found


def _ptxas_candidates() -> list[Path]:
    found = [r / "bin" / "ptxas" for r in _pip_roots() + _toolkit_roots()]
    on_path = shutil.which("ptxas")
    return found + ([Path(on_path)] if on_path else [])


@dataclass(frozen=True)
class CudaToolchain:
    """Paths of the tools that were found (None where one is missing)."""

    libdevice: Path | None
    nvjitlink: Path | None
    ptxas: Path | None

    def require_libdevice(self) -> Path:
        if self.libdevice is None:
            raise _missing("libdevice", "libdevice.10.bc", _libdevice_candidates())
        return self.libdevice

    def require_assembler(self) -> Path:
        """nvJitLink if present, else ptxas: what `assemble_ptx` will use."""
        if self.nvjitlink is not None:
            return self.nvjitlink
        if self.ptxas is not None:
            return self.ptxas
        raise CudaToolchainError(
            "no PTX assembler found: neither libnvJitLink.so (pip install "
            f"{_PROVIDER['nvjitlink']}) nor ptxas (pip install {_PROVIDER['ptxas']}); "
            f"searched {[str(p) for p in _nvjitlink_candidates() + _ptxas_candidates()] or 'site-packages/nvidia and CUDA_HOME'}. "
            "Install fusec's `cuda` extra: pip install 'fusec[cuda]'"
        )


def _missing(kind: str, what: str, searched: list[Path]) -> CudaToolchainError:
    where = ", ".join(str(p) for p in searched) or "no site-packages/nvidia folder, no CUDA_HOME"
    return CudaToolchainError(
        f"{what} not found (searched: {where}); it is provided by the pip package "
        f"{_PROVIDER[kind]} (fusec's `cuda` extra: pip install 'fusec[cuda]') "
        "or by a CUDA toolkit at $CUDA_HOME"
    )


@functools.cache
def find_toolchain() -> CudaToolchain:
    """Look the tools up once per process (pip packages before the toolkit)."""
    return CudaToolchain(
        libdevice=_first(_libdevice_candidates()),
        nvjitlink=_first(_nvjitlink_candidates()),
        ptxas=_first(_ptxas_candidates()),
    )


def cuda_extra_installed() -> bool:
    """True when the `cuda` extra's tool packages are installed (then the
    toolchain must be found: tests use this so a broken install cannot skip)."""
    from importlib import metadata

    try:
        for dist in ("nvidia-cuda-nvcc", "nvidia-nvjitlink"):
            metadata.version(dist)
    except metadata.PackageNotFoundError:
        return False
    return True
