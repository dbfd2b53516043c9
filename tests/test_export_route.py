"""`fusec.compile(torch.export.export(m, args))` fuses as `torch.compile(m,
backend="fusec")` does: the same kernels per call for GPT-2-, BERT-, Llama- and
ResNet-style blocks, under `no_grad` and with grad (copy kernels apart: each
entry point's graph holds its own copies, `kernel_counts.compute_kernels`), and
the results of eager.

What it takes: eval batch norm in ATen form (`aten.batch_norm`,
`aten._native_batch_norm_legit_no_training`) imports as pointwise work; the
in-place ops an exported program keeps (`relu_`, `add_`) become copies that
`functionalize` drops, also into the result of an opaque op whose schema says it
is fresh (`aten.convolution`); and `aten.__and__`/`__or__`/`__xor__` are not
taken for in-place ops (their names end in `_`, their schemas write nothing)."""

from __future__ import annotations

import contextlib
import os
import re
import sys

import fusec
import pytest
import torch
import torch.nn.functional as F
from fusec.api.exported import import_exported
from kernel_counts import compute_kernels, torch_compile_compute_kernels
from torch import nn
from transformer_blocks import GPT2Block, LlamaBlock, attention


class BertBlock(nn.Module):
    """Post-norm encoder layer: attention without a mask, erf GELU."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln_1 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)
        self.ln_2 = nn.LayerNorm(dim)

    def forward(self, x):
        q, k, v = self.qkv(x).split(x.shape[-1], dim=2)
        x = self.ln_1(x + self.out(attention(q, k, v, self.heads, causal=False)))
        return self.ln_2(x + self.proj(F.gelu(self.fc(x))))


class ResNetBlock(nn.Module):
    """torchvision's BasicBlock: the in-place ReLU and `out += x` stay in-place
    ops in the exported program."""

    def __init__(self, c: int = 8):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


def _resnet() -> ResNetBlock:
    m = ResNetBlock()
    with torch.no_grad():  # running statistics that are not the identity
        for bn in (m.bn1, m.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    return m


MODELS = {
    "gpt2": (GPT2Block, (2, 5, 32)),
    "bert": (BertBlock, (2, 5, 32)),
    "llama": (LlamaBlock, (2, 5, 32)),
    "resnet": (_resnet, (2, 8, 6, 6)),
}


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("name", list(MODELS))
def test_export_gets_torch_compiles_kernels(name: str, grad: bool):
    torch.manual_seed(0)
    make, shape = MODELS[name]
    m = make().eval()
    x = torch.randn(shape)
    with torch.enable_grad() if grad else torch.no_grad():
        expected = torch_compile_compute_kernels(m, x)
        f = fusec.compile(torch.export.export(m, (x,)))
        for _ in range(2):
            torch.testing.assert_close(f(x), m(x))
        assert compute_kernels(lambda: f(x)) == expected
    assert expected > 0


def test_the_resnet_block_fuses_batch_norm_relu_and_the_residual():
    m = _resnet().eval()
    x = torch.randn(2, 8, 6, 6)
    with torch.no_grad():
        ep = torch.export.export(m, (x,))
        ir = str(import_exported(ep))
        f = fusec.compile(ep)
        torch.testing.assert_close(f(x), m(x))
    opaque = re.findall(r'aten.opaque "(aten[^"]+)".*', ir)
    assert opaque == ["aten.conv2d.default"] * 2  # batch norm is pointwise
    assert ir.count("{fresh}") == 2  # so relu_ and add_ into them are functionalized
    # bn1 + relu_ after conv1, bn2 + add_ + relu_ after conv2: one kernel each
    assert f.launches_per_call == 2
    ir_after = str(f.ir())
    assert "aten.copy_" not in ir_after


def bool_ops(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    p, q, r = a > 0, b > 0, c > 0
    return torch.where((p & q) | (q ^ r), a, b) + 1


class BoolOps(nn.Module):
    def forward(self, a, b, c):
        return bool_ops(a, b, c)


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
def test_and_or_xor_of_bool_tensors_fuse(grad: bool):
    a, b, c = (torch.randn(4, 8) for _ in range(3))
    with torch.enable_grad() if grad else contextlib.nullcontext():
        ep = torch.export.export(BoolOps(), (a, b, c))
        ir = str(import_exported(ep))
        f = fusec.compile(ep)
        torch.testing.assert_close(f(a, b, c), bool_ops(a, b, c))
    assert 'aten.opaque "aten' not in ir and "aten.copy_" not in ir
    assert f.launches_per_call == 1


def test_and_or_xor_fuse_through_torch_compile_too():
    a, b, c = (torch.randn(4, 8) for _ in range(3))
    f = torch.compile(bool_ops, backend="fusec")
    for _ in range(2):
        torch.testing.assert_close(f(a, b, c), bool_ops(a, b, c))
    assert fusec.dynamo_graphs()[-1].launches_per_call == 1


def test_bitwise_ops_of_integers_stay_opaque():
    def f(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return ((a & b) | (a ^ b)) + 1

    a, b = torch.randint(0, 16, (4, 8)), torch.randint(0, 16, (4, 8))
    g = fusec.compile(f)
    torch.testing.assert_close(g(a, b), f(a, b))
    assert g.ir().count("aten.opaque") == 3


def in_place_and(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m = a > 0
    m &= b > 0
    return torch.where(m, a, b)


class InPlaceAnd(nn.Module):
    def forward(self, a, b):
        return in_place_and(a, b)


def test_in_place_and_of_a_bool_tensor():
    a, b = torch.randn(4, 8), torch.randn(4, 8)
    g = fusec.compile(in_place_and)
    torch.testing.assert_close(g(a, b), in_place_and(a, b))
    assert g.launches_per_call == 1
    ep = torch.export.export(InPlaceAnd(), (a, b))  # keeps `aten.__iand__.Tensor`
    g = fusec.compile(ep)
    torch.testing.assert_close(g(a, b), in_place_and(a, b))
    assert g.launches_per_call == 1


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("name", ["gpt2", "bert", "llama", "resnet18"])
def test_hugging_face_models_through_export(name: str, grad: bool):
    """The Hugging Face models of benchmarks/models.py (quick configs), eval."""
    pytest.importorskip("transformers")
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    import models

    torch.manual_seed(0)
    m, args, _ = getattr(models, f"make_{name}")(True)
    m.eval()
    with torch.enable_grad() if grad else torch.no_grad():
        expected = torch_compile_compute_kernels(m, *args)
        f = fusec.compile(torch.export.export(m, args))
        for _ in range(2):
            torch.testing.assert_close(f(*args), m(*args))
        # Copy kernels are left out on both sides (`compute_kernels`): Dynamo's
        # graph makes a KV cache's `cat((torch.tensor([]), k))` a copy kernel
        # (the empty tensor is a constant `cat` skips), where the exported
        # program lifts that tensor to an input and the cat runs through PyTorch.
        assert compute_kernels(lambda: f(*args)) == expected
