"""fusec's layers: imports point one way, and no two modules import each other.

Every fusec module is parsed with `ast`, and every import in it (function-local
ones included; an `if TYPE_CHECKING:` block never runs and is skipped) is
resolved to the fusec module it loads, relative imports too. Two rules:

- no import cycle among fusec's modules (any cycle is reported as one path);
- a module imports only modules of its own layer or of a lower one:

      rank  layer                              may import
      0     fusec.runtime, fusec.backends      each other (no xDSL: a warm start)
      1     fusec.dialects                     + rank 0
      2     fusec.passes                       + dialects
      3     fusec.codegen                      + passes
      4     fusec.frontend                     + codegen
      5     fusec.observability                + frontend
      6     fusec.api                          + observability
      7     fusec.tools                        + api
      8     fusec (the package's __init__)     everything: its public names

An import of `fusec` itself (e.g. `from fusec import __version__`) loads nothing
new, since a module of the package has already run the package's `__init__`, and
is not an edge. The compiler reaches the runtime through callbacks it installs
(`fusec.runtime.cache.set_kernel_builder`), never the other way around.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYERS: dict[str, int] = {
    "fusec.runtime": 0,
    "fusec.backends": 0,
    "fusec.dialects": 1,
    "fusec.passes": 2,
    "fusec.codegen": 3,
    "fusec.frontend": 4,
    "fusec.observability": 5,
    "fusec.api": 6,
    "fusec.tools": 7,
    "fusec": 8,
}
"""Layer of each package prefix (the longest matching prefix counts): a module
may import modules of its rank or lower."""

KNOWN_CYCLES: list[frozenset[str]] = []
"""Cycles known and being removed: each must still exist (a stale entry fails)."""


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    path: Path
    line: int


def find_modules(package_dirs: Mapping[str, Path]) -> dict[str, Path]:
    """Module name -> source file, for packages mapped onto folders as
    setuptools' `package-dir` does (a folder's subfolders are subpackages)."""
    modules: dict[str, Path] = {}
    for package, folder in package_dirs.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            name = ".".join((package, *parts))
            # A folder mapped on its own (fusec.passes) wins over the same
            # folder reached as a subfolder of another one.
            modules.setdefault(name, path)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _executed_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under `node` but those of `if TYPE_CHECKING:` bodies."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for other in child.orelse:
                yield other
                yield from _executed_nodes(other)
            continue
        yield child
        yield from _executed_nodes(child)


def imports_of(name: str, path: Path, modules: Mapping[str, Path]) -> list[Import]:
    """The imports of module `name` that load one of `modules`."""
    is_package = path.name == "__init__.py"
    found: list[Import] = []
    for node in _executed_nodes(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                # `from pkg import mod` loads the module pkg.mod; `from mod import
                # name` loads mod.
                sub = f"{source}.{alias.name}"
                targets.append(sub if sub in modules else source)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        for target in targets:
            # The longest known module the name starts with (`import a.b.c` loads a.b.c).
            while target and target not in modules:
                target = target.rpartition(".")[0]
            imp = Import(name, target, path, node.lineno)  # type: ignore[attr-defined]
            if target and target != name and imp not in found:
                found.append(imp)
    return found


def import_graph(package_dirs: Mapping[str, Path], root_package: str) -> list[Import]:
    """Every import among the modules of `package_dirs`, imports of
    `root_package` itself (already loaded by then) left out."""
    modules = find_modules(package_dirs)
    return [
        imp
        for name, path in modules.items()
        for imp in imports_of(name, path, modules)
        if imp.imported != root_package
    ]


def _graph(imports: list[Import]) -> dict[str, list[str]]:
    graph: dict[str, list[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, []).append(imp.imported)
        graph.setdefault(imp.imported, [])
    return graph


def find_cycles(imports: list[Import]) -> list[list[str]]:
    """One cycle (a module path back to its start) per `find_components` component."""
    graph = _graph(imports)
    return [_cycle_in(set(c), graph) for c in find_components(imports)]


def find_components(imports: list[Import]) -> list[list[str]]:
    """The strongly connected components of more than one module: the modules
    that import each other, through others maybe (Tarjan's algorithm, iterative)."""
    graph = _graph(imports)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(set(graph[start]))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(set(graph[w])))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _cycle_in(component: set[str], graph: Mapping[str, list[str]]) -> list[str]:
    """A shortest cycle through the component's first module (breadth-first)."""
    start = min(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(set(graph[v]) & component):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if w not in parents:
                    parents[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"no cycle in the component {sorted(component)}")


def layer_of(module: str, layers: Mapping[str, int]) -> tuple[str, int]:
    """(layer name, rank) of the longest prefix of `module` in `layers`."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        if prefix in layers:
            return prefix, layers[prefix]
    raise KeyError(f"{module} is in no layer")


def layer_violations(imports: list[Import], layers: Mapping[str, int], root: Path) -> list[str]:
    """`file:line: a imports b: rule` for each import of a higher layer."""
    out = []
    for imp in imports:
        (mine, rank), (theirs, other) = (
            layer_of(imp.importer, layers),
            layer_of(imp.imported, layers),
        )
        if other > rank:
            where = imp.path.relative_to(root) if imp.path.is_relative_to(root) else imp.path
            out.append(
                f"{where}:{imp.line}: {imp.importer} imports {imp.imported}: "
                f"{mine} (rank {rank}) may not import {theirs} (rank {other})"
            )
    return out


def fusec_package_dirs() -> dict[str, Path]:
    """fusec's package-dir mapping, from pyproject.toml's
    `[tool.setuptools.package-dir]` table (`"fusec" = "compiler"` lines)."""
    text = (ROOT / "pyproject.toml").read_text()
    table = text.split("[tool.setuptools.package-dir]", 1)[1].split("\n[", 1)[0]
    pairs = re.findall(r'^"([\w.]+)" = "([\w/]+)"$', table, re.M)
    assert pairs, "no package-dir table in pyproject.toml"
    return {package: ROOT / folder for package, folder in pairs}


# ---------------------------------------------------------------------- fusec


def test_every_fusec_module_is_in_a_layer() -> None:
    modules = find_modules(fusec_package_dirs())
    assert "fusec.api.compiled" in modules and "fusec.runtime.cache" in modules
    for name in modules:
        layer_of(name, LAYERS)


def test_no_import_cycle_among_fusec_modules() -> None:
    imports = import_graph(fusec_package_dirs(), "fusec")
    graph = _graph(imports)
    new = [
        _cycle_in(set(c), graph)
        for c in find_components(imports)
        if frozenset(c) not in KNOWN_CYCLES
    ]
    assert not new, "import cycles:\n" + "\n".join(" -> ".join(c) for c in new)


def test_known_cycles_still_exist() -> None:
    """A known cycle that is gone leaves KNOWN_CYCLES: delete its entry."""
    components = {
        frozenset(c) for c in find_components(import_graph(fusec_package_dirs(), "fusec"))
    }
    stale = [sorted(c) for c in KNOWN_CYCLES if c not in components]
    assert not stale, f"cycles no longer there, remove them from KNOWN_CYCLES: {stale}"


def test_imports_follow_the_layers() -> None:
    bad = layer_violations(import_graph(fusec_package_dirs(), "fusec"), LAYERS, ROOT)
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_the_runtime_and_backends_import_no_xdsl() -> None:
    """A warm-started program runs without xDSL: rank 0 reads no IR."""
    found = []
    for name, path in find_modules(fusec_package_dirs()).items():
        if layer_of(name, LAYERS)[1] != 0:
            continue
        for node in _executed_nodes(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if any(n == "xdsl" or n.startswith("xdsl.") for n in names):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")  # type: ignore[attr-defined]
    assert not found, f"xDSL imported by the runtime: {found}"


# ---------------------------------------------------------------------- the checker


def test_the_checker_reports_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    pkg = tmp_path / "src"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    files = {
        "__init__.py": "",
        "low/__init__.py": "",
        "high/__init__.py": "",
        # A cycle through a relative import, a function-local one and a
        # `from package import module`.
        "low/a.py": "from .b import f\n",
        "low/b.py": "def f():\n    from pkg.low import c\n",
        "low/c.py": "import pkg.low.a\n",
        # An upward import, function-local; the TYPE_CHECKING one never runs.
        "low/d.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from pkg.high.h import H\n"
            "def g():\n    from ..high import h\n"
        ),
        "high/h.py": "from pkg.low.d import g\nimport importlib\n"
        "importlib.import_module('pkg.high.i')\n",
        "high/i.py": "import pkg\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    imports = import_graph({"pkg": pkg}, "pkg")
    assert {(i.importer, i.imported) for i in imports} == {
        ("pkg.low.a", "pkg.low.b"),
        ("pkg.low.b", "pkg.low.c"),
        ("pkg.low.c", "pkg.low.a"),
        ("pkg.low.d", "pkg.high.h"),
        ("pkg.high.h", "pkg.low.d"),
        ("pkg.high.h", "pkg.high.i"),
    }
    cycles = find_cycles(imports)
    assert sorted(cycles) == [
        ["pkg.high.h", "pkg.low.d", "pkg.high.h"],
        ["pkg.low.a", "pkg.low.b", "pkg.low.c", "pkg.low.a"],
    ]
    bad = layer_violations(imports, {"pkg": 2, "pkg.low": 0, "pkg.high": 1}, tmp_path)
    assert bad == [
        "src/low/d.py:5: pkg.low.d imports pkg.high.h: pkg.low (rank 0) may not import "
        "pkg.high (rank 1)"
    ]
