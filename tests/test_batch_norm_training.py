"""Batch norm in training is fused (`fusec.frontend.batch_norm_training`): the
forward's `_native_batch_norm_legit_functional` and the backward's
`native_batch_norm_backward` are reductions and pointwise ops in kernels (with
the ReLU and residual add around them), with eager's outputs, gradients and
running statistics, over 2-d, 3-d and 4-d inputs, with and without affine
parameters, static and symbolic sizes; the buffers' in-place updates are one
`_foreach_copy_` and one `_foreach_add_` (`batch-argument-writes`)."""

from __future__ import annotations

import copy

import pytest
import torch
import torch._dynamo
from kernel_counts import top_level_aten
from torch import nn

_BN_CALLS = ("aten::_native_batch_norm_legit_functional", "aten::native_batch_norm_backward")


class Block(nn.Module):
    """A ResNet basic block's second half: conv, norm, residual add, ReLU."""

    def __init__(self, affine: bool = True) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4, affine=affine, momentum=0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)) + x)


class Sequence1d(nn.Module):
    """BatchNorm1d over [N, C, L] and over [N, C]."""

    def __init__(self) -> None:
        super().__init__()
        self.bn3 = nn.BatchNorm1d(6)
        self.bn2 = nn.BatchNorm1d(6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn2(self.bn3(x).tanh().mean(-1)).sigmoid()


CASES = {
    "block": (lambda: Block(), lambda: torch.randn(3, 4, 6, 5)),
    "block_no_affine": (lambda: Block(affine=False), lambda: torch.randn(3, 4, 6, 5)),
    "sequence_1d": (Sequence1d, lambda: torch.randn(5, 6, 7)),
    "block_f64": (lambda: Block().double(), lambda: torch.randn(2, 4, 5, 5, dtype=torch.float64)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_training_norms_are_kernels(name: str):
    make, data = CASES[name]
    torch.manual_seed(0)
    model = make()
    twin = copy.deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    for _ in range(3):  # the running statistics move each step
        x = data()
        out = compiled(x)
        grad = torch.randn_like(out)
        backward = top_level_aten(lambda out=out, grad=grad: out.backward(grad))
        want = twin(x)
        want.backward(grad)
        torch.testing.assert_close(out, want)
        for (name_, p), q in zip(model.named_parameters(), twin.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, msg=lambda m, n=name_: f"{n}: {m}")
            p.grad = q.grad = None
        for (name_, b), c in zip(model.named_buffers(), twin.buffers(), strict=True):
            torch.testing.assert_close(b, c, msg=lambda m, n=name_: f"{n}: {m}")
    forward = top_level_aten(lambda: compiled(data()))
    for call in _BN_CALLS:
        assert forward[call] == 0 and backward[call] == 0, (forward, backward)
    assert forward["aten::relu"] == 0, forward
    # The buffers' updates: one call for the statistics, one for the counters
    # (`batch-argument-writes`), not a `copy_` and an `add` per buffer.
    assert forward["aten::copy_"] == 0 and forward["aten::add"] == 0, forward
    assert forward["aten::_foreach_copy_"] == 1 and forward["aten::_foreach_add_"] == 1, forward


class Counters(nn.Module):
    """Buffers a training step updates in place: a running mean (EMA), a step
    counter and a sum, all read by the step too."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(5, 5)
        self.register_buffer("ema", torch.zeros(5))
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("total", torch.zeros(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        self.ema.mul_(0.9).add_(y.detach().mean(0), alpha=0.1)
        self.steps += 1
        self.total.add_(y.detach().sum(0))
        return y.tanh() * self.ema + self.steps


def test_buffers_updated_in_place_are_written_in_one_call():
    torch.manual_seed(0)
    model = Counters()
    twin = copy.deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    for _ in range(3):
        x = torch.randn(4, 5)
        out = compiled(x)
        want = twin(x)
        torch.testing.assert_close(out, want)
        out.sum().backward()
        want.sum().backward()
        for (name, b), c in zip(model.named_buffers(), twin.buffers(), strict=True):
            torch.testing.assert_close(b, c, msg=lambda m, n=name: f"{n}: {m}")
        torch.testing.assert_close(model.lin.weight.grad, twin.lin.weight.grad)
    x = torch.randn(4, 5)
    calls = top_level_aten(lambda: compiled(x))
    # The counter's new value is read by the step: it is written back with the
    # others rather than added again in place.
    assert calls["aten::copy_"] == 0 and calls["aten::_foreach_copy_"] == 1, calls


def test_symbolic_sizes_count_values_in_the_kernel():
    """With a symbolic batch the number of values per channel (for the running
    variance's unbiased estimate) is counted in the kernel: eager's values at
    each batch size, and no norm call."""
    torch.manual_seed(0)
    model = Block()
    twin = copy.deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec", dynamic=True)
    for n in (3, 5, 2):
        x = torch.randn(n, 4, 6, 5)
        out = compiled(x)
        out.sum().backward()
        want = twin(x)
        want.sum().backward()
        torch.testing.assert_close(out, want)
        torch.testing.assert_close(model.bn.weight.grad, twin.bn.weight.grad)
        torch.testing.assert_close(model.bn.running_var, twin.bn.running_var)
        torch.testing.assert_close(model.bn.running_mean, twin.bn.running_mean)
    calls = top_level_aten(lambda: compiled(torch.randn(4, 4, 6, 5)))
    assert calls["aten::_native_batch_norm_legit_functional"] == 0, calls
