"""Small transformer blocks and an MLP in plain torch, for the ATen-level import
tests: GPT-2 style (LayerNorm, fused qkv, causal attention, GELU MLP), Llama
style (RMSNorm, SiLU-gated MLP, rotary-free attention), ViT style (patch
embedding, pre-norm attention, GELU MLP)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


def attention(q, k, v, heads: int, causal: bool):
    b, t, c = q.shape
    q = q.view(b, t, heads, c // heads).transpose(1, 2)
    k = k.view(b, t, heads, c // heads).transpose(1, 2)
    v = v.view(b, t, heads, c // heads).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // heads))
    if causal:
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        att = att.masked_fill(~mask, float("-inf"))
    att = torch.softmax(att, dim=-1)
    y = att @ v
    return y.transpose(1, 2).reshape(b, t, c)


class GPT2Block(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x):
        q, k, v = self.c_attn(self.ln_1(x)).split(x.shape[-1], dim=2)
        x = x + self.c_proj(attention(q, k, v, self.heads, causal=True))
        h = F.gelu(self.fc(self.ln_2(x)), approximate="tanh")
        return x + self.proj(h)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaBlock(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, hidden: int = 64):
        super().__init__()
        self.heads = heads
        self.attn_norm = RMSNorm(dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.mlp_norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        h = self.attn_norm(x)
        x = x + self.wo(attention(self.wq(h), self.wk(h), self.wv(h), self.heads, causal=True))
        h = self.mlp_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class ViTBlock(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4, patch: int = 4, channels: int = 3):
        super().__init__()
        self.heads = heads
        self.patch = nn.Conv2d(channels, dim, patch, stride=patch)
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        x = x + self.proj(attention(q, k, v, self.heads, causal=False))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class MLP(nn.Module):
    def __init__(self, dim: int = 16, hidden: int = 64):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return torch.sigmoid(self.fc2(torch.tanh(self.fc1(x)) * 2.0 + 1.0)) * x


class LSTMCell(nn.Module):
    def __init__(self, inp: int = 16, hidden: int = 8):
        super().__init__()
        self.w_ih = nn.Parameter(torch.randn(4 * hidden, inp))
        self.w_hh = nn.Parameter(torch.randn(4 * hidden, hidden))
        self.b_ih = nn.Parameter(torch.randn(4 * hidden))
        self.b_hh = nn.Parameter(torch.randn(4 * hidden))

    def forward(self, x, hx, cx):
        gates = x @ self.w_ih.t() + self.b_ih + hx @ self.w_hh.t() + self.b_hh
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
        hy = torch.sigmoid(o) * torch.tanh(cy)
        return hy, cy
