"""Written-out attention runs as PyTorch's fused attention (`raise-attention`):
every result is checked against eager on the same inputs, and the ATen calls
say which form ran (`aten::scaled_dot_product_attention`, no `bmm`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import fusec
import pytest
import torch
from fusec.api.backend import dynamo_graphs
from kernel_counts import top_level_aten
from torch import nn


def scaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.transpose(-2, -1) * (1.0 / math.sqrt(q.shape[-1])), dim=-1) @ v


def divided_masked(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    s = torch.matmul(q, k.permute(0, 1, 3, 2)) / 8.0 + mask
    return torch.matmul(torch.softmax(s, dim=3), v)


def unscaled(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.softmax(q @ k.mT, dim=-1) @ v


def causal(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    att = q @ k.transpose(-2, -1) * 0.25
    mask = torch.ones_like(att, dtype=torch.bool).tril()
    return torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1) @ v


def causal_kept(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    att = q @ k.transpose(-2, -1) * 0.25
    keep = torch.ones_like(att, dtype=torch.bool).tril()
    return torch.softmax(torch.where(keep, att, float("-inf")), dim=-1) @ v


def off_by_one_mask(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    att = q @ k.transpose(-2, -1) * 0.25
    mask = torch.ones_like(att, dtype=torch.bool).tril(1)
    return torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1) @ v


def probabilities_returned(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    p = torch.softmax(q @ k.transpose(-2, -1) * 0.25, dim=-1)
    return p @ v, p


def _inputs(
    dtype: torch.dtype, batch: tuple[int, ...] = (2, 3), queries: int = 7
) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(*batch, queries, 16, generator=g, dtype=dtype)
    k = torch.randn(*batch, 5, 16, generator=g, dtype=dtype)
    v = torch.randn(*batch, 5, 8, generator=g, dtype=dtype)
    return [q, k, v]


def _fused(calls: Any) -> bool:
    return calls["aten::scaled_dot_product_attention"] == 1 and not (
        calls["aten::bmm"] or calls["aten::matmul"] or calls["aten::softmax"]
    )


CASES: list[tuple[str, Callable[..., Any], bool]] = [
    ("scaled", scaled, True),
    ("divided_masked", divided_masked, True),
    ("unscaled", unscaled, True),
    ("causal", causal, True),
    ("causal_kept", causal_kept, True),
    ("off_by_one_mask", off_by_one_mask, False),
    ("probabilities_returned", probabilities_returned, False),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize(("name", "fn", "raised"), CASES, ids=[c[0] for c in CASES])
def test_written_out_attention_runs_fused_and_equals_eager(
    name: str, fn: Callable[..., Any], raised: bool, dtype: torch.dtype
) -> None:
    # Causal cases have fewer queries than keys: the mask is aligned top left.
    args = _inputs(dtype, queries=3 if "causal" in name or "mask" in name else 7)
    if name == "divided_masked":
        args.append(torch.randn(3, 5, dtype=dtype))
    f = fusec.compile(fn, program_cache=False)
    f(*args)
    calls = top_level_aten(lambda: f(*args))
    assert _fused(calls) == raised, calls
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {}
    torch.testing.assert_close(f(*args), fn(*args), **tol)


def test_half_precision_attention_stays_written_out() -> None:
    args = _inputs(torch.bfloat16)
    f = fusec.compile(scaled, program_cache=False)
    f(*args)
    calls = top_level_aten(lambda: f(*args))
    assert not _fused(calls), calls
    torch.testing.assert_close(f(*args), scaled(*args), rtol=2e-2, atol=2e-2)


def test_broadcast_batch_dims_equal_eager() -> None:
    q, k, v = _inputs(torch.float32)
    k, v = k[:1], v[:, :1]  # [1, 3, 5, 16] and [2, 1, 5, 8]
    f = fusec.compile(scaled, program_cache=False)
    f(q, k, v)
    calls = top_level_aten(lambda: f(q, k, v))
    assert _fused(calls), calls
    torch.testing.assert_close(f(q, k, v), scaled(q, k, v), rtol=1e-5, atol=1e-5)


class Block(nn.Module):
    """A GPT-2 block's attention, written out (as `benchmarks/reductions.py` has it)."""

    def __init__(self, d: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = d // self.heads
        q, k, v = (
            y.view(b, t, self.heads, h).transpose(1, 2) for y in self.qkv(x).split(d, dim=2)
        )
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / h**0.5), dim=-1)
        return x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


def test_a_blocks_attention_through_torch_compile_is_fused() -> None:
    torch.manual_seed(0)
    block = Block().eval()
    x = torch.randn(2, 6, 32)
    compiled = torch.compile(block, backend="fusec", dynamic=False)
    with torch.no_grad():
        compiled(x)
        calls = top_level_aten(lambda: compiled(x))
        assert _fused(calls), calls
        torch.testing.assert_close(compiled(x), block(x), rtol=1e-5, atol=1e-5)
    assert "aten.scaled_dot_product_attention" in dynamo_graphs()[-1].ir()


@pytest.mark.parametrize("decomposed", [False, True], ids=["export", "core_aten"])
def test_an_exported_blocks_attention_is_fused(decomposed: bool) -> None:
    """torch.export's program, and its core-ATen form (each product a `bmm` of
    flattened, cloned operands), run the same fused attention."""
    torch.manual_seed(0)
    block = Block().eval()
    x = torch.randn(2, 6, 32)
    with torch.no_grad():
        ep = torch.export.export(block, (x,))
        f = fusec.compile(ep.run_decompositions() if decomposed else ep)
        f(x)
        calls = top_level_aten(lambda: f(x))
        assert _fused(calls), calls
        assert calls["aten::clone"] == 0, calls
        torch.testing.assert_close(f(x), block(x), rtol=1e-5, atol=1e-5)


def test_a_causal_gpt2_blocks_attention_is_fused() -> None:
    """The training tests' GPT-2 block (`benchmarks/training.py`'s): its causal
    mask, `ones_like(att, dtype=bool).tril()` filled with -inf, is `is_causal`."""
    from training_models import make_gpt2

    torch.manual_seed(0)
    block, (x,), _ = make_gpt2(2, 8, 32)
    block.eval()
    with torch.no_grad():
        for f in (fusec.compile(block), torch.compile(block, backend="fusec", dynamic=False)):
            f(x)
            calls = top_level_aten(lambda f=f: f(x))
            assert _fused(calls), calls
            torch.testing.assert_close(f(x), block(x), rtol=1e-5, atol=1e-5)

def test_training_through_a_written_out_attention_keeps_eager_gradients() -> None:
    torch.manual_seed(0)
    block = Block()
    reference = Block()
    reference.load_state_dict(block.state_dict())
    x = torch.randn(2, 6, 32)
    compiled = torch.compile(block, backend="fusec", dynamic=False)
    compiled(x).square().sum().backward()
    reference(x).square().sum().backward()
    for (name, p), r in zip(block.named_parameters(), reference.parameters(), strict=True):
        assert p.grad is not None and r.grad is not None
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5, msg=name)
