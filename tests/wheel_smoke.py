"""Smoke test of an installed fusec (a wheel or `pip install .`), run by
`tests/check_wheel.sh` in a fresh venv and from outside the checkout, so neither
an editable install nor the source folders can stand in for what was installed:

    python wheel_smoke.py --source /path/to/checkout

Not collected by pytest (the name is not `test_*.py`): it needs an installed,
non-editable fusec. It checks, failing on the first that does not hold:

1. fusec is imported from the installed tree, not from the checkout.
2. Every module of the installed package imports (`pkgutil.walk_packages`), and
   every module of the checkout (pyproject's package-dir folders, walked) is in
   the installed package: a subpackage missing from `[tool.setuptools] packages`
   fails here even when nothing imports it at `import fusec`.
3. The warm-start fingerprint hashes every installed module.
4. `fusec-opt --fuse` on `filecheck/examples/lstm_tail.mlir` prints one group.
5. `fusec.compile` of the README's LSTM cell: one launch, eager's values.
6. `torch.compile(backend="fusec")` through the package's entry point.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import pkgutil
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path


def fail(message: str) -> None:
    print(f"wheel smoke: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


START = time.monotonic()


def step(message: str) -> None:
    print(f"wheel smoke [{time.monotonic() - START:.0f}s]: {message}", flush=True)


def is_within(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def installed_modules() -> list[str]:
    """Every module of the installed fusec, imported (walk_packages imports each
    package to look inside it; the plain modules are imported here)."""
    import fusec

    errors: list[str] = []

    def onerror(name: str) -> None:
        errors.append(f"{name}: {traceback.format_exc(limit=1).strip()}")

    names = ["fusec"]
    for info in pkgutil.walk_packages(fusec.__path__, "fusec.", onerror=onerror):
        names.append(info.name)
        try:
            importlib.import_module(info.name)
        except Exception:
            errors.append(f"{info.name}: {traceback.format_exc(limit=1).strip()}")
    if errors:
        fail("modules that do not import:\n  " + "\n  ".join(errors))
    return sorted(names)


def source_modules(source: Path) -> set[str]:
    """The modules the checkout's package-dir folders hold, by dotted name."""
    import tomllib

    pyproject = tomllib.loads((source / "pyproject.toml").read_text())
    package_dir: dict[str, str] = pyproject["tool"]["setuptools"]["package-dir"]
    names: set[str] = set()
    for package, folder in package_dir.items():
        root = source / folder
        for path in root.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            names.add(".".join((package, *parts)) if package else ".".join(parts))
    return names


def check_installed(source: Path) -> list[str]:
    import fusec

    step(f"fusec {fusec.__version__} from {Path(fusec.__file__).parent}")
    if is_within(Path(fusec.__file__), source):
        fail(f"fusec was imported from the checkout ({fusec.__file__}), not the install")
    if any(p and Path(p).exists() and Path(p).resolve() == source.resolve() for p in sys.path):
        fail("the checkout is on sys.path")
    dist = importlib.metadata.distribution("fusec")
    if (dist.read_text("direct_url.json") or "").find('"editable": true') >= 0:
        fail("fusec is an editable install")

    modules = installed_modules()
    step(f"{len(modules)} installed modules import")
    missing = sorted(source_modules(source) - set(modules))
    if missing:
        fail(
            "in the checkout but not in the installed package (pyproject's "
            "[tool.setuptools] packages?):\n  " + "\n  ".join(missing)
        )

    from fusec.runtime import program_cache

    unhashed = sorted(set(modules) - set(program_cache.sources()))
    if unhashed:
        fail("modules the warm-start fingerprint does not hash: " + ", ".join(unhashed))
    return modules


def check_fusec_opt(source: Path) -> None:
    exe = shutil.which("fusec-opt", path=os.path.dirname(sys.executable))
    if exe is None:
        fail(f"no fusec-opt console script next to {sys.executable}")
    example = source / "filecheck" / "examples" / "lstm_tail.mlir"
    out = subprocess.run([exe, "--fuse", str(example)], capture_output=True, text=True)
    if out.returncode != 0 or out.stdout.count("fusion.group") != 1:
        fail(f"fusec-opt --fuse {example.name}: rc {out.returncode}\n{out.stdout}{out.stderr}")
    step("fusec-opt --fuse lstm_tail.mlir: one fusion.group")


def cell(gates, cx):  # the README's LSTM cell
    import torch

    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


def check_compile() -> None:
    import fusec
    import torch

    fast = fusec.compile(cell)
    gates, cx = torch.randn(8, 64), torch.randn(8, 16)
    got = fast(gates, cx)
    torch.testing.assert_close(got, cell(gates, cx))
    if fast.launches_per_call != 1:
        fail(f"fusec.compile(cell): {fast.launches_per_call} launches per call, not 1")
    if fusec.cache_stats()["kernels_compiled"] < 1:
        fail("fusec.compile(cell) compiled no kernel")
    step("fusec.compile(LSTM cell): one launch, eager's values")


def check_dynamo() -> None:
    import fusec
    import torch

    (entry,) = [
        e
        for e in importlib.metadata.entry_points(group="torch_dynamo_backends")
        if e.name == "fusec"
    ]
    backend = entry.load()
    if not is_within(Path(sys.modules[backend.__module__].__file__), Path(fusec.__file__).parent):
        fail(f"the fusec Dynamo entry point loads {backend.__module__} from elsewhere")

    def model(x, y):
        return torch.tanh(x) * torch.sigmoid(y) + 1

    before = fusec.cache_stats()["kernels_compiled"]
    compiled = torch.compile(model, backend="fusec")
    x, y = torch.randn(16, 32), torch.randn(16, 32)
    torch.testing.assert_close(compiled(x, y), model(x, y))
    if fusec.cache_stats()["kernels_compiled"] <= before:
        fail('torch.compile(backend="fusec") compiled no fusec kernel')
    step(f'torch.compile(backend="fusec") via entry point {entry.value}')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, required=True, help="the fusec checkout")
    args = parser.parse_args()
    if is_within(Path.cwd(), args.source):
        fail("run this from outside the checkout (tests/check_wheel.sh does)")
    check_installed(args.source)
    check_fusec_opt(args.source)
    check_compile()
    check_dynamo()
    step("ok")


if __name__ == "__main__":
    main()
