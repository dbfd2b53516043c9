"""The code of xDSL's and fusec's dataclass methods, kept across processes
(`fusec.dataclass_code`)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import fusec  # noqa: F401 - installs the cached `exec`
import pytest
from fusec import dataclass_code

_CLASS = """
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Probe{n}:
    name: str
    {field}: int = 32
    tags: tuple[str, ...] = field(default=())
"""


def _define(module: str, n: int, field: str = "width") -> type:
    """A frozen dataclass `Probe<n>` defined in a new module named `module`."""
    mod = types.ModuleType(module)
    sys.modules[module] = mod
    try:
        exec(_CLASS.format(n=n, field=field), mod.__dict__)  # noqa: S102 - the test's own source
    finally:
        del sys.modules[module]
    return getattr(mod, f"Probe{n}")


@pytest.fixture
def fresh_table(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty table of code objects for the test, so that its classes' methods
    are compiled here and never written to the installation's file."""
    monkeypatch.setattr(dataclass_code, "_codes", {})
    monkeypatch.setattr(dataclass_code, "_used", set())
    monkeypatch.setattr(dataclass_code, "_compiled", 0)
    monkeypatch.setattr(dataclass_code, "file_path", lambda: str(tmp_path / "unused.bin"))


def _check_methods(cls: type, field: str = "width") -> None:
    a, b = cls("x", 8), cls("x", 8)
    assert a == b and hash(a) == hash(b) and a != cls("y")
    assert repr(a) == f"{cls.__name__}(name='x', {field}=8, tags=())"
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(a, field, 3)


def test_installed_by_import_fusec() -> None:
    assert vars(dataclasses)["exec"] is dataclass_code._exec


def test_methods_of_fusec_and_xdsl_classes_are_kept_others_are_not(fresh_table: None) -> None:
    before = len(dataclass_code._table())
    kept = _define("fusec._dataclass_code_probe", 901)
    # __init__, __repr__, __eq__, __hash__, __setattr__, __delattr__
    assert len(dataclass_code._table()) == before + 6
    _check_methods(kept)
    # The same methods' source in another module (the class name is not in
    # it: `__repr__` reads `__qualname__`): kept once.
    _check_methods(_define("xdsl._dataclass_code_probe", 902))
    assert len(dataclass_code._table()) == before + 6
    # A user's class: compiled as without fusec, nothing kept.
    plain = _define("user_models.probe", 903, field="size")
    assert len(dataclass_code._table()) == before + 6
    _check_methods(plain, field="size")
    _check_methods(_define("xdsl._dataclass_code_probe", 904, field="size"), field="size")
    assert len(dataclass_code._table()) == before + 12


def test_kept_code_is_the_compiled_source() -> None:
    table = dataclass_code._table()
    assert table, "nothing kept after importing xDSL's dialects"
    for source, code in list(table.items())[:50]:
        assert code.co_code == compile(source, "<string>", "exec").co_code
        assert code.co_filename == "<string>"


def test_exec_without_namespaces_uses_the_callers() -> None:
    def run() -> int:
        found: list[int] = []
        dataclass_code._exec("found.append(7)")
        return found[0]

    assert run() == 7


def test_file_round_trip_and_bad_files_ignored(fresh_table: None, tmp_path: Path) -> None:
    path = str(tmp_path / "sub" / "code.bin")
    _define("fusec._dataclass_code_write", 905, field="depth")  # something compiled in this process
    assert dataclass_code.write(path)
    back = dataclass_code.read(path)
    assert set(back) == set(dataclass_code._table())
    source = next(iter(back))
    assert back[source].co_code == compile(source, "<string>", "exec").co_code
    data = Path(path).read_bytes()
    for bad in (b"", data[: len(data) // 2], b"\0" * 16 + data[16:], data[:20] + b"junk"):
        Path(path).write_bytes(bad)
        assert dataclass_code.read(path) == {}
    assert dataclass_code.read(str(tmp_path / "missing.bin")) == {}
    assert dataclass_code.write(path) and dataclass_code.read(path)  # replaced
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["code.bin"]  # no tmp left
    assert not dataclass_code.write(None)


_CHILD = textwrap.dedent(
    """
    import sys
    from fusec import dataclass_code
    dataclass_code.file_path = lambda: {path!r}
    dataclass_code._codes = None
    import xdsl.dialects.arith, fusec.dialects.aten
    print(dataclass_code._compiled, len(dataclass_code._table()))
    """
)


def _child(path: Path, **env: str) -> tuple[int, int]:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD.format(path=str(path))],
        env={**environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), int(out[1])


def test_a_second_process_compiles_none_of_them(tmp_path: Path) -> None:
    path = tmp_path / "code.bin"
    compiled, kept = _child(path, PYTHONDONTWRITEBYTECODE="1")
    assert compiled > 100 and compiled == kept
    assert not path.exists()  # no bytecode written, no code kept
    first, _ = _child(path)
    assert first == compiled and path.exists()
    again, kept_again = _child(path)
    assert again == 0 and kept_again == kept
