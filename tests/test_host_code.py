"""Generated host code (`fusec.runtime.host_code`): compiled under a file name of
its own, so tracebacks show its lines; its source on `FUSEC_LOGS=host_code`;
`linecache` entries shared by equal sources and dropped with their functions."""

from __future__ import annotations

import gc
import inspect
import linecache
import traceback
import warnings

import fusec
import pytest
import torch
import torch.fx
from fusec.frontend.source_lines import warn_user
from fusec.runtime import host_code


@torch.fx.wrap
def _no_negatives(x: torch.Tensor) -> torch.Tensor:
    if bool((x < 0).any()):
        raise ValueError("negative input")
    return x


def checked_relu(x: torch.Tensor) -> torch.Tensor:
    return _no_negatives(torch.relu(x) - 1) * 2


def _host_entries() -> set[str]:
    return {f for f in linecache.cache if f.startswith(host_code.FILE_PREFIX)}


def test_traceback_through_generated_code_names_its_file_and_shows_its_lines():
    f = fusec.compile(checked_relu)
    x = torch.full((4,), 2.0)
    for _ in range(2):  # the second call takes the fast path
        torch.testing.assert_close(f(x), checked_relu(x))
    with pytest.raises(ValueError, match="negative input") as info:
        f(torch.zeros(4))
    # Eager decides the error; the program's own attempt is its context.
    cause = info.value.__context__
    assert isinstance(cause, ValueError)
    text = "".join(traceback.format_exception(cause))
    assert 'File "<fusec-host fast_call ' in text
    assert "results = run(args)" in text
    frames = [fs for fs in traceback.extract_tb(cause.__traceback__)]
    run = [fs for fs in frames if fs.filename.startswith("<fusec-host program_run ")]
    assert len(run) == 1 and run[0].name == "run"
    assert run[0].line and run[0].line == linecache.getline(run[0].filename, run[0].lineno).strip()
    assert "f" in run[0].line and "=" in run[0].line  # a step's call: `(s3, ) = f2(s2)`
    assert run[0].line in text


def test_defined_function_has_source_for_tracebacks_and_inspect():
    env: dict[str, object] = {}
    source = "def boom(x):\n    y = x + 1\n    return y / 0\n"
    boom = host_code.define(source, env, "boom", "test")
    with pytest.raises(ZeroDivisionError) as info:
        boom(1)
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.filename.startswith("<fusec-host test ") and last.filename.endswith(">")
    assert (last.lineno, last.name, last.line) == (3, "boom", "return y / 0")
    assert inspect.getsource(boom) == source
    assert env["boom"] is boom


def test_host_code_channel_logs_the_source(capsys):
    fusec.set_logs(host_code=True)
    try:
        f = fusec.compile(checked_relu)
        x = torch.full((4,), 2.0)
        f(x)
        f(x)
    finally:
        fusec.set_logs()
    err = capsys.readouterr().err
    assert "[fusec.host_code] <fusec-host program_run " in err
    assert "\ndef run(args):\n" in err
    assert "[fusec.host_code] <fusec-host fast_call " in err
    assert "\ndef fast(args):\n" in err
    # The logged name is the one tracebacks show, and its lines are the source.
    name = err.split("[fusec.host_code] <fusec-host fast_call ")[1].split(">", 1)[0]
    assert "".join(linecache.getlines(f"<fusec-host fast_call {name}>")).startswith("def fast(")
    # `all` leaves it out (whole sources, not lines); off again, nothing more.
    fusec.set_logs("all")
    try:
        fusec.compile(checked_relu)(x)
    finally:
        fusec.set_logs()
    assert "[fusec.host_code]" not in capsys.readouterr().err


def test_equal_sources_share_one_entry_that_goes_with_the_last_function():
    source = "def same(x):\n    return x * 3\n"
    fns = [host_code.define(source, {}, "same", "test") for _ in range(20)]
    names = {fn.__code__.co_filename for fn in fns}
    assert len(names) == 1
    (name,) = names
    assert name in linecache.cache and name in host_code.live_files()
    del fns[1:]
    gc.collect()
    assert linecache.getlines(name) == ["def same(x):\n", "    return x * 3\n"]
    del fns
    gc.collect()
    assert name not in linecache.cache and name not in host_code.live_files()


def test_equal_sources_are_compiled_once_and_keep_their_own_globals(monkeypatch):
    compiled = []
    real = compile

    def counted(*args, **kwargs):
        compiled.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr("builtins.compile", counted)
    source = "def scaled(x):\n    return x * K\n"
    fns = [host_code.define(source, {"K": k}, "scaled", "test") for k in (2, 3)]
    assert len(compiled) == 1  # one code object ...
    assert fns[0].__code__ is fns[1].__code__
    assert [fn(5) for fn in fns] == [10, 15]  # ... run with each function's globals
    del fns
    gc.collect()
    host_code.define(source, {"K": 4}, "scaled", "test")
    assert len(compiled) == 2  # the code went with its last function


def test_then_programs_written_out_inline_get_no_run_of_their_own():
    f = fusec.compile(checked_relu)
    x = torch.full((4,), 2.0)
    for _ in range(2):
        torch.testing.assert_close(f(x), checked_relu(x))
    program = f.last.program
    ifs = [s for s in program.steps if s.kind == "if"]
    assert ifs and program._generated is not None
    for step in ifs:
        then, other = step.programs()
        assert then._generated is None and other._generated is None


def test_recompiling_does_not_grow_linecache():
    x = torch.full((4,), 2.0)

    def compile_and_call() -> None:
        f = fusec.compile(checked_relu)
        f(x)
        f(x)

    compile_and_call()
    gc.collect()
    after_one = _host_entries()
    for _ in range(5):
        compile_and_call()
    gc.collect()
    assert _host_entries() == after_one


def test_a_warning_raised_under_generated_code_names_the_caller():
    call = host_code.define("def call(w):\n    return w('careful')\n", {}, "call", "test")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call(warn_user)
    assert [w.filename for w in caught] == [__file__]
