"""`import fusec` (and importing every fusec module) changes nothing outside fusec.

Each check runs in a fresh interpreter: what a process imported before fusec is
snapshotted (every module's namespace, the standard library's `dataclasses`
and `builtins`, the import machinery), then all of fusec's modules are
imported and the snapshot compared.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_MODULES = textwrap.dedent(
    """
    import importlib, json, pkgutil, sys
    import fusec
    for pkg in ("fusec", "fusec.dialects", "fusec.passes", "fusec.runtime"):
        for m in pkgutil.iter_modules(importlib.import_module(pkg).__path__):
            importlib.import_module(pkg + "." + m.name)
    print(json.dumps(sorted(sys.modules)))
    """
)

_COMPARE = textwrap.dedent(
    """
    import builtins, dataclasses, importlib, json, pkgutil, sys

    def fusec_owned(name):
        return name == "fusec" or name.startswith("fusec.") or name.startswith("__editable__")

    for name in json.loads(sys.argv[1]):
        if not fusec_owned(name) and name not in sys.modules:
            try:
                importlib.import_module(name)
            except Exception:  # not importable on its own (a private alias): skip it
                pass
    # Not this script's own namespace (`__main__`, and its `__mp_main__` alias once
    # multiprocessing is imported): the loop below rebinds its names.
    modules = {
        n: m
        for n, m in list(sys.modules.items())
        if m is not None and not fusec_owned(n) and m is not sys.modules["__main__"]
    }
    before = {n: dict(vars(m)) for n, m in modules.items()}
    hooks = (list(sys.meta_path), list(sys.path_hooks))

    import fusec
    for pkg in ("fusec", "fusec.dialects", "fusec.passes", "fusec.runtime"):
        for m in pkgutil.iter_modules(importlib.import_module(pkg).__path__):
            importlib.import_module(pkg + "." + m.name)

    changed = []
    for n, m in modules.items():
        now = vars(m)
        for k in set(before[n]) | set(now):
            old, new = before[n].get(k, changed), now.get(k, changed)
            if old is new:
                continue
            if k not in before[n] and type(new) is type(sys) and new.__name__ == f"{n}.{k}":
                continue  # a submodule imported afterwards: how imports work
            if n in ("builtins", "dataclasses") or callable(old) or callable(new):
                changed.append(f"{n}.{k}")
    if (list(sys.meta_path), list(sys.path_hooks)) != hooks:
        changed.append("sys.meta_path/sys.path_hooks")
    print(json.dumps(sorted(changed)))
    """
)

_USER_DATACLASS = textwrap.dedent(
    """
    from __future__ import annotations

    import dataclasses, typing
    import fusec
    import fusec.api.compiled, fusec.dialects.aten, fusec.passes.fuse  # noqa: F401

    @dataclasses.dataclass(frozen=True)
    class Node:
        value: int
        next: Node | None = None

    hints = typing.get_type_hints(Node)
    init = typing.get_type_hints(Node.__init__)
    assert hints["next"] == typing.Optional[Node], hints
    assert init["next"] == typing.Optional[Node] and init["return"] is type(None), init
    assert Node(1, Node(2)) == Node(1, Node(2)) and hash(Node(1)) == hash(Node(1))
    print("ok")
    """
)


def _run(code: str, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


def test_importing_fusec_changes_no_other_module() -> None:
    """Modules imported before fusec (the standard library's, xDSL's, torch's,
    llvmlite's: every one fusec's modules import) keep every function and class
    they had, and `dataclasses` and `builtins` their whole namespace."""
    used = _run(_MODULES)
    changed = json.loads(_run(_COMPARE, used))
    assert changed == [], f"importing fusec changed: {changed}"


def test_user_dataclass_after_import_has_its_type_hints() -> None:
    """A dataclass with forward references defined after `import fusec`:
    `typing.get_type_hints` resolves them (on the class and its `__init__`)."""
    assert _run(_USER_DATACLASS) == "ok"
