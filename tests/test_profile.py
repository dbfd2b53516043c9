"""`fusec.explain(..., profile=True)`: a row per fused kernel and per op run
through PyTorch, and the rows plus the host time between them add up to an
ordinary call timed apart (no assertion on absolute speed)."""

from __future__ import annotations

import statistics
import time

import fusec
import pytest
import torch
from gpt2_block import Block
from test_explain import readme_cell


def ordinary_call_seconds(fn, *args, runs: int = 20) -> float:
    """The mean of the fastest half of `runs` calls: the profile's own rule,
    measured here with nothing of the profile's code."""
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.fmean(sorted(times)[: runs // 2])


TOLERANCE = 0.5


def test_gpt2_profile_lists_every_kernel_and_torch_op_and_adds_up_to_the_call():
    torch.manual_seed(0)
    model = Block().eval()
    x = torch.randn(2, 16, 32)
    compiled = fusec.compile(model, program_cache=False)
    # One intra-op thread: on a loaded machine, PyTorch's thread pool waits on
    # cores it does not get, which swamps both measurements alike.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        profile_and_compare(model, compiled, x)
    finally:
        torch.set_num_threads(threads)


def profile_and_compare(model, compiled, x):
    """The profile of `compiled` on `x` against ordinary calls timed here."""
    with torch.no_grad():
        ratios = []
        # A loaded machine can stall either measurement: three tries, one must agree.
        # The bound is loose on purpose (timings on a shared machine are noisy; the
        # 10% goal is measured by benchmarks/profile_accuracy.py): a breakdown that
        # drops a step or counts one twice still falls outside it.
        for _ in range(3):
            report = fusec.explain(compiled, x, profile=True)
            (graph,) = report.graphs
            prof = graph.profile
            assert prof is not None and report.profiles == [prof]
            call = ordinary_call_seconds(compiled, x)
            ratios.append(prof.total / call)
            if abs(ratios[-1] - 1) < TOLERANCE:
                break
        assert abs(ratios[-1] - 1) < TOLERANCE, ratios
        torch.testing.assert_close(compiled(x), model(x))
    ids = [r.id for r in prof.rows]
    # An unfused view made from its root's sizes and strides by a later view step
    # has no step of its own, and no time.
    (spec,) = compiled.specializations.values()
    stepped = {s.at for s in spec.program.steps}
    ran = [o.id for o in graph.unfused if o.at in stepped]
    folded = [o for o in graph.unfused if o.at not in stepped]
    assert all(
        o.name in ("aten.view", "aten.reshape", "aten.split", "aten.transpose") for o in folded
    )
    assert sorted(ids) == sorted([g.name for g in graph.groups] + ran)
    kinds = {r.id: r.kind for r in prof.rows}
    assert all(kinds[g.name] == "kernel" for g in graph.groups)
    assert {kinds[o] for o in ran} == {"PyTorch"}
    assert all(r.seconds > 0 for r in prof.rows)
    assert [r.seconds for r in prof.rows] == sorted((r.seconds for r in prof.rows), reverse=True)
    # Rows and host time are the instrumented call, share by share.
    assert sum(r.seconds for r in prof.rows) + prof.host == pytest.approx(prof.total, rel=1e-9)
    assert sum(r.share for r in prof.rows) <= 1 + 1e-9
    assert prof.kernel_seconds > 0 and prof.torch_seconds > 0
    text = str(report)
    assert "profile (mean of the" in text and "aten.matmul %matmul" in text
    assert "an ordinary call" in text


def test_profile_of_a_guarded_group_through_explain():
    args = (torch.randn(8, 64), torch.randn(8, 16))
    report = fusec.explain(readme_cell, *args, profile=True, runs=4)
    (graph,) = report.graphs
    (row,) = graph.profile.rows
    assert row.id == "group_0" and row.kind == "kernel" and row.seconds > 0
    assert graph.profile.runs == 4 and graph.profile.kept == 2
    assert "group_0" in str(report) and "between steps" in str(report)


def test_profile_step_loop_returns_the_programs_results():
    from fusec.runtime.step_timing import timed_run

    f = fusec.compile(readme_cell, program_cache=False)
    args = (torch.randn(8, 64), torch.randn(8, 16))
    f(*args)
    run = timed_run(f.last.program, list(args))
    assert len(run.steps) == len(f.last.program.steps)
    for got, want in zip(run.results, readme_cell(*args), strict=True):
        torch.testing.assert_close(got, want)


def test_profile_with_torch_compile_backend_is_a_clear_error():
    with pytest.raises(ValueError, match="backend='fusec'"):
        fusec.explain(
            readme_cell,
            torch.randn(8, 64),
            torch.randn(8, 16),
            backend="torch.compile",
            profile=True,
        )


def test_profile_of_a_graph_that_runs_eagerly_says_why_in_the_report():
    def complex_double(z):
        return z * 2  # complex: fusec leaves the graph to PyTorch

    with pytest.warns(UserWarning, match="running eagerly"):
        report = fusec.explain(complex_double, torch.ones(3, dtype=torch.complex64), profile=True)
    (graph,) = report.graphs
    assert graph.profile is None and report.profiles == []
    assert "not profiled: the call ran no host program" in str(report)
    assert "complex" in graph.unprofiled
    assert "Not profiled: the call ran no host program" in report.to_html()


def test_profile_of_a_captured_function_says_how_to_profile_it():
    def branchy(x):
        if x.sum() > 0:  # torch.fx cannot trace it: Dynamo captures it
            return torch.sigmoid(x) * 2
        return x

    report = fusec.explain(branchy, torch.ones(3), profile=True)
    assert report.kernels >= 1 and report.profiles == []
    assert all("torch.profiler" in g.unprofiled for g in report.graphs)
