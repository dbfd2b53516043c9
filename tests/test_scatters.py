"""Embedding tables' gradients are kernels (`fuse-scatters`,
`fusec.passes.lowering.scatter`): no `aten::embedding_dense_backward` call per
backward, and a tied table's two gradients one kernel (no `aten::add`), with
eager's gradients: repeated ids, a padding row, int32 ids, eager's bits in
bf16, and the table's rows split over threads."""

from __future__ import annotations

import fusec
import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from fusec.codegen.pipelines import compile_pipeline
from fusec.runtime import cpu
from kernel_counts import top_level_aten
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx


class TiedTable(nn.Module):
    """GPT-2's: token rows plus learned positions, a LayerNorm, and the output
    projection by the token table itself (its gradient is the product's plus
    the lookup's)."""

    def __init__(self, rows: int = 50, width: int = 16, padding_idx: int | None = None) -> None:
        super().__init__()
        self.tok = nn.Embedding(rows, width, padding_idx=padding_idx)
        self.pos = nn.Embedding(128, width)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]).unsqueeze(0))
        return F.linear(F.layer_norm(h, h.shape[-1:]), self.tok.weight)


class OwnTables(nn.Module):
    """BERT's: word rows (a padding row) plus token types, then a LayerNorm."""

    def __init__(self, rows: int = 50, width: int = 16) -> None:
        super().__init__()
        self.tok = nn.Embedding(rows, width, padding_idx=0)
        self.types = nn.Embedding(2, width)

    def forward(self, ids: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(self.tok(ids) + self.types(types), (self.tok.embedding_dim,)).tanh()


def _ids(dtype: torch.dtype = torch.int64, rows: int = 50, shape=(3, 7)) -> torch.Tensor:
    ids = torch.randint(0, rows, shape, dtype=dtype)
    ids[0, :4] = 5  # a row many tokens add to
    ids[1, 1] = 0  # the padding row, where there is one
    return ids


CASES = {
    "tied": (lambda: TiedTable(), lambda: (_ids(),)),
    "tied_int32_padding": (lambda: TiedTable(padding_idx=5), lambda: (_ids(torch.int32),)),
    "own_tables": (
        lambda: OwnTables(),
        lambda: (_ids(), torch.randint(0, 2, (3, 7))),
    ),
}


def _train(make, args, dtype=torch.float32, **tol):
    """(compiled model's gradients, eager's, the compiled step's backward ATen calls)."""
    torch.manual_seed(0)
    model = make().to(dtype)
    args = args()
    twin = make().to(dtype)
    twin.load_state_dict(model.state_dict())
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    for _ in range(2):  # the second step runs the compiled graphs as cached
        model.zero_grad()
        out = compiled(*args)
        grad = torch.randn_like(out)
        calls = top_level_aten(lambda out=out, grad=grad: out.backward(grad))
        twin.zero_grad()
        want = twin(*args)
        want.backward(grad)
        torch.testing.assert_close(out, want, **tol)
        for (name, p), q in zip(model.named_parameters(), twin.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, **tol, msg=lambda m, n=name: f"{n}: {m}")
    return calls


@pytest.mark.parametrize("name", list(CASES))
def test_table_gradients_are_kernels(name: str):
    make, args = CASES[name]
    calls = _train(make, args)
    assert calls["aten::embedding_dense_backward"] == 0, calls
    # The tied table's two gradients are added in the scatter kernel.
    assert calls["aten::add"] == 0, calls


def test_a_padding_row_gets_no_gradient():
    torch.manual_seed(0)
    model = OwnTables()
    ids, types = _ids(), torch.zeros(3, 7, dtype=torch.int64)
    torch._dynamo.reset()
    torch.compile(model, backend="fusec")(ids, types).sum().backward()
    assert model.tok.weight.grad[0].abs().max() == 0
    assert model.tok.weight.grad[5].abs().max() > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_kernel_adds_in_eagers_order(dtype: torch.dtype):
    """On an ATen graph of the op and a tied table's add: the same bits as
    eager's, in bf16 too, where each add rounds (20 tokens add to row 7), and
    the padding row 3 stays 0."""

    def f(d, ids, mm):  # type: ignore[no-untyped-def]
        return mm + torch.ops.aten.embedding_dense_backward(d, ids, 50, 3, False)

    torch.manual_seed(0)
    d, mm = torch.randn(4, 64, 16, dtype=dtype), torch.randn(50, 16, dtype=dtype)
    ids = torch.randint(0, 50, (4, 64))
    ids[0, :20] = 7
    ids[1, :5] = 3
    compiled = fusec.compile(make_fx(f)(d, ids, mm))
    got = compiled(d, ids, mm)
    got = got[0] if isinstance(got, tuple | list) else got
    assert torch.equal(got, f(d, ids, mm))
    assert torch.equal(got[3], mm[3])
    calls = top_level_aten(lambda: compiled(d, ids, mm))
    assert calls["aten::embedding_dense_backward"] == 0 and calls["aten::add"] == 0, calls


def test_rows_split_over_threads(monkeypatch: pytest.MonkeyPatch):
    """A table large enough that the executor splits its rows over threads:
    each thread walks every id and adds only to its own rows."""
    splits: list[tuple[int, int]] = []
    split_range = cpu._split_range

    def spy(n: int, want: int):  # type: ignore[no-untyped-def]
        chunks = split_range(n, want)
        splits.append((n, len(chunks)))
        return chunks

    monkeypatch.setattr(cpu, "_split_range", spy)
    threads = torch.get_num_threads()
    torch.set_num_threads(4)
    try:
        calls = _train(
            lambda: TiedTable(rows=3000, width=64),
            lambda: (_ids(rows=3000, shape=(16, 128)),),
            atol=1e-4,
            rtol=1e-4,
        )
    finally:
        torch.set_num_threads(threads)
    assert calls["aten::embedding_dense_backward"] == 0, calls
    assert any(n == 3000 and chunks > 1 for n, chunks in splits), splits


def test_gradients_scaled_by_frequency_run_through_pytorch():
    class Scaled(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.Embedding(50, 16, scale_grad_by_freq=True)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.tok(ids).sigmoid()

    calls = _train(Scaled, lambda: (_ids(),))
    assert calls["aten::embedding_dense_backward"] == 1, calls


def test_cuda_pipelines_leave_gradients_to_pytorch():
    """Only CPU kernels scatter (the GPU lowering refuses the op)."""
    assert ",fuse-scatters," in compile_pipeline("cpu")
    assert "fuse-scatters" not in compile_pipeline("cuda")
