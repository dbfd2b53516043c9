"""`fusec.compile` of what torch.fx cannot trace: Dynamo captures it with the
same options, so it gets the kernels `torch.compile(backend="fusec")` gets, with
`launches_per_call`, `explain()`, `ir()`, an INFO log line and strict mode.

Cases: a GPT-style block (`b, t, c = q.shape`, `torch.ones(t, t)`), an LSTM
loop over `xs.size(0)`, a function whose trace fails only with its mask None,
every model of benchmarks/models.py (Hugging Face GPT-2/BERT/Llama/ViT/ResNet
from quick configs, the MLP, the LSTM loop, `nn.TransformerEncoderLayer`), in
inference and with grad; and a module holding `nn.LSTM`, which torch.fx traces
(`nn.LSTM` a leaf) and fusec compiles in inference and training."""

from __future__ import annotations

import contextlib
import logging
import os
import sys

import fusec
import pytest
import torch
import torch.nn.functional as F
from fusec.api.captured import CapturedFunction
from fusec.api.options import FusionError
from kernel_counts import torch_compile_kernels
from torch import nn
from training_models import lstm_cell
from transformer_blocks import GPT2Block

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import models  # noqa: E402


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _mode(grad: bool) -> contextlib.AbstractContextManager[None]:
    return torch.enable_grad() if grad else torch.no_grad()


def _assert_fuses_as_torch_compile(m, args, grad: bool) -> CapturedFunction:
    """`fusec.compile(m)` is captured by Dynamo, equals eager on two calls and
    launches the kernels `torch.compile(m, backend="fusec")` launches (some)."""
    with _mode(grad):
        expected = torch_compile_kernels(m, *args)
        torch._dynamo.reset()
        f = fusec.compile(m)
        assert isinstance(f, CapturedFunction)
        for _ in range(2):
            torch.testing.assert_close(f(*args), m(*args))
        assert f.launches_per_call == expected
    assert expected > 0
    return f


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_a_block_that_reads_sizes_is_captured_and_fuses(grad: bool, caplog):
    torch.manual_seed(0)
    m, x = GPT2Block(), torch.randn(2, 5, 32)
    with caplog.at_level(logging.INFO, logger="fusec"):
        f = _assert_fuses_as_torch_compile(m, (x,), grad)
    assert any(
        "torch.fx cannot trace GPT2Block" in r.message and "capturing it with Dynamo" in r.message
        for r in caplog.records
    )
    report = f.explain()
    assert report.kernels == f.launches_per_call
    assert f.ir().startswith("// graph 1 of") and "func.func" in f.ir()
    if grad:  # the backward runs fusec's kernels too (compiled at the first backward)
        y = f(x)
        y.square().mean().backward()
        assert [g.kind for g in f.compiled_graphs] == ["forward", "backward"]
        got = [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        m(x).square().mean().backward()
        for a, p in zip(got, m.parameters(), strict=True):
            torch.testing.assert_close(a, p.grad)
        assert f.compiled_graphs[1].launches_per_call > 0


class LSTMOverTime(nn.Module):
    """The seeds' LSTM cell over every step of `xs` (a loop over `xs.size(0)`)."""

    def __init__(self, hidden: int = 16):
        super().__init__()
        self.w_ih = nn.Parameter(torch.randn(4 * hidden, hidden) * 0.2)
        self.w_hh = nn.Parameter(torch.randn(4 * hidden, hidden) * 0.2)
        self.b_ih = nn.Parameter(torch.randn(4 * hidden) * 0.2)
        self.b_hh = nn.Parameter(torch.randn(4 * hidden) * 0.2)

    def forward(self, xs, hx, cx):
        for t in range(xs.size(0)):
            hx, cx = lstm_cell(xs[t], hx, cx, self.w_ih, self.w_hh, self.b_ih, self.b_hh)
        return hx


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_a_loop_over_a_size_is_captured_and_fuses(grad: bool):
    torch.manual_seed(0)
    m = LSTMOverTime()
    args = (torch.randn(4, 3, 16), torch.randn(3, 16), torch.randn(3, 16))
    f = _assert_fuses_as_torch_compile(m, args, grad)
    assert f.launches_per_call == 4  # one gate tail per step
    longer = (torch.randn(6, 3, 16), *args[1:])
    with _mode(grad):
        torch.testing.assert_close(f(*longer), m(*longer))


def masked_gelu(x, mask=None):
    if mask is None:
        b, t = x.shape[:2]  # torch.fx cannot unpack a traced size
        mask = torch.ones(b, t, dtype=torch.bool, device=x.device)
    return F.gelu(x).masked_fill(~mask[..., None], 0.0) * 2 + 1


def test_a_trace_that_fails_only_with_a_none_argument_is_captured():
    x, mask = torch.randn(2, 5, 8), torch.rand(2, 5) > 0.5
    f = fusec.compile(masked_gelu)
    assert not isinstance(f, CapturedFunction)  # torch.fx traces it with a mask
    torch.testing.assert_close(f(x, mask), masked_gelu(x, mask))
    assert f.launches_per_call == 1
    expected = torch_compile_kernels(masked_gelu, x)
    for _ in range(2):
        torch.testing.assert_close(f(x), masked_gelu(x))
        assert f.launches_per_call == expected == 1
    torch.testing.assert_close(f(x, mask=None), masked_gelu(x))
    torch.testing.assert_close(f(x, mask), masked_gelu(x, mask))  # the traced graph again
    assert f.launches_per_call == 1


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("name", list(models.ZOO))
def test_zoo_models_get_torch_compiles_kernels(name: str, grad: bool):
    """benchmarks/models.py's zoo (quick configs): eval without grad, training
    mode with it (dropout is 0)."""
    if (missing := models.missing_library(name)) is not None:
        pytest.skip(f"needs {missing}")
    torch.manual_seed(0)
    m, args, _ = models.build(name, True)
    m.train(grad)
    with _mode(grad):
        expected = torch_compile_kernels(m, *args)
        torch._dynamo.reset()
        f = fusec.compile(m)
        for _ in range(2):
            torch.testing.assert_close(f(*args), m(*args))
        assert f.launches_per_call == expected
    # In eval without grad, `nn.TransformerEncoderLayer` takes PyTorch's fused
    # fast path (`aten._transformer_encoder_layer_fwd`): nothing left to fuse.
    assert expected > 0 or (name == "encoder_layer" and not grad)


class LSTMHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        y, _ = self.lstm(x)
        return torch.tanh(self.head(y)) * 2 + 1


def test_a_module_holding_nn_lstm_fuses_in_inference_and_training():
    """torch.fx keeps `nn.LSTM` as a leaf call (`(output, (h, c))`, run by
    PyTorch); training traces it through AOTAutograd cell by cell (oneDNN's
    LSTM has no backward when the input does not require grad). Dynamo skips
    the frame of a module calling an RNN, so `torch.compile` launches none."""
    torch.manual_seed(0)
    m, x = LSTMHead().eval(), torch.randn(3, 5, 8)
    with torch.no_grad():
        baseline = torch_compile_kernels(m, x)
        f = fusec.compile(m)
        torch.testing.assert_close(f(x), m(x))
        assert f.launches_per_call == 1 >= baseline  # the head's tanh * 2 + 1
    m.train()
    f = fusec.compile(m)
    y = f(x)
    torch.testing.assert_close(y, m(x))
    y.square().mean().backward()
    got = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).square().mean().backward()
    for a, p in zip(got, m.parameters(), strict=True):
        torch.testing.assert_close(a, p.grad)
    kernels = {g.kind: g.launches_per_call for g in f.compiled_graphs}
    assert kernels["forward"] == 6  # five cell tails and the head
    assert kernels["backward"] > 0


def two_graphs(x):
    y = torch.sigmoid(x) * 2
    if y.sum() > 0:  # data-dependent: a graph break under Dynamo
        return torch.tanh(y) + 1
    return y - 1


def test_strict_captures_in_one_graph_or_raises():
    x = torch.randn(2, 5, 32)
    m = GPT2Block()
    with torch.no_grad():
        f = fusec.compile(m, strict=True)
        torch.testing.assert_close(f(x), m(x))
        assert f.launches_per_call > 0
    g = fusec.compile(two_graphs, strict=True)
    with pytest.raises(FusionError, match="one graph"):
        g(torch.randn(4))


def test_data_dependent_branches_run_both_parts_fused():
    f = fusec.compile(two_graphs)
    for x in (torch.ones(4), -torch.ones(4)):
        torch.testing.assert_close(f(x), two_graphs(x))
        assert f.launches_per_call == 2  # sigmoid * 2 (and its sum), then the branch
    report = fusec.explain(two_graphs, torch.ones(4))
    assert len(report.graphs) >= 2 and report.kernels >= 2
