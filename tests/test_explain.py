"""`fusec.explain`, strict mode, `FUSEC_LOGS` and the docs the API carries: every
unfused op gets the reason the fuse pass recorded, naming the user's line, and
every compiled result still matches eager PyTorch."""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
import warnings

import fusec
import pytest
import torch
from fusec.api.compiled import CompileOptions, FusionError
from fusec.codegen.pipelines import compile_pipeline
from fusec.runtime.cache import KernelCache


def line_of(fn, text: str) -> str:
    """`test_explain.py:<n>`: the line of `fn`'s source that holds `text`."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (text, hits)
    return f"{os.path.basename(__file__)}:{hits[0]}"


def readme_cell(gates, cx):
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


def barriers(x, w):
    a = torch.sigmoid(x)
    b = a @ w
    c = torch.cumsum(b, -1)
    return torch.tanh(c) * 2 + b


def test_readme_lstm_cell_is_one_group_with_nothing_unfused():
    args = (torch.randn(8, 64), torch.randn(8, 16))
    report = fusec.explain(readme_cell, *args)
    (graph,) = report.graphs
    assert graph.unfused == []
    (group,) = graph.groups
    names = sorted(o.name for o in group.ops)
    assert names.count("aten.sigmoid") == 3 and names.count("aten.tanh") == 2
    assert "aten.chunk" in names
    assert group.kernel is not None and group.kernel.status == "compiled"
    assert len(group.key) == 64
    assert {str(o.source) for o in group.ops if o.name == "aten.chunk"} == {
        line_of(readme_cell, "gates.chunk")
    }
    assert report.kernels == graph.launches_per_call == 1
    text = str(report)
    assert "group_0" in text and "kernel compiled" in text and "first call" in text
    # Explaining compiled the same thing fusec.compile runs: results match eager.
    fast = fusec.compile(readme_cell)
    for got, want in zip(fast(*args), readme_cell(*args), strict=True):
        torch.testing.assert_close(got, want)


def test_barriers_are_named_with_their_kind_and_the_users_line():
    args = (torch.randn(4, 4), torch.randn(4, 4))
    report = fusec.explain(barriers, *args)
    unfused = {o.name: o for o in report.unfused}
    assert set(unfused) == {"aten.sigmoid", "aten.matmul", "aten.opaque torch.cumsum"}
    mm = unfused["aten.matmul"]
    assert mm.remark.kind == "barrier" and "matrix product" in mm.remark.detail
    assert str(mm.source) == line_of(barriers, "a @ w")
    cumsum = unfused["aten.opaque torch.cumsum"]
    assert cumsum.remark.kind == "barrier" and "torch.cumsum" in cumsum.remark.detail
    assert str(cumsum.source) == line_of(barriers, "cumsum")
    # Its only consumer is the matmul: nothing pointwise to fuse with.
    sig = unfused["aten.sigmoid"]
    assert sig.remark.kind == "no-partner" and "aten.matmul" in sig.remark.detail
    (group,) = report.groups
    assert sorted(o.name for o in group.ops) == ["aten.add", "aten.mul", "aten.tanh"]
    assert all(o.remark is None for o in group.ops)


def add_after_mul(a, b, c):
    t = a * b
    return t + c


def _limited(limit: int) -> str:
    pipeline = compile_pipeline("cpu")
    assert pipeline.count(",fuse,") == 2
    return pipeline.replace(",fuse,", f",fuse{{arg-limit={limit}}},")


def test_argument_limit_is_the_reason_and_strict_mode_names_the_op():
    args = [torch.randn(5) for _ in range(3)]
    report = fusec.explain(add_after_mul, *args, pipeline=_limited(3))
    kinds = {o.name: o.remark.kind for o in report.unfused}
    assert kinds == {"aten.mul": "arg-limit", "aten.add": "arg-limit"}
    assert "needs 4 kernel arguments (arg-limit=3)" in report.unfused[0].remark.detail
    # The same graph without the limit fuses: the reason was the limit.
    assert fusec.explain(add_after_mul, *args).unfused == []

    loose = fusec.compile(add_after_mul, pipeline=_limited(3))
    torch.testing.assert_close(loose(*args), add_after_mul(*args))
    strict = fusec.compile(add_after_mul, pipeline=_limited(3), strict=True)
    with pytest.raises(FusionError, match=r"aten\.mul.*arg-limit") as e:
        strict(*args)
    assert line_of(add_after_mul, "t = a * b") in str(e.value)
    ok = fusec.compile(add_after_mul, strict=True)
    torch.testing.assert_close(ok(*args), add_after_mul(*args))


def read_then_write(x):
    a = torch.exp(x)
    x.add_(1)
    return a * 2


def test_a_write_that_may_alias_is_the_reason():
    x = torch.randn(6)
    report = fusec.explain(read_then_write, x.clone())
    remarks = {o.name: o.remark for o in report.unfused}
    assert remarks["aten.exp"].kind == "alias-write"
    assert remarks["aten.mul"].kind == "alias-write"
    assert remarks["aten.copy_"].kind == "barrier"
    f = fusec.compile(read_then_write)
    mine, theirs = x.clone(), x.clone()
    torch.testing.assert_close(f(mine), read_then_write(theirs))
    torch.testing.assert_close(mine, theirs)


def _failing_builder(group, target):
    raise RuntimeError("no code generator for this test")


def test_a_group_without_kernel_is_a_fallback_and_strict_rejects_it():
    args = (torch.randn(8, 64), torch.randn(8, 16))
    cache = KernelCache(directory=None, builder=_failing_builder)
    report = fusec.explain(readme_cell, *args, cache=cache)
    (group,) = report.groups
    assert group.kernel.status == "none" and "no code generator" in group.kernel.reason
    assert {o.remark.kind for o in group.ops} == {"fallback"}
    assert report.kernels == 0
    f = fusec.compile(readme_cell, cache=KernelCache(directory=None, builder=_failing_builder))
    for got, want in zip(f(*args), readme_cell(*args), strict=True):
        torch.testing.assert_close(got, want)
    strict = fusec.compile(
        readme_cell, strict=True, cache=KernelCache(directory=None, builder=_failing_builder)
    )
    with pytest.raises(FusionError, match="fallback"):
        strict(*args)


def scale(x, y):
    return torch.sigmoid(x) * y


def test_failed_guards_specializations_and_warnings_name_the_user():
    f = fusec.compile(scale, max_specializations=1)
    x, y = torch.randn(4, 3), torch.randn(3)
    torch.testing.assert_close(f(x, y), scale(x, y))
    x1 = torch.randn(4, 1)  # a new size-1 pattern: past the limit, the guard fails
    with pytest.warns(UserWarning, match="reusing a guarded program") as record:
        got = f(x1, y)
    torch.testing.assert_close(got, scale(x1, y))
    assert record[0].filename == __file__
    report = f.explain()
    (group,) = report.groups
    assert group.guard_failure is not None and "size-1 pattern" in group.guard_failure
    assert {o.remark.kind for o in group.ops} == {"guard-failed"}
    assert report.kernels == 0
    strict = fusec.compile(scale, max_specializations=1, strict=True)
    strict(x, y)
    with pytest.raises(FusionError, match="reusing a guarded program"):
        strict(x1, y)

    g = fusec.compile(scale)
    g(x, y)
    g(x.double(), y.double())
    specs = g.explain().graphs[0].specializations
    assert specs[0].endswith("first call")
    assert "input 0 dtype float64 (was float32)" in specs[1]
    assert "input 1 dtype float64 (was float32)" in specs[1]


def complex_sigmoid(z):
    return torch.sigmoid(z) * 2


def test_unsupported_dtypes_are_eager_and_strict_rejects_them():
    z = torch.randn(4, dtype=torch.complex64)
    with pytest.warns(UserWarning, match="running eagerly") as record:
        report = fusec.explain(complex_sigmoid, z)
    assert record[0].filename == __file__
    assert "complex" in report.graphs[0].eager_reason
    assert report.groups == [] and report.kernels == 0
    with pytest.raises(FusionError, match="eagerly.*complex"):
        fusec.compile(complex_sigmoid, strict=True)(z)
    with pytest.warns(UserWarning):
        torch.testing.assert_close(fusec.compile(complex_sigmoid)(z), complex_sigmoid(z))


def scaled_tanh(x):
    rows, cols = x.shape  # torch.fx cannot unpack a traced size
    return torch.tanh(x) * cols + rows


def test_untraceable_functions_are_explained_per_dynamo_graph():
    # Dynamo captures what torch.fx cannot trace; the report is its graph's.
    report = fusec.explain(scaled_tanh, torch.randn(3, 4))
    assert len(report.graphs) == 1 and report.kernels == 1
    assert report.graphs[0].eager_reason is None
    f = fusec.compile(torch.sigmoid, strict=True)  # a builtin: Dynamo captures it too
    torch.testing.assert_close(f(torch.ones(3)), torch.sigmoid(torch.ones(3)))
    assert "Expected FunctionType" in f.untraceable_by_fx


def two_graphs(x, y):
    a = torch.sigmoid(x) * y
    torch._dynamo.graph_break()
    return torch.tanh(a) + y


def test_torch_compile_reports_every_graph_and_counts_kernels():
    import torch._dynamo

    torch._dynamo.reset()
    args = (torch.randn(4, 3), torch.randn(3))
    report = fusec.explain(two_graphs, *args, backend="torch.compile")
    assert len(report.graphs) == 2
    assert [len(g.groups) for g in report.graphs] == [1, 1]
    assert report.kernels == 2
    assert all(g.unfused == [] for g in report.graphs)

    torch._dynamo.reset()
    model = torch.compile(two_graphs, backend="fusec")
    torch.testing.assert_close(model(*args), two_graphs(*args))
    graphs = fusec.dynamo_graphs()[-2:]
    assert [g.launches_per_call for g in graphs] == [1, 1]
    assert len(fusec.explain(graphs).groups) == 2


def test_torch_compile_report_of_a_module_with_parameters_shows_its_aot_graphs():
    # Parameters that require grad send Dynamo's graph through AOTAutograd:
    # the report holds the forward graph fusec compiled there (it raised before).
    import torch._dynamo

    torch._dynamo.reset()
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU(), torch.nn.LayerNorm(4))
    report = fusec.explain(model, torch.randn(3, 4), backend="torch.compile")
    assert len(report.graphs) == 1
    assert report.kernels >= 1


def test_logs_name_groups_reasons_kernels_and_recompiles(capsys):
    fusec.set_logs(fusion=True, kernels=True, recompiles=True, cache=True, guards=True)
    try:
        f = fusec.compile(barriers)
        args = (torch.randn(4, 4), torch.randn(4, 4))
        torch.testing.assert_close(f(*args), barriers(*args))
        f(args[0].double(), args[1].double())
    finally:
        fusec.set_logs()
    err = capsys.readouterr().err
    assert f"[fusec.fusion] aten.matmul %matmul ({line_of(barriers, 'a @ w')})" in err
    assert "not fused: barrier: matrix product" in err
    assert "[fusec.fusion] group_0 fuses 3 op(s)" in err
    assert "[fusec.kernels] group_0 (key " in err and "kernel compiled for cpu" in err
    assert "[fusec.cache] kernel lookup: compiled" in err
    assert "[fusec.recompiles] barriers: compiled specialization #2" in err
    assert "input 0 dtype float64 (was float32)" in err
    # Off again: nothing more is printed.
    fusec.compile(barriers)(*args)
    assert "[fusec." not in capsys.readouterr().err


def test_guard_log_and_unknown_channels(capsys):
    fusec.set_logs("guards")
    try:
        f = fusec.compile(scale, max_specializations=1)
        f(torch.randn(4, 3), torch.randn(3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            f(torch.randn(4, 1), torch.randn(3))
    finally:
        fusec.set_logs()
    err = capsys.readouterr().err
    where = line_of(scale, "return torch.sigmoid(x) * y")
    assert f"[fusec.guards] guard of group_0 [sigmoid,mul] ({where}) failed: input #" in err
    assert "has shape (4, 1), expected size-1 pattern nxn; its ops run unfused" in err
    with pytest.raises(ValueError, match="unknown fusec log channel"):
        fusec.set_logs(fusoin=True)


def test_fusec_logs_environment_variable(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(
        "import torch, fusec\n"
        "def f(x, w):\n"
        "    return torch.relu(x @ w) * 2\n"
        "f2 = fusec.compile(f)\n"
        "x, w = torch.randn(3, 3), torch.randn(3, 3)\n"
        "torch.testing.assert_close(f2(x, w), f(x, w))\n"
    )
    env = {**os.environ, "FUSEC_LOGS": "fusion,kernels"}
    out = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert "[fusec.fusion] aten.matmul %matmul (model.py:3) not fused: barrier" in out.stderr
    assert "[fusec.kernels] graph f launches 1 kernel(s) per call" in out.stderr


def test_help_of_compile_lists_every_option():
    doc = fusec.compile.__doc__
    assert doc is not None
    for f in dataclasses.fields(CompileOptions):
        assert f"{f.name}:" in doc, f.name


def test_fusec_opt_help_describes_fusec_passes():
    from fusec.passes import FUSEC_PASSES

    out = subprocess.run(
        ["fusec-opt", "--help"], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "fusec passes" in out and "--view-fusion-graph" in out
    for name in FUSEC_PASSES:
        assert f"\n  {name}\n" in out, name
    assert (
        "options: arg-limit=128 max-group-ops=512 horizontal=false\n"
        "        sibling-reductions=true singleton-groups=false"
    ) in out
