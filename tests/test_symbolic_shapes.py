"""Symbolic sizes are dynamic dims (`?`) of the imported IR.

A graph captured with symbolic sizes (Dynamo `dynamic=True`, `torch.export` with
`dynamic_shapes`, make_fx's symbolic tracing) imports with a `?` wherever the
recorded size is a symbol, never the first call's size; sizes Dynamo specialized
stay static. One program and one set of kernels then serve every shape: a call
at a new shape compiles nothing (`kernels_compiled` and the specializations stay
as they were), and every result matches eager.
"""

from __future__ import annotations

import subprocess

import fusec
import pytest
import torch
import torch._dynamo
from xdsl.dialects.builtin import DYNAMIC_INDEX, TensorType

from tests.model_cases import MODELS, Recorder, assert_same
from tests.transformer_blocks import MLP

SHAPES = [(2, 4), (3, 5), (5, 7)]
DYNAMIC_INPUTS = {
    # The model inputs' types under Dynamo's `dynamic=True` (parameters stay
    # static; ViT's patch dims are kept symbolic by Dynamo, its 3 channels are
    # specialized by the convolution's weight).
    "gpt2": ["tensor<?x?x32xf32>"],
    "llama": ["tensor<?x?x32xf32>"],
    "vit": ["tensor<?x3x?x?xf32>"],
    "mlp": ["tensor<?x16xf32>"],
    "lstm": ["tensor<?x16xf32>", "tensor<?x8xf32>", "tensor<?x8xf32>"],
}


def programs(fn) -> set[int]:
    """The distinct compiled programs behind a compiled function's specializations."""
    return {id(s) for s in fn.specializations.values()}


def imported_func(fn):
    (spec,) = {id(s): s for s in fn.specializations.values()}.values()
    assert spec.imported is not None, spec.reason
    return spec.imported.func


def dynamic_arg_types(func) -> list[str]:
    return [
        str(a.type)
        for a in func.args
        if isinstance(a.type, TensorType) and DYNAMIC_INDEX in a.type.get_shape()
    ]


@pytest.mark.parametrize("name", list(MODELS))
def test_dynamo_dynamic_sizes_are_dynamic_dims_and_one_program_serves_every_shape(name):
    torch.manual_seed(0)
    cls, inputs = MODELS[name]
    model = cls().eval()
    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        x = inputs(*SHAPES[0])
        assert_same(compiled(*x), model(*x))
        (fn,) = backend.compiled
        kernels = fusec.cache_stats()["kernels_compiled"]
        launches = fn.launches_per_call
        assert kernels > 0 and launches > 0
        func = imported_func(fn)
        assert dynamic_arg_types(func) == DYNAMIC_INPUTS[name]
        # No type holds the first call's batch: its results are `?` too.
        (ret,) = [op for op in func.walk() if op.name == "func.return"]
        assert all(DYNAMIC_INDEX in v.type.get_shape() for v in ret.operands)
        for b, t in SHAPES[1:]:
            x = inputs(b, t)
            assert_same(compiled(*x), model(*x))
            assert fusec.cache_stats()["kernels_compiled"] == kernels
            assert fn.launches_per_call == launches
    assert len(backend.compiled) == 1
    assert len(programs(fn)) == 1


@pytest.mark.parametrize("name", ["mlp", "lstm", "gpt2"])
@pytest.mark.parametrize("decomposed", [False, True])
def test_export_with_dynamic_shapes_imports_dynamic_dims(name, decomposed):
    torch.manual_seed(0)
    cls, inputs = MODELS[name]
    model = cls().eval()
    batch = torch.export.Dim("batch", min=2, max=64)
    n = len(inputs(1, 1))
    if name == "gpt2":  # batch and sequence length
        dims: list = [{0: batch, 1: torch.export.Dim("seq", min=2, max=64)}]
        want = ["tensor<?x?x32xf32>"]
    else:
        dims = [{0: batch}] * n
        want = DYNAMIC_INPUTS[name]
    ep = torch.export.export(model, inputs(*SHAPES[0]), dynamic_shapes=dims)
    if decomposed:
        ep = ep.run_decompositions()
    f = fusec.compile(ep)
    with torch.no_grad():
        x = inputs(*SHAPES[0])
        assert_same(f(*x), model(*x))
        kernels = fusec.cache_stats()["kernels_compiled"]
        assert kernels > 0
        assert dynamic_arg_types(imported_func(f)) == want
        for b, t in SHAPES[1:]:
            x = inputs(b, t)
            assert_same(f(*x), model(*x))
            assert fusec.cache_stats()["kernels_compiled"] == kernels
    assert len(programs(f)) == 1


@pytest.mark.parametrize("name", ["mlp", "lstm"])
def test_static_graphs_keep_static_types(name):
    cls, inputs = MODELS[name]
    model = cls().eval()
    torch._dynamo.reset()
    backend = Recorder()
    x = inputs(*SHAPES[0])
    with torch.no_grad():
        assert_same(torch.compile(model, backend=backend, dynamic=False)(*x), model(*x))
        f = fusec.compile(torch.export.export(model, x))
        assert_same(f(*x), model(*x))
    assert "?" not in backend.compiled[0].ir()
    assert "?" not in f.ir()


def test_reshapes_to_one_symbolic_size_import_and_serve_every_size():
    """`view(n, 2, 3)`, `flatten` and `expand(-1, 2, -1)` in a symbolic graph whose
    other sizes Dynamo specialized (by the matmul with a 6x6 weight) are
    `aten.view`/`aten.reshape`/`aten.expand` with one `?` size (a -1 at run time),
    not opaque ops, and not sizes of the first call."""
    w = torch.randn(6, 6)

    def f(x):
        h = x @ w
        y = h.view(h.size(0), 2, 3).sigmoid()
        z = torch.flatten(y, 1).tanh()
        e = y.sum(1, keepdim=True).expand(-1, 2, -1) * y
        return z, e

    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(f, backend=backend, dynamic=True)
    for n in (4, 7, 3):
        x = torch.randn(n, 6)
        assert_same(compiled(x), f(x))
    (fn,) = backend.compiled
    assert len(programs(fn)) == 1
    ir = fn.ir()
    assert "aten.opaque" not in ir
    assert "aten.view %" in ir and "tensor<?x6xf32> -> tensor<?x2x3xf32>" in ir
    assert "tensor<?x2x3xf32> -> tensor<?x6xf32>" in ir
    assert "aten.expand" in ir and "size = [-1, 2, -1]" in ir


def test_a_reshape_to_two_symbolic_sizes_runs_through_pytorch(caplog):
    def f(x):
        return x.reshape(x.size(0) * x.size(1), -1).sigmoid()

    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(f, backend=backend, dynamic=True)
    with caplog.at_level("INFO", logger="fusec"):
        for shape in [(4, 3, 2), (2, 5, 3)]:
            x = torch.randn(shape)
            assert_same(compiled(x), f(x))
    (fn,) = backend.compiled
    assert len(programs(fn)) == 1
    assert "aten.opaque" in fn.ir()
    assert "reshape to several symbolic sizes" in caplog.text


def scaled_softmax(x, b):
    y = torch.sigmoid(x + b) * x.size(0)
    return torch.softmax(y.view(-1, 2, 4), -1), torch.cat([y, x], 0)


def test_import_graph_of_a_symbolic_aten_graph_prints_dynamic_dims_and_round_trips():
    from torch.fx.experimental.proxy_tensor import make_fx

    x, b = torch.randn(4, 8), torch.randn(8)
    gm = make_fx(scaled_softmax, tracing_mode="symbolic")(x, b)
    text = str(fusec.import_graph(gm, (x, b)))
    assert "(%x: tensor<?x?xf32>, %b: tensor<?xf32>)" in text
    assert "tensor<4x8xf32>" not in text
    printed = subprocess.run(
        ["fusec-opt"], input=text, capture_output=True, text=True, check=True
    ).stdout
    assert printed.strip() == text.strip()
    fused = subprocess.run(
        ["fusec-opt", "--fuse", "-p", "guard", "--emit=llvm"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "fusion.launch" in fused
    # The same graph runs: one program for every size.
    f = fusec.compile(gm)
    for shape in [(4, 8), (6, 8), (3, 8)]:
        x, b = torch.randn(shape), torch.randn(shape[1])
        assert_same(f(x, b), scaled_softmax(x, b))
    assert len(programs(f)) == 1


def test_a_symbolic_size_of_one_is_a_static_one_of_its_own_program():
    """A `?` dim is never a broadcast dim: a call bringing size 1 there gets its
    own program (programs are selected by size-1 dims), whose type says 1 there,
    so its kernel broadcasts as eager does."""
    from torch.fx.experimental.proxy_tensor import make_fx

    def g(x, y):
        return (x + y).sigmoid() * 2

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    gm = make_fx(g, tracing_mode="symbolic")(x, y)
    f = fusec.compile(gm)
    assert_same(f(x, y), g(x, y))
    assert f.launches_per_call == 1
    assert "tensor<?x?xf32>" in f.ir()
    y1 = torch.randn(1, 8)
    assert_same(f(x, y1), g(x, y1))
    assert f.launches_per_call == 1
    assert len(programs(f)) == 2
    assert "%y: tensor<1x?xf32>" in f.ir()
    x, y = torch.randn(6, 5), torch.randn(6, 5)
    assert_same(f(x, y), g(x, y))
    assert len(programs(f)) == 2


def test_explain_shows_the_sizes_a_program_takes_at_run_time():
    torch._dynamo.reset()
    backend = Recorder()
    model = MLP().eval()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for n in (8, 12):
            x = torch.randn(n, 16)
            assert_same(compiled(x), model(x))
    text = str(fusec.explain(backend.compiled))
    assert "float32[?,16] cpu" in text
    assert "float32[8,16]" not in text


def test_a_cat_of_parts_with_different_symbolic_sizes_matches_eager():
    """Two `?x8` parts are one type but may be two sizes at run time (Dynamo gave
    them two symbols): a kernel whose operands do not share one index space
    declines, and its group runs through PyTorch; every size matches eager."""

    def f(x, y):
        return torch.cat([x.sigmoid(), y.tanh()], 0) * 2

    torch._dynamo.reset()
    backend = Recorder()
    compiled = torch.compile(f, backend=backend, dynamic=True)
    for a, b in [(3, 5), (4, 4), (6, 2), (2, 7)]:
        x, y = torch.randn(a, 8), torch.randn(b, 8)
        assert_same(compiled(x, y), f(x, y))
    (fn,) = backend.compiled
    assert len(programs(fn)) == 1
