"""Small models in plain torch for the training tests and benchmark: each
`make_*` returns (module, example inputs, loss function of the outputs)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from reference_models import lstm_cell
from torch import nn

Loss = Callable[[Any], torch.Tensor]


class LSTMLoop(nn.Module):
    """The seeds' LSTM: the usual cell (two matmuls, two biases, one chunk, the
    gate tail) unrolled over `steps` time steps with shared weights."""

    def __init__(self, input_size: int, hidden: int, steps: int):
        super().__init__()
        k = 1.0 / math.sqrt(hidden)
        self.w_ih = nn.Parameter(torch.empty(4 * hidden, input_size).uniform_(-k, k))
        self.w_hh = nn.Parameter(torch.empty(4 * hidden, hidden).uniform_(-k, k))
        self.b_ih = nn.Parameter(torch.empty(4 * hidden).uniform_(-k, k))
        self.b_hh = nn.Parameter(torch.empty(4 * hidden).uniform_(-k, k))
        self.steps = steps

    def forward(self, xs: torch.Tensor, hx: torch.Tensor, cx: torch.Tensor) -> torch.Tensor:
        for t in range(self.steps):
            hx, cx = lstm_cell(xs[t], hx, cx, self.w_ih, self.w_hh, self.b_ih, self.b_hh)
        return hx


class MLP(nn.Module):
    def __init__(self, sizes: tuple[int, ...] = (32, 64, 64, 10)):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:], strict=True)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = torch.relu(layer(x))
        return self.layers[-1](x)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int, causal: bool):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.heads = heads
        self.causal = causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        if self.causal:
            mask = torch.ones_like(att, dtype=torch.bool).tril()  # traceable by torch.fx
            att = att.masked_fill(~mask, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        return self.proj(y)


class GPT2Block(nn.Module):
    """Pre-norm block: LayerNorm, causal attention, LayerNorm, GELU (tanh) MLP."""

    def __init__(self, dim: int = 32, heads: int = 4):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, causal=True)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.proj = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaBlock(nn.Module):
    """RMSNorm, causal attention with rotary embeddings, RMSNorm, SwiGLU MLP."""

    def __init__(self, dim: int = 32, heads: int = 4, seq: int = 8):
        super().__init__()
        self.heads = heads
        self.norm_1 = RMSNorm(dim)
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.norm_2 = RMSNorm(dim)
        self.w1 = nn.Linear(dim, 2 * dim, bias=False)
        self.w3 = nn.Linear(dim, 2 * dim, bias=False)
        self.w2 = nn.Linear(2 * dim, dim, bias=False)
        half = dim // heads // 2
        freqs = 1.0 / (10000 ** (torch.arange(half, dtype=torch.float32) / half))
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), freqs)
        self.register_buffer("cos", angles.cos())
        self.register_buffer("sin", angles.sin())

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([x1 * self.cos - x2 * self.sin, x1 * self.sin + x2 * self.cos], dim=-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        h = self.norm_1(x)
        q = self.wq(h).view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = self.wk(h).view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = self.wv(h).view(b, t, self.heads, c // self.heads).transpose(1, 2)
        q, k = self.rotate(q), self.rotate(k)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.wo(att.transpose(1, 2).reshape(b, t, c))
        h = self.norm_2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class ViTBlock(nn.Module):
    """Patch embedding (a linear over flattened patches), a class token, position
    embeddings, one pre-norm encoder block (GELU MLP), and a linear head."""

    def __init__(self, patch: int = 4, image: int = 8, dim: int = 32, heads: int = 4):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(3 * patch * patch, dim)
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, causal=False)
        self.ln_2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)
        self.head = nn.Linear(dim, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        b, c, hgt, wid = images.shape
        p = self.patch
        patches = images.view(b, c, hgt // p, p, wid // p, p).permute(0, 2, 4, 1, 3, 5)
        x = self.embed(patches.reshape(b, (hgt // p) * (wid // p), c * p * p))
        x = torch.cat([self.cls.expand(b, -1, -1), x], dim=1) + self.pos
        x = x + self.attn(self.ln_1(x))
        x = x + self.fc2(F.gelu(self.fc1(self.ln_2(x))))
        return self.head(x[:, 0])


class ConvNet(nn.Module):
    """Conv, batch norm (train mode: running stats update), ReLU, twice; pooling; linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)) + x)
        return self.fc(x.mean(dim=(2, 3)))


def _classification(n: int) -> tuple[torch.Tensor, Loss]:
    target = torch.randint(0, 10, (n,))
    return target, lambda out: F.cross_entropy(out, target)


def make_lstm(batch: int = 4, hidden: int = 16, steps: int = 8) -> tuple[nn.Module, tuple, Loss]:
    model = LSTMLoop(hidden, hidden, steps)
    inputs = (
        torch.randn(steps, batch, hidden),
        torch.randn(batch, hidden),
        torch.randn(batch, hidden),
    )
    return model, inputs, lambda hy: hy.square().mean()


def make_mlp(
    batch: int = 16, sizes: tuple[int, ...] = (32, 64, 64, 10)
) -> tuple[nn.Module, tuple, Loss]:
    _, loss = _classification(batch)
    return MLP(sizes), (torch.randn(batch, sizes[0]),), loss


def make_gpt2(batch: int = 2, seq: int = 8, dim: int = 32) -> tuple[nn.Module, tuple, Loss]:
    return GPT2Block(dim), (torch.randn(batch, seq, dim),), lambda y: y.square().mean()


def make_llama(batch: int = 2, seq: int = 8, dim: int = 32) -> tuple[nn.Module, tuple, Loss]:
    return LlamaBlock(dim, seq=seq), (torch.randn(batch, seq, dim),), lambda y: y.square().mean()


def make_vit(batch: int = 4) -> tuple[nn.Module, tuple, Loss]:
    _, loss = _classification(batch)
    return ViTBlock(), (torch.randn(batch, 3, 8, 8),), loss


def make_convnet(batch: int = 4) -> tuple[nn.Module, tuple, Loss]:
    _, loss = _classification(batch)
    return ConvNet(), (torch.randn(batch, 3, 8, 8),), loss


MODELS: dict[str, Callable[[], tuple[nn.Module, tuple, Loss]]] = {
    "lstm": make_lstm,
    "mlp": make_mlp,
    "gpt2": make_gpt2,
    "llama": make_llama,
    "vit": make_vit,
    "convnet": make_convnet,
}
