"""What `torch.compile(backend="fusec")` hands Dynamo (`fusec.api.backend`): for a
graph of static shapes, whose calls Dynamo's guards hold to one specialization,
`gm.forward` where fusec made no kernels and the program run without fusec's
checks where it did; for symbolic sizes, the `CompiledFunction` with its checks.
Every result is compared with eager."""

from __future__ import annotations

import fusec
import pytest
import torch
from fusec.api.backend import compile_graph
from fusec.api.compiled import CompiledFunction


class Recorder:
    """A Dynamo backend keeping what fusec handed back and what reports on it."""

    def __init__(self) -> None:
        self.calls: list[object] = []
        self.graphs: list[CompiledFunction | None] = []
        """None for a graph AOTAutograd compiles (autograd records it)."""
        self.modules: list[torch.fx.GraphModule] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[object]) -> object:
        call, fn = compile_graph(gm, example_inputs, {})
        self.calls.append(call)
        self.graphs.append(fn)
        self.modules.append(gm)
        return call


def add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a + b


def tail(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * y + torch.tanh(y)


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_a_graph_without_kernels_is_handed_back_as_its_forward():
    rec = Recorder()
    f = torch.compile(add, backend=rec, dynamic=False)
    a, b = torch.randn(8, 1), torch.randn(1, 8)
    for _ in range(3):
        torch.testing.assert_close(f(a, b), add(a, b))
    (call,), (fn,), (gm,) = rec.calls, rec.graphs, rec.modules
    assert call == gm.forward
    # What users see still counts 0 kernels and says why.
    assert fn.launches_per_call == 0 and fn.last is not None
    report = str(fusec.explain([fn]))
    assert "0 kernel launch(es) per call" in report and "aten.add" in report
    assert fn in fusec.dynamo_graphs()


def test_the_registered_backend_matches_eager_without_kernels():
    f = torch.compile(add, backend="fusec", dynamic=False)
    a, b = torch.randn(8, 1), torch.randn(1, 8)
    for _ in range(2):
        torch.testing.assert_close(f(a, b), add(a, b))
    assert fusec.dynamo_graphs()[-1].launches_per_call == 0


def test_a_graph_with_kernels_runs_its_program_without_checks():
    rec = Recorder()
    f = torch.compile(tail, backend=rec, dynamic=False)
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    for _ in range(3):
        torch.testing.assert_close(f(x, y), tail(x, y))
    (call,), (fn,) = rec.calls, rec.graphs
    assert call is not fn and not isinstance(call, CompiledFunction)
    assert fn.launches_per_call == 1
    assert len(fn.specializations) == 1


_CHANGES = {
    "dtype": lambda x, y: (x.double(), y.double()),
    "a size-1 dim": lambda x, y: (x, y[:1]),
    "contiguity": lambda x, y: (x, y.t().contiguous().t()),
    "sizes": lambda x, y: (torch.randn(5, 8), torch.randn(5, 8)),
    "requires_grad": lambda x, y: (x, y.clone().requires_grad_()),
}


@pytest.mark.parametrize("change", list(_CHANGES))
def test_what_would_change_the_key_recompiles_and_matches_eager(change):
    rec = Recorder()
    f = torch.compile(tail, backend=rec, dynamic=False)
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    torch.testing.assert_close(f(x, y), tail(x, y))
    new = _CHANGES[change](x, y)
    got = f(*new)
    torch.testing.assert_close(got, tail(*new))
    if change == "requires_grad":
        (g,) = torch.autograd.grad(got.sum(), new[1])
        (want,) = torch.autograd.grad(tail(*new).sum(), new[1])
        torch.testing.assert_close(g, want)
    else:  # Dynamo's guards failed: a second graph, specialized for the new inputs
        assert len(rec.graphs) == 2
        assert rec.graphs[1].launches_per_call == 1
    torch.testing.assert_close(f(x, y), tail(x, y))  # the first graph still serves these


def test_symbolic_sizes_keep_fusec_checks():
    rec = Recorder()
    f = torch.compile(tail, backend=rec, dynamic=True)
    for n in (6, 9, 17, 3):  # not 8: Dynamo would give n and 8 one symbol (duck sizing)
        x, y = torch.randn(n, 8), torch.randn(n, 8)
        torch.testing.assert_close(f(x, y), tail(x, y))
    (call,), (fn,) = rec.calls, rec.graphs
    assert call is fn  # sizes vary: fusec's own checks run per call
    assert fn.launches_per_call == 1 and len(fn.specializations) == 1
    x, y = torch.randn(4, 8), torch.randn(1, 8)  # a size-1 dim: Dynamo or fusec decides
    torch.testing.assert_close(f(x, y), tail(x, y))


def test_automatic_dynamic_shapes_after_a_recompile():
    rec = Recorder()
    f = torch.compile(tail, backend=rec)  # dynamic=None: dynamic after a size change
    for n in (8, 9, 10):
        x, y = torch.randn(n, 8), torch.randn(n, 8)
        torch.testing.assert_close(f(x, y), tail(x, y))
    assert not isinstance(rec.calls[0], CompiledFunction)  # static at first
    assert rec.calls[-1] is rec.graphs[-1]  # the dynamic graph keeps its checks
    assert rec.graphs[-1].launches_per_call == 1


def test_a_program_that_fails_without_checks_runs_eagerly_from_then_on():
    rec = Recorder()
    f = torch.compile(tail, backend=rec, dynamic=False)
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    torch.testing.assert_close(f(x, y), tail(x, y))
    (call,), (fn,) = rec.calls, rec.graphs

    def broken(inputs: object) -> list[torch.Tensor]:
        raise RuntimeError("kernel failed")

    call.__globals__["run"] = broken  # the generated run's program fails
    torch.testing.assert_close(f(x, y), tail(x, y))  # eager decides
    assert call.__globals__["BROKEN"]
    torch.testing.assert_close(f(x, y), tail(x, y))  # the full path: eager now
    assert fn.launches_per_call == 0


class Scale(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x * self.w) + 1


def test_a_module_under_no_grad_and_with_grad():
    m = Scale()
    f = torch.compile(m, backend="fusec", dynamic=False)
    x = torch.randn(4, 8)
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(f(x), m(x))
    y = f(x)  # grad mode: Dynamo's guard fails, the training path compiles
    torch.testing.assert_close(y, m(x))
    y.sum().backward()
    want = torch.autograd.grad(m(x).sum(), m.w)[0]
    torch.testing.assert_close(m.w.grad, want)


def test_symbolic_sizes_check_only_what_varies_with_sizes():
    """Dynamo guards dtypes, devices, requires_grad and grad mode; the fast path
    of a graph with symbolic sizes checks rank, size-1 dims, contiguity and how
    a chunk cuts, and each change it sees takes the full path."""

    def lstm_tail(gates: torch.Tensor, cx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(cy), cy

    rec = Recorder()
    f = torch.compile(lstm_tail, backend=rec, dynamic=True)
    args = (torch.randn(6, 32), torch.randn(6, 8))
    for _ in range(2):
        torch.testing.assert_close(f(*args), lstm_tail(*args))
    fn = rec.graphs[-1]
    assert fn is not None and fn.guarded_by_dynamo and fn.launches_per_call == 1
    source = fn._fast.__globals__
    assert "SEEN" in source and source["SEEN"] is None  # no C++ check: sizes vary
    full: list[int] = []
    full_path = fn._call

    def counted(*a: object) -> object:
        full.append(1)
        return full_path(*a)

    fn._call = counted  # type: ignore[method-assign]
    for b, w in ((9, 32), (3, 48)):  # other sizes, chunks that cut alike: the fast path
        new = (torch.randn(b, w), torch.randn(b, w // 4))
        torch.testing.assert_close(f(*new), lstm_tail(*new))
    assert full == []
    # Strides and how a chunk cuts: Dynamo's guards or fusec's key decide (here
    # Dynamo recompiles); either way the result is eager's.
    for new in (
        (torch.randn(32, 6).t(), torch.randn(6, 8)),  # not contiguous
        (torch.randn(6, 4), torch.randn(6, 1)),  # pieces of size 1: they broadcast
    ):
        torch.testing.assert_close(f(*new), lstm_tail(*new))


TRANSFORMS = {
    "vmap": (lambda x, y: torch.vmap(lambda a, b: (a.sigmoid() * b + a).tanh())(x, y)),
    "grad": (lambda x, y: torch.func.grad(lambda a: (a.sin() * a * y).sum())(x)),
    "jvp": (lambda x, y: torch.func.jvp(lambda a: a.sin() * a, (x,), (y,))),
}


@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_functorch_transforms_go_through_aot_autograd(name: str) -> None:
    """Inside a transform, the graph's tensors are wrapped (batched, dual or
    grad-tracking): compiled as they are, a kernel met a `BatchedTensorImpl`
    and the call fell back to eager with a warning. AOTAutograd traces through
    the transform to plain ATen ops, which fuse."""
    from fusec.api.backend import runs_transform
    from fusec.api.training import clear_compiled_graphs, compiled_graphs

    fn = TRANSFORMS[name]
    x, y = torch.randn(4, 64), torch.randn(4, 64)
    torch._dynamo.reset()
    clear_compiled_graphs()
    rec = Recorder()
    with torch.no_grad() if name == "vmap" else torch.enable_grad():
        got = torch.compile(fn, backend=rec)(x, y)
    want = fn(x, y)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,), strict=True):
        torch.testing.assert_close(g, w)
    assert rec.modules and all(runs_transform(gm) for gm in rec.modules)
    assert rec.graphs == [None] * len(rec.modules)  # compiled through AOTAutograd
    assert sum(g.launches_per_call for g in compiled_graphs()) >= 1
    assert not runs_transform(torch.fx.symbolic_trace(tail))
