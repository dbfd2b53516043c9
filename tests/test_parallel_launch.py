"""The CPU executor's work split and its two launchers (`fusec.runtime.cpu`,
`fusec.runtime.parallel_launch`): the native launch on ATen's OpenMP threads and
the Python thread-pool fallback. Every split kernel is checked against eager
PyTorch and against its own unsplit (single-thread) call; the split itself is
checked to cover the index space exactly once, whatever dim it narrows."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import fusec
import pytest
import torch
from fusec.codegen.kernel import build_kernel
from fusec.runtime import cpu, parallel_launch

from tests.test_codegen import lstm_body, lstm_eager, make_group

# ------------------------------------------------------------------ the split as data


def _covered(sizes, strides, item, chunks):
    """Each index-space point the chunks run, counted: (bounds, shifts) read back
    into [lo, hi) ranges per dim, as the kernel would loop over them."""
    rank = len(sizes)
    ptr_slots = [10 * (k + 1) for k in range(len(strides))]
    counts: dict[tuple[int, ...], int] = {}
    for bounds, shifts in chunks:
        ranges = [range(n) for n in sizes]
        b = dict(bounds)
        if 0 in b:
            ranges[0] = range(b[0], b[1])
        for slot, size in bounds:
            if slot >= 2:
                d = slot - 2
                shift = dict(shifts)
                # Every tensor with a nonzero stride there moves by lo x stride x item.
                los = {
                    shift.get(p, 0) // (s[d] * it)
                    for p, s, it in zip(ptr_slots, strides, item, strict=True)
                    if s[d]
                }
                assert len(los) == 1
                lo = los.pop()
                ranges[d] = range(lo, lo + size)
        for point in itertools.product(*ranges):
            counts[point] = counts.get(point, 0) + 1
    assert len(counts) == len(list(itertools.product(*[range(n) for n in sizes])))
    assert set(counts.values()) == {1}, "a point runs twice"
    return rank


@pytest.mark.parametrize(
    "sizes", [[1, 257], [2, 100], [3, 100], [257], [5, 7, 33], [1, 1, 1000], [2, 3], [64, 2]]
)
@pytest.mark.parametrize("want", [2, 3, 4, 7])
def test_split_covers_the_space_once_whatever_dim_zero_is(sizes, want):
    strides = [[*[0] * (len(sizes) - 1), 1], [1] * len(sizes)]
    item = [4, 8]
    chunks = cpu._split(sizes, strides, item, [10, 20], want)
    assert 1 < len(chunks) <= want
    _covered(sizes, strides, item, chunks)


def test_split_picks_a_dim_that_divides_evenly():
    # [2, N] over 2 threads: a chunk per row; over 4: the long dim.
    assert cpu._split([2, 4096], [[4096, 1]], [4], [10], 2)[1] == (((0, 1), (1, 2)), ())
    bounds, _ = cpu._split([2, 4096], [[4096, 1]], [4], [10], 4)[1]
    assert bounds == ((3, 1024),)
    # [3, N] over 2 threads would split 2 : 1 along dim 0.
    bounds, shifts = cpu._split([3, 4096], [[8192, 1]], [4], [10], 2)[1]
    assert bounds == ((3, 2048),) and shifts == ((10, 2048 * 4),)


def test_an_innermost_split_keeps_whole_vectors():
    chunks = cpu._split([1, 1000], [[0, 1]], [4], [10], 3)
    starts = [dict(shifts)[10] // 4 for _, shifts in chunks[1:]]
    assert all(s % 16 == 0 for s in starts)
    _covered([1, 1000], [[0, 1]], [4], chunks)


def test_range_split_of_a_reduction():
    assert cpu._split_range(5, 1) == cpu._ONE_CHUNK
    chunks = cpu._split_range(5, 3)
    assert [(b[0][1], b[1][1]) for b, _ in chunks] == [(0, 1), (1, 3), (3, 5)]
    assert len(cpu._split_range(2, 8)) == 2


def test_chunk_table_turns_bounds_and_shifts_into_additions():
    template = [0, 64, 64, 0, 1, 0, 1]
    chunks = ((((0, 0), (1, 32)), ()), (((0, 32), (1, 64)), ()))
    table = list(parallel_launch.chunk_table(template, chunks, 8))
    assert table == [2, 2, 2, 0, 1, 0, -32, 32, 0]  # a team of 8 for 2 chunks asks for 2
    template = [0, 1, 1, 0, 64, 0, 0, 0, 0, 0]  # slot 4: the size split; 3, 7: pointers
    chunks = ((((4, 40),), ((3, 0), (7, 0))), (((4, 24),), ((3, 160), (7, 320))))
    table = list(parallel_launch.chunk_table(template, chunks, 1))
    assert table == [2, 1, 3, 3, 4, 7, 0, 40 - 64, 0, 160, 24 - 64, 320]


# ------------------------------------------------------------------ the work model


def _kernel(inputs, body):
    return cpu.CpuKernel(build_kernel(make_group(inputs, body)))


def test_cost_weighs_transcendentals_over_arithmetic():
    x, y = torch.randn(8), torch.randn(8)
    add = _kernel([x, y], lambda b, p, q: b.AddOp(p, q)).signature.cost
    exp = _kernel([x, y], lambda b, p, q: b.AddOp(b.ExpOp(p), q)).signature.cost
    chain = _kernel([x, y], lambda b, p, q: b.AddOp(b.TanhOp(b.ErfOp(b.SinOp(p))), q))
    assert 0 < add < exp < chain.signature.cost


def test_cost_prices_f64_above_f32():
    """Half the lanes per vector, and a longer erf (table loads, more terms): a
    2^16 f64 erf kernel once priced as its f32 twin ran on one thread at 2.4x
    eager's time."""
    x, y = torch.randn(8), torch.randn(8)
    xd, yd = x.double(), y.double()

    def cost(a, b, body):
        return _kernel([a, b], body).signature.cost

    def add(b, p, q):
        return b.AddOp(p, q)

    def erf(b, p, q):
        return b.AddOp(b.ErfOp(p), q)

    assert cost(xd, yd, add) > 1.6 * cost(x, y, add)  # index math stays integer
    assert cost(xd, yd, erf) > 3 * cost(x, y, erf)
    n, launch = 1 << 16, cpu.NATIVE_LAUNCH_NS
    assert cpu._chunk_count(n, cost(xd, yd, erf), launch) > 1


def test_chunk_count_follows_work_not_elements(monkeypatch):
    monkeypatch.setattr(cpu, "num_threads", lambda: 4)
    launch = cpu.NATIVE_LAUNCH_NS
    assert cpu._chunk_count(1 << 10, 0.2, launch) == 1
    assert cpu._chunk_count(1 << 24, 0.2, launch) == 4
    # The same elements: cheap work stays on one thread, expensive work splits.
    n = 1 << 15
    assert cpu._chunk_count(n, 0.2, launch) == 1
    assert cpu._chunk_count(n, 2.0, launch) == 4
    # The thread pool's dearer launch needs more work per chunk.
    assert cpu._chunk_count(n, 2.0, cpu.POOL_LAUNCH_NS) == 1


# ------------------------------------------------------------------ split kernels vs eager


@pytest.fixture(params=["native", "pool"])
def split_everything(request, monkeypatch):
    """Kernels made from here on split every call over 3 threads (a launch priced
    at next to nothing), on the native launcher or on the thread pool."""
    if request.param == "pool":
        monkeypatch.setattr(parallel_launch, "available", lambda: False)
    elif parallel_launch.launcher() is None:
        pytest.skip("no OpenMP runtime in this process")
    monkeypatch.setattr(cpu, "num_threads", lambda: 3)
    monkeypatch.setattr(cpu, "NATIVE_LAUNCH_NS", 1e-3)
    monkeypatch.setattr(cpu, "POOL_LAUNCH_NS", 1e-3)
    monkeypatch.setattr(cpu, "_loaded", {})  # no kernel made under other settings
    return request.param


def _threads(plan):
    """The threads a split plan asks for (the native table's team, else a
    thread per chunk)."""
    return len(plan.chunks) if isinstance(plan.launch, tuple) else plan.launch[1]


def _split_matches(kernel, inputs, want):
    """kernel(inputs) split over threads == its single-thread call == eager."""
    got = kernel(inputs)
    plans = [p for p in kernel._plans.values() if not p.empty]
    assert plans and all(len(p.chunks) > 1 and _threads(p) > 1 for p in plans)
    single = kernel._call_unplanned(inputs)
    for g, s, w in zip(got, single, want, strict=True):
        assert torch.equal(g, s)
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("n", [3, 7, 1001, 65537])
def test_odd_sizes_not_divisible_by_the_threads(split_everything, n):
    x, y = torch.randn(n), torch.randn(n)
    kernel = _kernel([x, y], lambda b, p, q: b.MulOp(b.TanhOp(p), q))
    _split_matches(kernel, [x, y], [x.tanh() * y])
    (plan,) = kernel._plans.values()
    assert _threads(plan) == min(3, n)
    if split_everything == "native":  # chunks per thread, claimed as threads come
        assert not isinstance(plan.launch, tuple)
        assert len(plan.chunks) == min(3 * cpu.CHUNKS_PER_THREAD, n)


@pytest.mark.parametrize(
    "make",
    [
        lambda: (torch.randn(1, 3, 500)[:, :, :333], torch.randn(333)),  # [1, 3, N] slice
        lambda: (torch.randn(2, 2000)[:, :1500], torch.randn(2, 1500)),  # [2, N], no merge
        lambda: (torch.randn(1, 4099), torch.randn(1, 4099)),  # [1, N]
        lambda: (torch.randn(300, 70).t(), torch.randn(70, 300)),  # transposed
        lambda: (torch.randn(40, 1), torch.randn(40, 77)),  # [R, 1] broadcast
        lambda: (torch.randn(33, 129), torch.randn(129)),  # bias
        lambda: (torch.randn(7, 9, 11).permute(2, 0, 1), torch.randn(11, 1, 1)),
    ],
    ids=["deep-slice", "rows-2", "dim0-1", "transposed", "column", "bias", "permuted"],
)
def test_layouts(split_everything, make):
    x, y = make()
    kernel = _kernel([x, y], lambda b, p, q: b.AddOp(b.SigmoidOp(p), b.MulOp(p, q)))
    _split_matches(kernel, [x, y], [x.sigmoid() + x * y])


@pytest.mark.parametrize("rows, hidden", [(37, 53), (1, 301), (2, 1000)])
def test_chunked_operands_lstm_tail(split_everything, rows, hidden):
    gates, cx = torch.randn(rows, 4 * hidden), torch.randn(rows, hidden)
    kernel = cpu.CpuKernel(build_kernel(make_group([gates, cx], lstm_body)))
    _split_matches(kernel, [gates, cx], lstm_eager(gates, cx))


def test_compiled_lstm_tail(split_everything):
    def tail(gates, cx):
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(cy), cy

    gates, cx = torch.randn(37, 4 * 53), torch.randn(37, 53)
    f = fusec.compile(tail)
    for got, want in zip(f(gates, cx), tail(gates, cx), strict=True):
        torch.testing.assert_close(got, want)
    assert f.launches_per_call == 1
    (kernel,) = cpu._loaded.values()
    assert all(_threads(p) == 3 for p in kernel._plans.values())


def test_scalar_arguments_reach_every_chunk(split_everything):
    def fn(x, s):
        return torch.tanh(x * s) + s

    x = torch.randn(3, 1001)
    f = fusec.compile(fn)
    for s in (0.5, 2.0):
        torch.testing.assert_close(f(x, s), fn(x, s))
    (kernel,) = cpu._loaded.values()
    assert all(_threads(p) == 3 for p in kernel._plans.values())


def test_concat_exit_written_in_chunks(split_everything):
    def fn(x, y):
        a = torch.sigmoid(x) * y
        return torch.cat([a, torch.tanh(a) + x], 1)

    x, y = torch.randn(29, 301), torch.randn(29, 301)
    f = fusec.compile(fn)
    torch.testing.assert_close(f(x, y), fn(x, y))
    assert f.launches_per_call == 1
    (kernel,) = cpu._loaded.values()
    assert kernel.signature.exits
    assert all(_threads(p) == 3 for p in kernel._plans.values())


def test_integer_division_by_zero_under_the_split(split_everything):
    def fn(a, b):
        return (a * 2) // b

    a = torch.arange(-500, 501)
    b = torch.arange(1, 1002) % 7 + 1
    f = fusec.compile(fn)
    assert torch.equal(f(a, b), fn(a, b))
    (kernel,) = cpu._loaded.values()
    (plan,) = kernel._plans.values()
    assert _threads(plan) == 3
    for where in (0, 500, 1000):  # in the first, middle and last chunk
        z = b.clone()
        z[where] = 0
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            fn(a, z)
        with pytest.raises(RuntimeError, match="ZeroDivisionError"):
            f(a, z)
    assert torch.equal(f(a, b), fn(a, b))  # the flag is fresh per call


def test_reduction_rows_split(split_everything):
    def fn(x):
        return (x * x).sum(1) + x.amax(1)

    x = torch.randn(37, 50)
    f = fusec.compile(fn)
    torch.testing.assert_close(f(x), fn(x))
    (kernel,) = cpu._loaded.values()
    (plan,) = kernel._plans.values()
    assert _threads(plan) == 3 and all(shifts == () for _, shifts in plan.chunks)


def test_empty_and_one_element_calls(split_everything):
    for t in (torch.randn(0, 5), torch.randn(1), torch.randn(1, 1)):
        kernel = _kernel([t], lambda b, p: b.ExpOp(b.NegOp(p)))
        (got,) = kernel([t])
        torch.testing.assert_close(got, (-t).exp())


# ------------------------------------------------------------------ finding the launcher


def test_native_launcher_where_torch_runs_on_openmp():
    if "OpenMP" not in torch.__config__.parallel_info():
        pytest.skip("this PyTorch does not use OpenMP")
    lib = parallel_launch.find_openmp()
    assert lib is not None and hasattr(lib, "GOMP_parallel")
    assert parallel_launch.launcher() is not None
    kernel = _kernel([torch.randn(4)], lambda b, p: b.NegOp(p))
    assert kernel._native and kernel._launch_ns == cpu.NATIVE_LAUNCH_NS


def test_env_var_forces_the_thread_pool(monkeypatch):
    monkeypatch.setenv("FUSEC_NATIVE_PARALLEL", "0")
    parallel_launch.available.cache_clear()
    parallel_launch.launcher.cache_clear()
    try:
        assert not parallel_launch.available()
        assert parallel_launch.launcher() is None
        kernel = _kernel([torch.randn(4)], lambda b, p: b.NegOp(p))
        assert not kernel._native and kernel._launch_ns == cpu.POOL_LAUNCH_NS
    finally:
        monkeypatch.delenv("FUSEC_NATIVE_PARALLEL")
        parallel_launch.available.cache_clear()
        parallel_launch.launcher.cache_clear()


def test_the_launcher_is_built_on_the_first_split_call(monkeypatch):
    """Loading kernels and calls that run on one thread leave the launcher
    unbuilt (compiling it is ~15 ms of a cold process); the first split call
    builds it, and kernels loaded later reuse it."""
    if not parallel_launch.available():
        pytest.skip("no OpenMP runtime in this process")
    monkeypatch.setattr(cpu, "_loaded", {})
    monkeypatch.setattr(cpu, "num_threads", lambda: 3)
    monkeypatch.setattr(cpu, "NATIVE_LAUNCH_NS", 1e-3)
    parallel_launch.launcher.cache_clear()
    one = torch.randn(1)  # one element: nothing to split
    kernel = _kernel([one], lambda b, p: b.NegOp(b.ExpOp(p)))
    (got,) = kernel([one])
    torch.testing.assert_close(got, -one.exp())
    assert parallel_launch.launcher.cache_info().currsize == 0
    assert kernel._native and kernel._run_chunks is None
    for n in (3001, 5003):
        x = torch.randn(n)
        kernel = _kernel([x], lambda b, p: b.NegOp(b.ExpOp(p)))
        (got,) = kernel([x])
        torch.testing.assert_close(got, -x.exp())
        assert kernel._run_chunks is not None
        assert parallel_launch.launcher.cache_info().currsize == 1


def test_a_refused_launcher_leaves_split_calls_to_the_thread_pool(monkeypatch):
    """`launcher()` is None although an OpenMP runtime was found (LLVM refused
    the trampoline): the first split call falls back to the Python thread pool
    for good, with the same results."""
    monkeypatch.setattr(parallel_launch, "available", lambda: True)
    monkeypatch.setattr(parallel_launch, "launcher", lambda: None)
    monkeypatch.setattr(cpu, "_loaded", {})
    monkeypatch.setattr(cpu, "num_threads", lambda: 3)
    monkeypatch.setattr(cpu, "NATIVE_LAUNCH_NS", 1e-3)
    monkeypatch.setattr(cpu, "POOL_LAUNCH_NS", 1e-3)
    x = torch.randn(3001)
    kernel = _kernel([x], lambda b, p: b.NegOp(b.ExpOp(p)))
    assert kernel._native
    for _ in range(2):
        (got,) = kernel([x])
        torch.testing.assert_close(got, -x.exp())
    assert not kernel._native and kernel._run_chunks is None
    assert kernel._launch_ns == cpu.POOL_LAUNCH_NS
    (plan,) = kernel._plans.values()
    assert isinstance(plan.launch, tuple) and len(plan.launch) > 1


_SMALL_TEAM = textwrap.dedent(
    """
    import torch
    from fusec.runtime import cpu, parallel_launch
    assert parallel_launch.launcher() is not None
    cpu.num_threads = lambda: 4
    cpu.NATIVE_LAUNCH_NS = 1e-3
    from fusec.codegen.kernel import build_kernel
    from tests.test_codegen import lstm_body, lstm_eager, make_group
    x = torch.randn(3001)
    kernel = cpu.CpuKernel(build_kernel(make_group([x], lambda b, p: b.TanhOp(p))))
    (got,) = kernel([x])
    (plan,) = kernel._plans.values()
    assert len(plan.chunks) == 4 * cpu.CHUNKS_PER_THREAD
    torch.testing.assert_close(got, x.tanh())
    print("ok")
    """
)


def test_a_team_smaller_than_the_chunks_runs_every_chunk(tmp_path):
    """OMP_THREAD_LIMIT=1 gives `GOMP_parallel` a team of one where four threads
    were asked for: that thread claims and runs every chunk."""
    if parallel_launch.launcher() is None:
        pytest.skip("no OpenMP runtime in this process")
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "OMP_THREAD_LIMIT": "1", "FUSEC_CACHE_DIR": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")])
    out = subprocess.run(
        [sys.executable, "-c", _SMALL_TEAM],
        env=env,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")
