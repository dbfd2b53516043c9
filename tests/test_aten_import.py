"""ATen-level graphs (torch.export, Dynamo with and without dynamic shapes,
AOTAutograd) against eager PyTorch, at two or more shapes each."""

from __future__ import annotations

import logging

import fusec
import pytest
import torch
import torch._dynamo
from fusec.frontend.aten_import import import_aten
from fusec.frontend.importer import UnsupportedGraph
from torch._dynamo.backends.common import aot_autograd

from tests.model_cases import MODELS, Recorder, assert_same

SHAPES = [(2, 4), (3, 5)]


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
    torch.export's program and AOTAutograd's forward graph (there one more for
    ViT's softmax, whose probabilities the backward reads); for the LSTM cell, the
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
    # ViT's attention, written out, runs as PyTorch's fused attention without
    # grad (`raise-attention`); a training forward saves the probabilities for
    # the backward, so there the softmax stays a kernel.
    assert forward[0].launches_per_call == want + (name == "vit")


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
    compiled = torch.compile(
        model, backend=aot_autograd(fw_compiler=compiler, bw_compiler=compiler)
    )
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


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.split(2, 1)[0].exp() * 3,
        lambda x: torch.ops.aten.split.Tensor(x, 2, 1)[0].exp() * 3,
        lambda x: x[:, 1:].sigmoid() * 2 + x[..., -1:],
        lambda x: x.unsqueeze(0).expand(3, -1, -1).exp() * 2,
    ],
)
def test_size_dependent_shape_ops_at_new_shapes_with_the_same_pattern(fn):
    c = fusec.compile(fn)
    for shape in [(4, 6), (4, 10), (5, 8)]:
        x = torch.randn(shape)
        assert_same(c(x), fn(x))
        assert c.launches_per_call == 1


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
    import fusec.api.backend as backend_mod

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(backend_mod, "compile_traced", broken)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: x.exp() + 1, backend="fusec")
    x = torch.randn(3)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        assert_same(compiled(x), x.exp() + 1)
    assert "boom" in caplog.text


def test_a_failing_import_step_runs_eagerly(monkeypatch):
    import fusec.frontend.importer

    def broken(*args, **kwargs):
        raise AssertionError("importer bug")

    # `fusec.api.compiled` imports the importer when it compiles (not on a warm start).
    monkeypatch.setattr(fusec.frontend.importer, "import_fx", broken)
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


def test_a_program_failing_at_run_time_falls_back_to_eager(monkeypatch, caplog):
    def f(x):
        return torch.sigmoid(x) * 2 + 1

    c = fusec.compile(f)
    x = torch.randn(6)
    assert_same(c(x), f(x))
    assert c.launches_per_call == 1

    def fault(inputs):
        raise RuntimeError("kernel fault")

    # The kernel's entry, as the generated host code calls it (per call, by attribute).
    (kernel,) = [s.fn.kernel for s in c.last.program.all_steps() if s.kind == "kernel"]
    monkeypatch.setattr(kernel, "call", fault)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        assert_same(c(x), f(x))
        assert_same(c(x), f(x))  # the specialization now runs eagerly
    assert caplog.text.count("kernel fault") == 1
    assert c.launches_per_call == 0


def test_an_eager_error_is_still_raised():
    def f(x, y):
        return torch.sigmoid(x) + y

    c = fusec.compile(f)
    c(torch.randn(4), torch.randn(4))
    with pytest.raises(RuntimeError):
        c(torch.randn(4), torch.randn(5))


def test_a_symbolic_size_of_an_exported_program_is_a_runtime_value():
    class ScaledFlatten(torch.nn.Module):
        def forward(self, x):
            return x.view(x.size(0), -1).sigmoid() * x.size(0)

    model = ScaledFlatten()
    batch = torch.export.Dim("batch")
    ep = torch.export.export(model, (torch.randn(4, 3, 2),), dynamic_shapes=[{0: batch}])
    f = fusec.compile(ep)
    for n in (4, 7, 2):
        x = torch.randn(n, 3, 2)
        assert_same(f(x), model(x))
        assert f.launches_per_call == 1
    assert len(f.specializations) == 1
    assert "aten.sym_size" in f.ir()


A = torch.ops.aten


def aten_ops_graph(x, y, g, w, b):
    """Most entries of the ATen table, called as OpOverloads (as ATen graphs do)."""
    s = A.sigmoid.default(x)
    t = A.tanh.default(y)
    grads = [
        A.sigmoid_backward.default(g, s),
        A.tanh_backward.default(g, t),
        A.threshold_backward.default(g, x, 0.0),
        A.gelu_backward.default(g, x),
        A.silu_backward.default(g, x),
    ]
    p = A.rsub.Scalar(A.clamp_min.default(x, -0.5), 1.0)
    q = A.where.self(A.gt.Scalar(x, 0.0), A.clamp_max.default(y, 0.3), A.neg.default(y))
    r = A._to_copy.default(A.mul.Tensor(p, q), dtype=torch.float64)
    c = A.clone.default(
        A.div.Tensor_mode(x, A.add.Scalar(A.abs.default(y), 1.0), rounding_mode="floor")
    )
    cat = A.cat.default([A.pow.Tensor_Scalar(s, 2), t], 1)
    pieces = A.split.Tensor(cat, x.shape[1], 1)
    mm = A.addmm.default(b, A.view.default(pieces[0], [-1, x.shape[1]]), A.t.default(w))
    sel = A.select.int(mm, 1, 0)
    sl = A.slice.Tensor(mm, 1, 1, 9223372036854775807)
    red = A.sum.dim_IntList(sl, [1], True)
    mean = A.mean.dim(A.unsqueeze.default(sel, 1), [1])
    sq = A.squeeze.dims(A.unsqueeze.default(A.unsqueeze.default(mean, 1), 0), [0, 2])
    e = A.expand.default(A.unsqueeze.default(sq, 1), [x.shape[0], 3])
    perm = A.permute.default(A._unsafe_view.default(A.mul.Tensor(e, 2.0), [3, x.shape[0]]), [1, 0])
    soft = A._softmax.default(mm, 1, False)
    amax = A.amax.default(mm, [1], True)
    full = A.full.default([1, 1], 2.0, dtype=torch.float32, device=x.device)
    lin = A.linear.default(x, w)
    bm = A.bmm.default(A.unsqueeze.default(x, 0), A.unsqueeze.default(A.t.default(w), 0))
    return (*grads, r, c, red, perm, soft + amax * full, lin + A.squeeze.dim(bm, 0))


@pytest.mark.parametrize("rows", [4, 7])
def test_aten_table_entries_match_eager(rows):
    x, y, g = (torch.randn(rows, 5) for _ in range(3))
    w, b = torch.randn(3, 5), torch.randn(3)
    f = fusec.compile(aten_ops_graph)
    with torch.no_grad():
        assert_same(f(x, y, g, w, b), aten_ops_graph(x, y, g, w, b))
    assert f.launches_per_call > 0
    opaque = {
        op.properties["target"].data
        for op in f.last.imported.func.walk()
        if op.name == "aten.opaque"
    }
    # Only the factory `full` has no aten op: softmax and amax map to reductions.
    assert opaque == {"aten.full.default"}


def test_sizes_read_in_a_dynamic_graph_are_never_baked():
    """Dynamo's dynamic graphs read sizes with `x.size()`, `x.shape[d]`, `numel()`:
    each is a runtime value (`aten.sym_size`, `aten.size`), so a second shape
    runs the same program and matches eager."""

    def f(x):
        b, t, c = x.shape
        y = x.reshape(x.size(0) * x.size(1), -1).sigmoid()
        z = y.view(x.shape) * x.size(-1) + x.new_zeros(x.size())
        return z + x[:, -1:, :] * (x.numel() / b) + x.shape[1:][0]

    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(f, backend=backend, dynamic=True)
    for shape in [(2, 3, 4), (3, 5, 6), (4, 2, 8)]:
        x = torch.randn(shape)
        assert_same(compiled(x), f(x))
    assert len(backend.compiled) == 1
    fn = backend.compiled[0]
    assert len(fn.specializations) == 1 and fn.launches_per_call > 0
    assert "aten.size" in fn.ir()  # x.shape read per call, not a constant


class Counting(torch.nn.Module):
    """Parameters, a mutated buffer, a lifted tensor constant and a dict output."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 8)
        self.register_buffer("steps", torch.zeros(4))
        self.scale = torch.tensor(0.5)

    def forward(self, x, *, shift):
        self.steps.add_(1)
        i, f = self.lin(x).chunk(2, 1)
        return {
            "out": torch.sigmoid(i) * torch.tanh(f) * self.scale + self.steps,
            "shift": x + shift,
        }


@pytest.mark.parametrize("decompose", [False, True])
def test_exported_program_lifts_parameters_buffers_and_constants(decompose):
    import copy

    torch.manual_seed(0)
    model = Counting()
    eager = copy.deepcopy(model)
    x = torch.randn(3, 4)
    ep = torch.export.export(model, (x,), {"shift": torch.ones(4)})
    if decompose:
        ep = ep.run_decompositions()
    f = fusec.compile(ep)
    for _ in range(2):
        with torch.no_grad():
            got = f(x, shift=torch.ones(4))
            want = eager(x, shift=torch.ones(4))
        assert set(got) == {"out", "shift"}
        assert_same(got["out"], want["out"])
        assert_same(got["shift"], want["shift"])
    assert f.launches_per_call > 0
    assert_same(f.compiled.gm.steps, eager.steps)  # the buffer was written twice
    assert f.compiled.gm.steps[0] == 2
