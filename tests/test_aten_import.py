"""ATen-level graphs (torch.export, Dynamo with and without dynamic shapes,
AOTAutograd) against eager PyTorch, at two or more shapes each."""

from __future__ import annotations

import logging

import fusec
import pytest
import torch
import torch._dynamo
from fusec.aten_import import import_aten
from fusec.backend import fusec_backend
from fusec.importer import UnsupportedGraph
from torch._dynamo.backends.common import aot_autograd

from tests.transformer_blocks import MLP, GPT2Block, LlamaBlock, LSTMCell, ViTBlock

SHAPES = [(2, 4), (3, 5)]
MODELS = {
    "gpt2": (GPT2Block, lambda b, t: (torch.randn(b, t, 32),)),
    "llama": (LlamaBlock, lambda b, t: (torch.randn(b, t, 32),)),
    "vit": (ViTBlock, lambda b, t: (torch.randn(b, 3, 4 * t, 8),)),
    "mlp": (MLP, lambda b, t: (torch.randn(b * t, 16),)),
    "lstm": (LSTMCell, lambda b, t: (torch.randn(b, 16), torch.randn(b, 8), torch.randn(b, 8))),
}


def assert_same(got, want):
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
        return
    assert got.shape == want.shape and got.dtype == want.dtype
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


class Recorder:
    """A Dynamo backend that compiles with fusec and keeps what it made."""

    def __init__(self, **options):
        self.compiled = []
        self.options = options

    def __call__(self, gm, example_inputs):
        fn = fusec_backend(gm, example_inputs, options=self.options)
        self.compiled.append(fn)
        return fn


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name", list(MODELS))
def test_dynamo_matches_eager_at_every_shape(name, dynamic):
    torch.manual_seed(0)
    cls, inputs = MODELS[name]
    model = cls().eval()
    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(model, backend=backend, dynamic=dynamic)
    with torch.no_grad():
        for b, t in SHAPES:
            x = inputs(b, t)
            assert_same(compiled(*x), model(*x))
    assert backend.compiled
    assert any(f.launches_per_call > 0 for f in backend.compiled)
    if dynamic:
        # Symbolic sizes are runtime values: one graph, one program for all shapes.
        assert len(backend.compiled) == 1
        assert len({id(s) for s in backend.compiled[0].specializations.values()}) == 1


@pytest.mark.parametrize("name", list(MODELS))
def test_export_matches_eager_at_every_shape(name):
    torch.manual_seed(0)
    cls, inputs = MODELS[name]
    model = cls().eval()
    with torch.no_grad():
        for b, t in SHAPES:
            ep = torch.export.export(model, inputs(b, t))
            for program in (ep, ep.run_decompositions()):
                f = fusec.compile(program)
                x = inputs(b, t)
                assert_same(f(*x), model(*x))
                # Core ATen spells a 3-d linear as view/addmm/view, and `fuse`
                # does not fuse across a reshape: only the 2-d models fuse there.
                if program is ep or name in ("mlp", "lstm"):
                    assert f.launches_per_call > 0


@pytest.mark.parametrize("name", ["mlp", "lstm"])
def test_export_with_a_dynamic_batch_serves_every_batch_with_one_program(name):
    cls, inputs = MODELS[name]
    model = cls().eval()
    batch = torch.export.Dim("batch")
    n = len(inputs(1, 1))
    ep = torch.export.export(model, inputs(2, 4), dynamic_shapes=[{0: batch}] * n)
    f = fusec.compile(ep.run_decompositions())
    with torch.no_grad():
        for b, t in [(2, 4), (3, 5), (5, 1)]:
            x = inputs(b, t)
            assert_same(f(*x), model(*x))
    assert len({id(s) for s in f.specializations.values()}) == 1


@pytest.mark.parametrize("name", list(MODELS))
def test_aten_graphs_fuse_as_their_torch_level_twins(name):
    """The kernel count of the torch-level import (Dynamo's graph) is also that of
    torch.export's program and AOTAutograd's forward graph; for the LSTM cell, the
    MLP and ViT also that of core ATen (GPT-2 and Llama decompose gelu/silu/mean
    there into more pointwise work)."""
    torch.manual_seed(0)
    cls, inputs = MODELS[name]
    model = cls().eval()
    x = inputs(2, 4)
    with torch.no_grad():
        torch._dynamo.reset()
        backend = Recorder()
        torch.compile(model, backend=backend)(*x)
        want = sum(f.launches_per_call for f in backend.compiled)
        assert want > 0
        ep = torch.export.export(model, x)
        programs = [ep] + ([ep.run_decompositions()] if name in ("mlp", "lstm", "vit") else [])
        for program in programs:
            f = fusec.compile(program)
            f(*x)
            assert f.launches_per_call == want
    forward = []

    def fw(gm, example_inputs):
        f = fusec.compile(gm)
        forward.append(f)
        return f

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot_autograd(fw_compiler=fw))
    compiled(*x)
    assert forward[0].launches_per_call == want


@pytest.mark.parametrize("name", ["mlp", "lstm", "gpt2"])
def test_aot_autograd_forward_and_backward_import_and_match_eager(name):
    """The importer reads AOTAutograd's graphs from their FakeTensors (no run of
    real data) and runs them, fused, with gradients equal to eager's."""
    torch.manual_seed(0)
    cls, inputs = MODELS[name]
    model = cls()
    graphs = []

    def compiler(gm, example_inputs):
        try:
            imported = import_aten(gm)
        except UnsupportedGraph:  # Dynamo's recompile at a second shape is symbolic
            assert any(isinstance(v, torch.SymInt) for v in example_inputs)
        else:
            graphs.append([op.name for op in imported.func.walk()])
        return fusec.compile(gm)

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=aot_autograd(fw_compiler=compiler, bw_compiler=compiler))
    for b, t in SHAPES:
        x = inputs(b, t)
        out = compiled(*x)
        loss = (out[0] if isinstance(out, tuple) else out).sum()
        grads = torch.autograd.grad(loss, list(model.parameters()))
        want_out = model(*x)
        want = torch.autograd.grad(
            (want_out[0] if isinstance(want_out, tuple) else want_out).sum(),
            list(model.parameters()),
        )
        assert_same(out, want_out)
        assert_same(grads, want)
    assert len(graphs) >= 2  # forward and backward
    if name != "gpt2":  # layer norm and softmax stay opaque until the dialect has them
        assert all("aten.opaque" not in ops for ops in graphs)
        backward = graphs[1]
        assert "aten.sigmoid" not in backward or "aten.mul" in backward


def test_flatten_at_a_new_shape_with_the_same_size_one_pattern():
    """Issue 11 point 4 / issue 18 case 8: flatten, view(-1) and reshape(-1)
    bake the sizes of the first call; a second shape must not reuse them."""

    def f(x):
        return torch.flatten(x, 1).sigmoid() * 2 + x.reshape(-1, 2).sum() + x.view(x.size(0), -1)

    c = fusec.compile(f)
    for shape in [(4, 4, 4), (8, 2, 4), (2, 16, 2)]:
        x = torch.randn(shape)
        assert_same(c(x), f(x))


def test_symbolic_sizes_are_runtime_values_not_constants():
    def f(x):
        return x.view(x.size(0), -1).sigmoid() * x.size(0)

    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(f, backend=backend, dynamic=True)
    for shape in [(4, 3, 2), (8, 2, 4), (3, 5, 6)]:
        x = torch.randn(shape)
        assert_same(compiled(x), f(x))
    assert len(backend.compiled) == 1
    fn = backend.compiled[0]
    assert len(fn.specializations) == 1
    assert fn.launches_per_call == 1
    # The size is an i64 argument of the program, not a constant of the first call.
    assert "i64" in fn.ir().split("\n")[1]


def test_torch_compile_options_reach_compile_options():
    def f(x):
        return torch.sigmoid(x) * 2

    torch._dynamo.reset()
    backend = Recorder(use_kernels=False, max_specializations=3)
    compiled = torch.compile(f, backend=backend)
    x = torch.randn(4, 4)
    assert_same(compiled(x), f(x))
    opts = backend.compiled[0].options
    assert opts.use_kernels is False and opts.max_specializations == 3
    torch._dynamo.reset()
    compiled = torch.compile(f, backend="fusec", options={"max_specializations": 2})
    assert_same(compiled(x), f(x))


def test_unknown_option_is_reported_and_ignored(caplog):
    torch._dynamo.reset()
    compiled = torch.compile(torch.relu, backend="fusec", options={"no_such_option": 1})
    x = torch.randn(5)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        assert_same(compiled(x), torch.relu(x))
    assert "no_such_option" in caplog.text


def test_a_failing_backend_runs_the_graph_eagerly(monkeypatch, caplog):
    import fusec.backend as backend_mod

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(backend_mod, "compile", broken)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: x.exp() + 1, backend="fusec")
    x = torch.randn(3)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        assert_same(compiled(x), x.exp() + 1)
    assert "boom" in caplog.text


def test_a_failing_import_step_runs_eagerly(monkeypatch):
    import fusec.compiled as compiled_mod

    def broken(*args, **kwargs):
        raise AssertionError("importer bug")

    monkeypatch.setattr(compiled_mod, "import_fx", broken)
    f = fusec.compile(lambda x: x.exp() + 1)
    x = torch.randn(3)
    with pytest.warns(UserWarning, match="importer bug"):
        assert_same(f(x), x.exp() + 1)
    assert f.launches_per_call == 0


def test_unmapped_aten_op_runs_opaque_and_the_log_names_it(caplog):
    def f(x):
        return torch.cumsum(x, 0).sigmoid() * 2

    gm = torch.fx.symbolic_trace(f)
    from torch.fx.experimental.proxy_tensor import make_fx

    x = torch.randn(6)
    aten_gm = make_fx(gm)(x)
    with caplog.at_level(logging.INFO, logger="fusec"):
        c = fusec.compile(aten_gm)
        assert_same(c(x), f(x))
    assert c.launches_per_call == 1
    assert "cumsum" in caplog.text and "aten.opaque" in caplog.text
