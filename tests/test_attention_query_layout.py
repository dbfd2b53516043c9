"""A kernel computing attention's query writes it in eager's `[b, t, h, d]`
layout (`attention-query-layout`), so the attention output read back as
`[b, t, h * d]` for the output projection is a view, not a copy: Llama's
rotary attention runs with no `reshape` copy per layer, in training and in
inference, with eager's values and gradients."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from kernel_counts import top_level_aten
from torch import nn

_COPIES = ("aten::reshape", "aten::clone", "aten::contiguous", "aten::copy_", "aten::to")


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class RotaryAttention(nn.Module):
    """Llama's attention: rotary query and key, causal, output projection."""

    def __init__(self, dim: int = 32, heads: int = 4, seq: int = 8):
        super().__init__()
        self.heads = heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        d = dim // heads
        freqs = torch.outer(torch.arange(seq).float(), 1.0 / 10000 ** (torch.arange(0, d, 2) / d))
        angles = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", angles.cos()[None, None])
        self.register_buffer("sin", angles.sin()[None, None])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (
            w(x).view(b, t, self.heads, -1).transpose(1, 2) for w in (self.wq, self.wk, self.wv)
        )
        q = q * self.cos + _rotate_half(q) * self.sin
        k = k * self.cos + _rotate_half(k) * self.sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(b, t, c))


@pytest.mark.parametrize("grad", [False, True], ids=["inference", "training"])
def test_the_attention_output_is_read_as_a_view(grad: bool):
    torch.manual_seed(0)
    m = RotaryAttention()
    x = torch.randn(2, 8, 32)
    torch._dynamo.reset()
    f = torch.compile(m, backend="fusec")
    with torch.enable_grad() if grad else torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(f(x), m(x))
        forward = top_level_aten(lambda: f(x))
    assert not [k for k in forward if k in _COPIES], forward
    assert (
        forward["aten::_scaled_dot_product_flash_attention_for_cpu"]
        + forward["aten::scaled_dot_product_attention"]
        == 1
    ), forward
    if grad:
        xg = x.clone().requires_grad_()
        want = torch.autograd.grad(m(xg).square().sum(), [xg, *m.parameters()])
        got = torch.autograd.grad(f(xg).square().sum(), [xg, *m.parameters()])
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
