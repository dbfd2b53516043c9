"""`fusec.compile`: specialization, eager fallbacks, the host program, and
`torch.compile(backend="fusec")`; every result is compared with eager PyTorch."""

from __future__ import annotations

import warnings

import fusec
import pytest
import torch
import torch.fx
from fusec.api.captured import CapturedFunction
from fusec.runtime.cache import KernelCache
from kernel_counts import torch_compile_kernels
from reference_models import lstm_tail as tail
from torch import nn


def assert_same(got, want, **tol):
    if isinstance(want, tuple | list):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w, **tol)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            assert_same(got[k], want[k], **tol)
    else:
        assert isinstance(got, torch.Tensor), type(got)
        assert got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got, want, **tol)


def test_lstm_tail_is_one_kernel_and_matches_eager():
    f = fusec.compile(tail)
    args = (torch.randn(8, 64), torch.randn(8, 16))
    assert_same(f(*args), tail(*args))
    assert f.launches_per_call == 1


def test_same_specialization_compiles_once_other_shapes_reuse_it():
    f = fusec.compile(tail)
    f(torch.randn(8, 64), torch.randn(8, 16))
    args = (torch.randn(5, 32), torch.randn(5, 8))
    assert_same(f(*args), tail(*args))
    assert len(f.specializations) == 1


def test_new_dtype_or_broadcast_pattern_compiles_a_new_specialization():
    def fn(x, y):
        return torch.tanh(x) * y

    f = fusec.compile(fn)
    for x, y in [
        (torch.randn(4, 3), torch.randn(4, 3)),
        (torch.randn(4, 3, dtype=torch.float64), torch.randn(4, 3, dtype=torch.float64)),
        (torch.randn(4, 1), torch.randn(1, 3)),
        (torch.randn(3, 4).t(), torch.randn(4, 3)),
    ]:
        assert_same(f(x, y), fn(x, y))
    assert len(f.specializations) == 4


def test_too_many_specializations_run_eagerly_with_a_warning():
    def fn(x):
        return torch.sigmoid(x) + 1

    f = fusec.compile(fn, max_specializations=2)
    f(torch.randn(3))
    f(torch.randn(3, 2))
    with pytest.warns(UserWarning, match="max_specializations=2"):
        f(torch.randn(3, 2, 2))
    assert f.launches_per_call == 0
    x = torch.randn(3, 2, 2)
    assert_same(f(x), fn(x))


def test_module_graph_module_and_example_inputs():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 8)
            self.act = nn.SiLU()

        def forward(self, x):
            return self.act(self.lin(x)) * 0.5

    m = M()
    x = torch.randn(4, 6)
    with torch.no_grad():
        for target in (m, torch.fx.symbolic_trace(m)):
            f = fusec.compile(target, [x])
            assert len(f.specializations) == 1  # example inputs compile up front
            assert_same(f(x), m(x))
        # parameters are read per call: updates are seen
        m.lin.bias.add_(1.0)
        assert_same(f(x), m(x))


def test_autograd_compiles_forward_and_backward():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return torch.sigmoid(self.lin(x))

    m = M()
    f = fusec.compile(m)
    x = torch.randn(2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback (tests/test_training.py has more)
        y = f(x)
        assert y.grad_fn is not None
        y.sum().backward()
    assert [g.kind for g in f.compiled_graphs] == ["forward", "backward"]
    ref = m.lin.weight.detach().requires_grad_()
    torch.sigmoid(torch.nn.functional.linear(x, ref, m.lin.bias.detach())).sum().backward()
    torch.testing.assert_close(m.lin.weight.grad, ref.grad)


def test_untraceable_function_is_captured_by_dynamo():
    def fn(x):
        if x.sum() > 0:  # data-dependent control flow: torch.fx cannot trace it
            return torch.sigmoid(x) + 1
        return torch.sigmoid(x) - 1

    f = fusec.compile(fn)
    assert isinstance(f, CapturedFunction)
    for x in (torch.ones(5), -torch.ones(5)):
        assert_same(f(x), fn(x))
        assert f.launches_per_call == torch_compile_kernels(fn, x) > 0


def test_failed_kernel_build_falls_back_to_torch(caplog):
    def broken(group, target):
        raise RuntimeError("no codegen today")

    cache = KernelCache(directory=None, builder=broken, fingerprint="test")
    f = fusec.compile(tail, cache=cache)
    args = (torch.randn(8, 64), torch.randn(8, 16))
    with caplog.at_level("WARNING", logger="fusec"):
        assert_same(f(*args), tail(*args))
    assert f.launches_per_call == 0
    assert "no codegen today" in caplog.text
    assert cache.stats.build_failures == 1


def test_use_kernels_false_runs_groups_through_torch():
    f = fusec.compile(tail, use_kernels=False)
    args = (torch.randn(8, 64), torch.randn(8, 16))
    assert_same(f(*args), tail(*args))
    assert f.launches_per_call == 0
    assert any(s.kind == "group" for s in f.last.program.all_steps())


def test_host_program_frees_intermediates_and_keeps_outputs():
    def fn(x):
        y = torch.softmax(x, 0)
        z = torch.cumsum(y, 0)
        return torch.softmax(z, 0), y

    f = fusec.compile(fn)
    x = torch.randn(6)
    assert_same(f(x), fn(x))
    program = f.last.program
    freed = {s for step in program.steps for s in step.free}
    assert freed and not freed & set(program.out_slots)


def test_torch_compile_backend():
    calls = []

    def fn(x, y):
        calls.append(1)
        return torch.relu(x * y) - torch.sigmoid(y)

    g = torch.compile(fn, backend="fusec")
    x, y = torch.randn(16, 8), torch.randn(16, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = g(x, y)
    assert not [w for w in caught if "fusec: running eagerly" in str(w.message)]
    torch.testing.assert_close(out, fn(x, y))
    assert fusec.cache_stats()["kernels_compiled"] == 1


def test_constant_arguments_keep_the_positions_of_later_tensors():
    def f(unused, x, y):
        return torch.sigmoid(x) * y

    x, y = torch.randn(4, 3), torch.randn(3)
    fn = fusec.compile(f)
    torch.testing.assert_close(fn(None, x, y), f(None, x, y))
    assert fn.launches_per_call == 1
