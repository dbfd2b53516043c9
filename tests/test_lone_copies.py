"""Copies and cats that fuse with nothing are kernels in the graphs AOTAutograd
hands `torch.compile`'s backend (`fuse{lone-copies=true}`,
`fuse-concat-exits{lone-copies=true}`), as Inductor makes them, rather than a
PyTorch call each: `nn.TransformerEncoderLayer`'s attention output and its
gradients are copied to contiguous memory before the products read them, and
its q/k/v gradients are stacked back by a `cat`. Elsewhere (`fusec.compile`) a
lone copy stays with PyTorch, as one op alone does."""

from __future__ import annotations

import fusec
import torch
import torch._dynamo
from fusec.api.training import clear_compiled_graphs, compiled_graphs
from kernel_counts import top_level_aten
from torch import nn

_COPIES = ("aten::to", "aten::clone", "aten::contiguous", "aten::copy_", "aten::cat")


def _encoder() -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                       batch_first=True)  # fmt: skip
    return layer, torch.randn(2, 8, 32)


def test_an_encoder_layers_copies_are_kernels_in_training():
    layer, x = _encoder()
    want = layer(x)
    want_grads = torch.autograd.grad(want.square().sum(), list(layer.parameters()))
    torch._dynamo.reset()
    clear_compiled_graphs()
    f = torch.compile(layer, backend="fusec")
    got = f(x)
    grads = torch.autograd.grad(got.square().sum(), list(layer.parameters()))
    torch.testing.assert_close(got, want)
    for g, w in zip(grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    box = {}
    forward = top_level_aten(lambda: box.__setitem__("out", f(x)))
    out = box["out"]
    backward = top_level_aten(lambda: out.square().sum().backward())
    # The loss's own `aten::` calls (square, sum, their backward) run eagerly.
    assert not [k for k in forward if k in _COPIES], forward
    assert not [k for k in backward if k in _COPIES], backward
    assert all(g.launches_per_call > 0 for g in compiled_graphs())


def test_a_lone_copy_stays_with_pytorch_in_fusec_compile():
    def f(x):
        return x.transpose(0, 1).contiguous()

    x = torch.randn(4, 6)
    c = fusec.compile(f)
    torch.testing.assert_close(c(x), f(x))
    assert c.launches_per_call == 0
