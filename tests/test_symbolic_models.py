"""Symbolic shapes keep their kernels (issue 33, item 5): the zoo of
`benchmarks/models.py` under `torch.compile(..., dynamic=True)` runs fused at
every shape, a cut by a symbolic size runs with the size's runtime value, and
a program that raises at one shape does not send its graph to eager at the next.

Counts only (kernels launched per call, no eager fallback) and results; no timings.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch
import torch._dynamo
from fusec.api.fast_call import MISS
from fusec.api.training import clear_compiled_graphs, compiled_graphs
from kernel_counts import compute_kernels

from tests.model_cases import Recorder, assert_same

# models.py puts benchmarks/ and tests/ first on sys.path for itself; put the
# path back afterwards (see tests/test_bench_models.py).
_saved_path = list(sys.path)
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import models  # noqa: E402

sys.path[:] = _saved_path


def _launches(calls) -> list[int]:
    """Kernels each compiled graph launched on its last call."""
    return [fn.launches_per_call for fn in calls]


def test_bert_slices_its_position_ids_by_the_symbolic_length_and_stays_fused():
    """BERT's embeddings cut `position_ids[:, :seq]` with `seq` a SymInt: the
    opaque call must get the length's runtime value (a Python slice of the fx
    node raised `TypeError: slice indices must be integers`, and the graph then
    ran eagerly for good)."""
    pytest.importorskip("transformers", reason="the bench extra (transformers) is not installed")
    torch.manual_seed(0)
    model, _, _ = models.build("bert", True)
    model.eval()
    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for seq in (8, 5, 7):
            x = torch.randint(0, 100, (2, seq))
            assert_same(compiled(x), model(x))
            assert backend.compiled and all(n > 0 for n in _launches(backend.compiled))
    (fn,) = backend.compiled
    assert all(s.program is not None for s in fn.specializations.values())


BUF = torch.randn(4, 64)


def cut_slice(y):
    return (
        BUF[:, y.shape[1] - 2 : y.shape[1]].sum(1, keepdim=True) + BUF[:, : y.shape[1]] * y
    ).relu()


def cut_narrow(y):
    return (BUF.narrow(1, y.shape[1] // 2, y.shape[1]) + y).relu()


def cut_index(y):
    return (BUF[:, y.shape[1]].unsqueeze(1) + y).relu()


@pytest.mark.parametrize("fn", [cut_slice, cut_narrow, cut_index])
def test_a_cut_by_a_symbolic_size_runs_with_its_runtime_value(fn, caplog):
    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(fn, backend=backend, dynamic=True)
    for n in (8, 5, 11):
        y = torch.randn(4, n)
        assert_same(compiled(y), fn(y))
        assert _launches(backend.compiled)[-1] > 0
    assert "running eagerly" not in caplog.text


def tail(x, y):
    return (x * y).relu() + 1


def test_a_program_that_raises_at_one_shape_runs_eagerly_there_only(monkeypatch, caplog):
    """A program (here forced) that raises at one shape: that shape runs eagerly
    from then on, without compiling or running the program again; another shape
    compiles again and runs fused (it used to run eagerly at every shape)."""
    import fusec.runtime.program as program_module
    from fusec.api.specializing import Specializing

    runs = {"made": 0, "raised": 0}
    generate, compile_spec = program_module._generate_run, Specializing._compile

    def counted_compile(self, *args, **kwargs):
        runs["made"] += 1
        return compile_spec(self, *args, **kwargs)

    def failing_at_5(program, *variant, **options):
        run = generate(program, *variant, **options)

        def checked(args):
            if any(isinstance(a, torch.Tensor) and a.shape[:1] == (5,) for a in args):
                runs["raised"] += 1
                raise RuntimeError("forced failure at n=5")
            return run(args)

        return checked

    monkeypatch.setattr(program_module, "_generate_run", failing_at_5)
    monkeypatch.setattr(Specializing, "_compile", counted_compile)
    torch._dynamo.reset()
    backend = Recorder()
    f = torch.compile(tail, backend=backend, dynamic=True)

    def call(n: int) -> int:
        x, y = torch.randn(n, 8), torch.randn(n, 8)
        assert_same(f(x, y), tail(x, y))
        return fn.launches_per_call

    x, y = torch.randn(6, 8), torch.randn(6, 8)
    assert_same(f(x, y), tail(x, y))
    (fn,) = backend.compiled
    assert fn.launches_per_call == 1 and runs == {"made": 1, "raised": 0}
    assert call(5) == 0 and runs["raised"] == 1
    assert "forced failure at n=5" in caplog.text
    assert call(5) == 0 and runs == {"made": 1, "raised": 1}  # no compile, no program run
    assert call(7) == 1 and runs == {"made": 2, "raised": 1}  # compiled again: fused
    assert call(9) == 1 and call(5) == 0 and call(7) == 1
    assert runs == {"made": 2, "raised": 1}
    assert len(backend.compiled) == 1  # one Dynamo graph throughout


class Normed(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(8)
        self.scale = 0.5

    def forward(self, x):
        return (self.bn(x) * self.scale).relu() + 1


def fn_args(model: Normed, x: torch.Tensor, scale: float) -> list:
    """The arguments of `Normed`'s Dynamo graph, in its placeholder order."""
    bn, f64 = model.bn, torch.float64
    return [
        x.shape[0], x, torch.tensor(bn.momentum, dtype=f64), bn.running_mean, bn.running_var,
        bn.weight, bn.bias, torch.tensor(bn.eps, dtype=f64), torch.tensor(scale, dtype=f64),
    ]  # fmt: skip


def test_floats_dynamo_passes_as_tensors_are_constants_checked_per_call():
    """Under `dynamic=True` Dynamo passes a module's float attributes (batch
    norm's eps and momentum, `self.scale`) as 0-dim tensors read by `.item()`:
    the import bakes their values in (the normalization fuses, as with static
    shapes) and the key holds them, so another value compiles again."""
    torch.manual_seed(0)
    model = Normed().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    torch._dynamo.reset()
    backend = Recorder()
    f = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for n in (6, 5, 7):
            x = torch.randn(n, 8)
            assert_same(f(x), model(x))
            assert backend.compiled[-1].launches_per_call == 1
        (fn,) = backend.compiled
        assert len({id(s) for s in fn.specializations.values()}) == 1
        assert [c.kind for c in fn.size_checks] == ["value"] * 3  # momentum, eps, scale
        assert fn._fast(fn_args(model, x, 0.5)) is not MISS  # the fast path checks values
        # The graph called with another scale (as Dynamo would, without a guard on it):
        got = fn(*fn_args(model, x, 2.0))
        assert_same(got[0], (model.bn(x) * 2.0).relu() + 1)
        assert len({id(s) for s in fn.specializations.values()}) == 2
        # Other values: compiled again (by Dynamo or by fusec's key), never the
        # program (nor the cached one) that baked the old ones in.
        model.bn.eps, model.scale = 0.25, 2.0
        x = torch.randn(6, 8)
        assert_same(f(x), model(x))
        assert backend.compiled[-1].launches_per_call == 1


MODEL_KERNELS = ["resnet18", "gpt2", "bert", "llama", "mlp"]


@pytest.mark.parametrize("name", MODEL_KERNELS)
def test_dynamic_shapes_launch_as_many_kernels_as_static_ones(name):
    """Inference: the same fused kernels per call with `dynamic=True` as with
    static shapes (ResNet-18 had 0 of 17, GPT-2 1 of 4: their norms' eps were
    Dynamo's float tensors), and no eager fallback at a second shape."""
    if name != "mlp":
        pytest.importorskip("transformers", reason="the bench extra is not installed")
    torch.manual_seed(0)
    model, (x,), _ = models.build(name, True)
    model.eval()
    counts = {}
    with torch.no_grad():
        want = model(x)
        for dynamic in (False, True):
            torch._dynamo.reset()
            backend = Recorder()
            f = torch.compile(model, backend=backend, dynamic=dynamic)
            assert_same(f(x), want)
            counts[dynamic] = sum(_launches(backend.compiled))
        assert counts[True] == counts[False] > 0
        # A second shape (a larger batch, or a shorter sequence) launches as
        # many kernels: no eager fallback. (Dynamo may trace it again: a model
        # that compares its length with a config size specializes it.)
        y = torch.cat([x, x[:1]]) if x.dtype.is_floating_point else x[:, : x.shape[1] - 3]
        assert_same(f(y), model(y))
        assert _launches(backend.compiled)[-1] == counts[True]


TRAINING_KERNELS = ["gpt2", "bert", "llama", "vit_tiny", "encoder_layer", "resnet18", "mlp", "lstm"]


def _training_step(model, f, inputs, loss_fn) -> tuple[torch.Tensor, list[torch.Tensor]]:
    model.zero_grad(set_to_none=True)
    loss = loss_fn(f(*inputs))
    loss.backward()
    grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad(set_to_none=True)
    return loss.detach(), grads


def _step_kernels(f, inputs, loss_fn) -> tuple[int, int]:
    """Compute kernels (`kernel_counts.compute_kernels`: copy kernels apart) of
    a training step's forward and of its backward."""
    box = {}
    forward = compute_kernels(lambda: box.__setitem__("loss", loss_fn(f(*inputs))))
    return forward, compute_kernels(box["loss"].backward)


@pytest.mark.parametrize("name", TRAINING_KERNELS)
def test_dynamic_training_launches_as_many_kernels_as_static(name):
    """Training: the forward and the backward launch as many fused kernels with
    `dynamic=True` as with static shapes, copy kernels apart (the encoder
    layer's backward copies its q/k/v gradients in a kernel that also sums the
    bias gradient when the view between them has static sizes; a view to two
    symbolic sizes runs through PyTorch, and the copy is a kernel of its own).
    (The LSTM loop's backward had 7 of 5:
    its weight gradients' sums of products over a symbolic batch were not
    concatenated, `concat-matmul-sum`). The unflattening views of linear
    layers have several symbolic sizes (they ran through PyTorch, a barrier
    between the bias add and the activation), bias gradients sum views with
    symbolic sizes, and GELU's backward read a saved [b*t, c] product beside
    [b, t, c] gradients; the loss and gradients are eager's."""
    if name not in ("encoder_layer", "mlp", "lstm"):
        pytest.importorskip("transformers", reason="the zoo extra is not installed")
    torch.manual_seed(0)
    model, inputs, loss_fn = models.build(name, True)
    want = _training_step(model, model, inputs, loss_fn)
    counts = {}
    for dynamic in (False, True):
        torch._dynamo.reset()
        clear_compiled_graphs()
        f = torch.compile(model, backend="fusec", dynamic=dynamic)
        assert_same(_training_step(model, f, inputs, loss_fn), want)
        counts[dynamic] = _step_kernels(f, inputs, loss_fn)
        model.zero_grad(set_to_none=True)
    assert counts[True] == counts[False], counts
    assert all(n > 0 for n in counts[True])


class LinearGelu(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.fc(x))


def test_a_linear_on_symbolic_sizes_is_one_linear_and_its_bias_fuses():
    """AOTAutograd's `view(addmm(b, view(x, [s0*s1, 16]), t(w)), [s0, s1, 32])`
    names two symbolic sizes: imported as `aten.linear` of `x` (the view's sizes
    are `x`'s, symbol for symbol), not as a PyTorch view, so the bias add and the
    GELU are one kernel, at every shape."""
    torch.manual_seed(0)
    model = LinearGelu()
    torch._dynamo.reset()
    clear_compiled_graphs()
    f = torch.compile(model, backend="fusec", dynamic=True)
    for shape in ((2, 5, 16), (3, 7, 16)):
        x = torch.randn(*shape)
        want = _training_step(model, model, (x,), lambda y: y.square().mean())
        got = _training_step(model, f, (x,), lambda y: y.square().mean())
        assert_same(got, want)
    (forward,) = [g for g in compiled_graphs() if g.kind == "forward"]
    ir = forward.function.ir()
    assert "aten.linear" in ir and "aten.view.default" not in ir, ir
    assert forward.launches_per_call == 1
