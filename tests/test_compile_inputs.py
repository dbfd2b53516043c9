"""Python inputs to `fusec.compile` are handled as eager handles them (issue 15,
points 7-10): defaults and None arguments, nn.Sequential, `a & b`, extra and
keyword arguments, sparse and nested tensors, shape errors, random numbers."""

from __future__ import annotations

import warnings

import fusec
import pytest
import torch
from fusec.api.captured import CapturedFunction
from torch import nn


def optional_bias(x, y=None):
    if y is not None:
        return torch.sigmoid(x + y)
    return torch.sigmoid(x * 2)


@pytest.mark.parametrize(
    "call",
    [
        lambda f, x: f(x),
        lambda f, x: f(x, None),
        lambda f, x: f(x, y=None),
        lambda f, x: f(x, x),
        lambda f, x: f(x, y=x),
        lambda f, x: f(y=x, x=x),
    ],
)
def test_a_branch_on_an_optional_argument_follows_the_call(call):
    f = fusec.compile(optional_bias)
    x = torch.randn(4, 3)
    torch.testing.assert_close(call(f, x), call(optional_bias, x))
    assert f.launches_per_call == 1


def test_each_default_pattern_keeps_its_own_graph():
    f = fusec.compile(optional_bias)
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    for _ in range(2):
        torch.testing.assert_close(f(x, y), optional_bias(x, y))
        torch.testing.assert_close(f(x), optional_bias(x))


def test_the_fallback_runs_the_original_function():
    calls = []

    def counted(x, y=None):
        calls.append(y is None)
        return optional_bias(x, y)

    f = fusec.compile(counted, max_specializations=0)  # every call falls back
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    traced = len(calls)
    with pytest.warns(UserWarning, match="running eagerly"):
        torch.testing.assert_close(f(x, y), optional_bias(x, y))
    assert calls[traced:] == [False]  # the original ran, not the traced graph
    torch.testing.assert_close(f(x), optional_bias(x))
    assert calls[-1] is True  # (after the trace of the y=None variant)


def test_nn_sequential_with_fusable_ops():
    torch.manual_seed(0)
    model = nn.Sequential(nn.ReLU(), nn.Sigmoid(), nn.Tanh()).eval()
    x = torch.randn(8, 16)
    f = fusec.compile(model)
    torch.testing.assert_close(f(x), model(x))
    assert f.launches_per_call == 1
    linear = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 4), nn.Sigmoid()).eval()
    g = fusec.compile(linear)
    with torch.no_grad():
        torch.testing.assert_close(g(x), linear(x))
    assert g.launches_per_call >= 1


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise_operators_are_not_in_place(op):
    def masked(a, b):
        pos = a > 0
        both = {"and": pos & (b > 0), "or": pos | (b > 0), "xor": pos ^ (b > 0)}[op]
        return torch.where(both, torch.sigmoid(a), b) + pos.float()

    a, b = torch.randn(6, 5), torch.randn(6, 5)
    f = fusec.compile(masked)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mutates in place" warning
        got = f(a, b)
    torch.testing.assert_close(got, masked(a, b))
    assert f.launches_per_call == 1


def add2(a, b):
    return torch.sigmoid(a) * 2 + b


def test_extra_positional_arguments_raise_like_eager():
    f = fusec.compile(add2)
    x = torch.randn(3)
    with pytest.raises(TypeError, match="positional"):
        add2(x, x, x)
    with pytest.raises(TypeError, match="positional"):
        f(x, x, x)
    with pytest.raises(TypeError):
        f(x)  # missing one, as eager


def test_keyword_arguments_are_accepted_like_eager():
    f = fusec.compile(add2)
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(f(x, b=y), add2(x, b=y))
    assert f.launches_per_call == 1
    torch.testing.assert_close(f(b=y, a=x), add2(b=y, a=x))
    with pytest.raises(TypeError):
        f(x, c=y)
    with pytest.raises(TypeError):
        f(x, y, a=x)


def add_scaled(a, b):
    return a * 2 + b


@pytest.mark.parametrize("kind", ["sparse_coo", "sparse_csr", "nested"])
def test_sparse_and_nested_tensors_run_eagerly(kind):
    x = torch.randn(4, 3)
    if kind == "nested":
        a = torch.nested.nested_tensor([torch.randn(2), torch.randn(3)])
    elif kind == "sparse_coo":
        a = x.to_sparse()
    else:
        a = x.to_sparse_csr()
    f = fusec.compile(add_scaled)
    got, want = f(a, a), add_scaled(a, a)
    assert f.launches_per_call == 0
    if kind == "nested":
        for g, w in zip(got.unbind(), want.unbind(), strict=True):
            torch.testing.assert_close(g, w)
    else:
        torch.testing.assert_close(got.to_dense(), want.to_dense())
    dense = torch.randn(4, 3)
    torch.testing.assert_close(f(dense, dense), add_scaled(dense, dense))
    assert f.launches_per_call == 1


@pytest.mark.parametrize("first", [True, False])
def test_a_shape_mismatch_raises_pytorchs_error(first):
    f = fusec.compile(add2)
    if not first:
        f(torch.randn(4, 3), torch.randn(4, 3))
    with pytest.raises(RuntimeError, match="must match the size"):
        add2(torch.randn(4, 3), torch.randn(5, 3))
    with pytest.raises(RuntimeError, match="must match the size"):
        f(torch.randn(4, 3), torch.randn(5, 3))
    torch.testing.assert_close(
        f(torch.ones(2, 2), torch.ones(2, 2)), add2(torch.ones(2, 2), torch.ones(2, 2))
    )


def noisy(x):
    return torch.sigmoid(x + torch.rand_like(x)) * torch.randn_like(x).tanh()


@pytest.mark.parametrize("fn", [noisy, nn.Sequential(nn.Dropout(0.5), nn.Sigmoid()).train()])
def test_the_first_call_draws_random_numbers_once(fn):
    x = torch.randn(8, 4)
    f = fusec.compile(fn)
    for _ in range(2):  # the compiling call and a cached one
        torch.manual_seed(123)
        got, after = f(x), torch.rand(3)
        torch.manual_seed(123)
        want, after_eager = fn(x), torch.rand(3)
        torch.testing.assert_close(got, want)
        torch.testing.assert_close(after, after_eager)


def test_a_compiler_failure_runs_the_original_once(monkeypatch):
    import fusec.api.specializing as specializing

    attempts = []

    def broken_pipeline(module, pipeline=None):
        attempts.append(1)
        raise RuntimeError("a fusec bug")

    monkeypatch.setattr(specializing, "run_pipeline", broken_pipeline)

    def bump(x):
        x.add_(1)
        return torch.sigmoid(x) * 2

    x = torch.zeros(3)
    f = fusec.compile(bump)
    with pytest.warns(UserWarning, match="fusec failed to compile"):
        got = f(x)
    torch.testing.assert_close(x, torch.ones(3))  # written once, by the original
    torch.testing.assert_close(got, torch.sigmoid(torch.ones(3)) * 2)
    f(x)
    assert len(attempts) == 1 and f.launches_per_call == 0
    torch.testing.assert_close(x, torch.full((3,), 2.0))


@pytest.mark.parametrize("where", ["root", "submodule", "pre", "global"])
def test_modules_with_hooks_are_captured_and_every_hook_runs(where: str) -> None:
    """A trace runs a submodule's hook once, when tracing, and the module's own
    never, where eager runs each on every call: such a module is captured by
    Dynamo instead, which runs the hooks on every call."""
    model = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 8))
    calls: list[int] = []

    def hook(module: nn.Module, args: object, out: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        return out * 2

    def pre(module: nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        calls.append(1)

    torch._dynamo.reset()  # Dynamo's recompile limit counts per code object (`forward`)
    handle = {
        "root": lambda: model.register_forward_hook(hook),
        "submodule": lambda: model[1].register_forward_hook(hook),
        "pre": lambda: model.register_forward_pre_hook(pre),
        "global": lambda: nn.modules.module.register_module_forward_hook(hook),
    }[where]()
    try:
        x = torch.randn(4, 8)
        want = model(x)
        f = fusec.compile(model)
        assert isinstance(f, CapturedFunction) and "hooks" in f.untraceable_by_fx
        for n in (2, 3):
            torch.testing.assert_close(f(x), want)
            assert len(calls) == n * (4 if where == "global" else 1)
        # Dynamo traces the hooks into the graph: the tanh, and each hook's
        # `* 2` that follows a linear (the tanh's own fuses into the tanh).
        assert f.launches_per_call == {"root": 2, "submodule": 1, "pre": 1, "global": 2}[where]
    finally:
        handle.remove()
    f = fusec.compile(model)  # no hooks: traced and fused
    torch.testing.assert_close(f(x), model(x))
    assert f.launches_per_call >= 1


def _bn_model() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.5))


@pytest.mark.parametrize("kind", ["module", "graph_module", "no_kernels"])
def test_train_and_eval_after_compiling_follow_the_modules_modes(kind: str) -> None:
    """The program bakes in its modules' `training` flags (batch statistics or
    running ones, dropout or not): `model.eval()` after compiling, a frozen
    batch norm, and back to `train()` each get the program of their modes
    (also a program that runs its groups through PyTorch)."""
    import copy

    torch.manual_seed(0)
    eager = _bn_model()
    model = copy.deepcopy(eager)
    if kind == "graph_module":
        model = torch.fx.symbolic_trace(model)
    f = fusec.compile(model, use_kernels=kind != "no_kernels")
    x = torch.randn(16, 8)

    def both(seed: int) -> None:
        torch.manual_seed(seed)
        want = eager(x)
        torch.manual_seed(seed)
        torch.testing.assert_close(f(x), want)
        torch.testing.assert_close(model.get_submodule("1").running_mean, eager[1].running_mean)

    for step, mode in enumerate(["train", "eval", "eval", "train", "frozen_bn", "frozen_bn", "eval"]):
        for m in (eager, model):
            m.train(mode in ("train", "frozen_bn"))
            if mode == "frozen_bn":
                m.get_submodule("1").eval()
        both(step)
    assert len(f._mode_variants) == 3


@pytest.mark.parametrize(
    ("fn", "make"),
    [
        (lambda xs: xs[0] + xs[1], lambda a, b: (a, b)),
        (lambda xs: xs[0] * xs[1], lambda a, b: [a, b]),
        (lambda xs: xs[0][0] - xs[1], lambda a, b: ((a,), b)),
        (lambda xs: xs["a"] * xs["b"] + 1, lambda a, b: {"a": a, "b": b}),
    ],
    ids=["tuple", "list", "nested", "dict"],
)
def test_containers_of_tensors_follow_each_calls_tensors(fn, make):
    """A tuple, list or dict of tensors is keyed by structure, not by its
    tensors: every call (new tensors, or the same ones written in place)
    returns eager's result, and one specialization serves them all."""
    f = fusec.compile(fn)
    a, b = torch.randn(4, 3), torch.randn(4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "running eagerly: argument 0 ..."
        for step in range(4):
            if step == 2:
                a.add_(1.0)  # the same tensors, new values
            elif step:
                a, b = torch.randn(4, 3), torch.randn(4, 3)
            torch.testing.assert_close(f(make(a, b)), fn(make(a, b)))
    assert len(f.specializations) == 1
    key = next(iter(f.specializations))
    assert not any(isinstance(x, torch.Tensor) for x in _leaves(key))


def _leaves(x):
    if isinstance(x, tuple | list):
        for y in x:
            yield from _leaves(y)
    else:
        yield x


@pytest.mark.parametrize("grad_mode", ["no_grad", "inference_mode", "grad", "grad_frozen"])
def test_a_training_module_updates_its_buffers_once_per_call(grad_mode: str) -> None:
    """A module in training mode compiled and called under any grad mode: after
    each call (the first, which compiles, included) its BatchNorm's running
    statistics and batch count equal eager's, and so do later `eval()` outputs.
    The import's run of the graph must not update the real buffers."""
    import copy

    torch.manual_seed(0)
    eager = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU())
    model = copy.deepcopy(eager)
    if grad_mode == "grad_frozen":  # grad mode on, yet nothing for autograd to record
        for m in (eager, model):
            m.requires_grad_(False)
    context = {
        "no_grad": torch.no_grad,
        "inference_mode": torch.inference_mode,
        "grad": torch.enable_grad,
        "grad_frozen": torch.enable_grad,
    }[grad_mode]
    f = fusec.compile(model)
    for _ in range(3):
        x = torch.randn(16, 8)
        with context():
            torch.testing.assert_close(f(x), eager(x))
        for (name, got), want in zip(model.named_buffers(), eager.buffers(), strict=True):
            torch.testing.assert_close(got, want, msg=name)
    model.eval()
    eager.eval()
    x = torch.randn(16, 8)
    with context():
        torch.testing.assert_close(f(x), eager(x))


def _with_factories(x):
    return x * torch.ones(3) + torch.arange(3) * 0.5 + torch.tensor(1.5)


@pytest.mark.parametrize("input_dtype", [torch.float16, torch.float32])
def test_a_new_default_dtype_after_compiling_is_followed(input_dtype):
    """Factory calls without a dtype follow `torch.set_default_dtype`: the trace
    kept `torch.ones(3)` as a constant of the default dtype it ran under, so a
    call after the default changed returned float32 where eager gives float64."""
    f = fusec.compile(_with_factories)
    x = torch.randn(3).to(input_dtype)
    previous = torch.get_default_dtype()
    try:
        for dtype in (torch.float32, torch.float64, torch.float32, torch.float64):
            torch.set_default_dtype(dtype)
            got, want = f(x), _with_factories(x)
            assert got.dtype == want.dtype, (dtype, got.dtype, want.dtype)
            torch.testing.assert_close(got, want)
            assert f.launches_per_call == 1
    finally:
        torch.set_default_dtype(previous)
