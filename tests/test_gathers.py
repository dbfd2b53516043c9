"""Embedding lookups read by a kernel are gathered in it (`fuse-gathers`,
`fusec.passes.lowering.gather`): no `aten::embedding` call per call, in
AOTAutograd's graphs (training) and Dynamo's torch-level graphs (inference),
through pointwise and reduction kernels, with eager's values and gradients;
indices out of range raise eager's `IndexError`, and a table that is not
contiguous runs the ops unfused."""

from __future__ import annotations

import fusec
import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from kernel_counts import top_level_aten
from torch import nn


class TokensAndPositions(nn.Module):
    """GPT-2's embeddings: token rows plus learned positions, then a LayerNorm
    (a reduction kernel reads the rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(20, 8)
        self.pos = nn.Embedding(16, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.tok(ids) + self.pos(torch.arange(ids.shape[1]).unsqueeze(0))
        return F.layer_norm(h, h.shape[-1:]).sigmoid()


class RowsSaved(nn.Module):
    """Llama's: the rows go to an RMSNorm and on as the residual (AOTAutograd
    saves them for the norm's backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(20, 8)
        self.w = nn.Parameter(torch.randn(8))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.tok(ids)
        normed = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
        return h + normed.tanh()


class Pointwise(nn.Module):
    """Rows read by a pointwise kernel only; int32 indices."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(20, 8)

    def forward(self, ids: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return (self.tok(ids) * x).sigmoid()


def _ids(dtype: torch.dtype = torch.int64) -> torch.Tensor:
    return torch.randint(0, 20, (3, 5), dtype=dtype)


CASES = {
    "positions": (TokensAndPositions, lambda: (_ids(),)),
    "rows_saved": (RowsSaved, lambda: (_ids(),)),
    "pointwise_int32": (Pointwise, lambda: (_ids(torch.int32), torch.randn(3, 5, 8))),
}


def _compiled(name: str) -> tuple[nn.Module, object, tuple[torch.Tensor, ...]]:
    make, args = CASES[name]
    torch.manual_seed(0)
    model = make()
    torch._dynamo.reset()
    return model, torch.compile(model, backend="fusec"), args()


@pytest.mark.parametrize("name", list(CASES))
def test_lookups_are_gathered_in_training(name):
    model, compiled, args = _compiled(name)
    out = compiled(*args)
    out.square().sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = model(*args)
    want.square().sum().backward()
    torch.testing.assert_close(out, want)
    for g, p in zip(got, model.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad)
    calls = top_level_aten(lambda: compiled(*args))
    assert calls["aten::embedding"] == 0, calls


@pytest.mark.parametrize("name", list(CASES))
def test_lookups_are_gathered_in_inference(name):
    model, compiled, args = _compiled(name)
    with torch.no_grad():
        torch.testing.assert_close(compiled(*args), model(*args))
        calls = top_level_aten(lambda: compiled(*args))
    assert calls["aten::embedding"] == 0, calls


@pytest.mark.parametrize("grad", [False, True], ids=["inference", "training"])
@pytest.mark.parametrize("bad", [20, 1000, -1])
def test_an_index_out_of_range_raises_as_eager(grad: bool, bad: int):
    model, compiled, (ids,) = _compiled("positions")
    with torch.enable_grad() if grad else torch.no_grad():
        torch.testing.assert_close(compiled(ids), model(ids))  # compiled, kernels run
        wrong = ids.clone()
        wrong[1, 2] = bad
        with pytest.raises(IndexError):
            model(wrong)
        with pytest.raises(IndexError, match="index out of range"):
            compiled(wrong)
        torch.testing.assert_close(compiled(ids), model(ids))  # the flag starts clear


def test_a_table_that_is_not_contiguous_runs_unfused():
    """The kernel reads row `i` at `i * row size`: the guard sends a strided
    table to the unfused ops, which gather through PyTorch."""

    class Strided(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table = nn.Parameter(torch.randn(8, 20))

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return F.embedding(ids, self.table.t()).sigmoid()

    torch.manual_seed(0)
    model, ids = Strided(), _ids()
    f = fusec.compile(model)
    with torch.no_grad():
        torch.testing.assert_close(f(ids), model(ids))
        calls = top_level_aten(lambda: f(ids))
    assert calls["aten::embedding"] == 1, calls


def test_a_table_written_after_the_lookup_keeps_the_rows_it_had():
    """A write to the table between the lookup and its reader: the lookup stays
    before the write (`fuse-gathers` does not move it past an `aten.copy_`)."""
    import copy

    class Writes(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("table", torch.randn(20, 8))

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            rows = F.embedding(ids, self.table)
            self.table.mul_(2.0)
            return (rows * 3.0).sigmoid()

    torch.manual_seed(0)
    model, ids = Writes(), _ids()
    twin = copy.deepcopy(model)
    torch._dynamo.reset()
    compiled = torch.compile(twin, backend="fusec")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(ids), model(ids))
            torch.testing.assert_close(twin.table, model.table)


class TwoTables(nn.Module):
    """BERT's: word rows plus token-type rows in one LayerNorm kernel."""

    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(20, 8)
        self.types = nn.Embedding(2, 8)

    def forward(self, ids: torch.Tensor, types: torch.Tensor) -> torch.Tensor:
        h = self.tok(ids) + self.types(types)
        return F.layer_norm(h, h.shape[-1:]).sigmoid()


@pytest.mark.parametrize("which", ["tokens", "types"])
def test_either_of_two_lookups_out_of_range_raises(which: str):
    """A kernel's lookups share one flag test per element (`gather._flag_if`:
    one branch, which LLVM unswitches): an index out of range in either raises."""
    torch.manual_seed(0)
    model = TwoTables()
    ids, types = _ids(), torch.randint(0, 2, (3, 5))
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids, types), model(ids, types))
        assert top_level_aten(lambda: compiled(ids, types))["aten::embedding"] == 0
        wrong_ids, wrong_types = ids.clone(), types.clone()
        if which == "tokens":
            wrong_ids[2, 4] = 20
        else:
            wrong_types[0, 0] = 2
        with pytest.raises(IndexError, match="index out of range"):
            compiled(wrong_ids, wrong_types)
        torch.testing.assert_close(compiled(ids, types), model(ids, types))


def _rows_normed(w: torch.Tensor, table: torch.Tensor, ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Llama's lookup and RMSNorm, the rows returned too (one reduction kernel)."""
    e = F.embedding(ids, table)
    r = torch.rsqrt(e.pow(2).mean(-1, keepdim=True) + 1e-6)
    return w * (e * r), r, e


@pytest.mark.parametrize("one_function", [False, True], ids=["two_functions", "one_function"])
def test_tables_of_other_sizes_get_their_own_kernels(one_function: bool) -> None:
    """A kernel bakes its table's rows and row length in: groups that differ in
    their table's sizes alone must not share one (one compiled for a 100 x 32
    table read a 1000 x 128 one's rows 32 apart, and flagged every id past 99)."""
    torch.manual_seed(0)
    shared = fusec.compile(_rows_normed)
    for rows, width, batch in ((100, 32, 2), (1000, 128, 8), (64, 16, 4)):
        table, w = torch.randn(rows, width), torch.randn(width)
        ids = torch.randint(0, rows, (batch, 8))
        ids[0, 0] = rows - 1  # the last row: out of range for a smaller table's kernel
        f = shared if one_function else fusec.compile(_rows_normed)
        got = f(w, table, ids)
        for g, want in zip(got, _rows_normed(w, table, ids), strict=True):
            torch.testing.assert_close(g, want)
        assert f.launches_per_call == 1, (rows, width)
