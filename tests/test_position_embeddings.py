"""Position ids written as an `arange` (GPT-2's learned positions) look their
rows up as a view of the table (`fusec.frontend.position_embeddings`), in
AOTAutograd's ATen graphs (training) and in Dynamo's torch-level graphs
(inference), with values and gradients equal to eager's. Ids that are not
consecutive rows of the table are gathered (in the kernel reading them,
`fuse-gathers`: no `aten::embedding` call either way), and ids past the table
raise as eager does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fusec
import pytest
import torch
import torch._dynamo
import torch.nn.functional as F
from fusec.api.training import clear_compiled_graphs, compiled_graphs
from kernel_counts import top_level_aten
from torch import nn


class Positions(nn.Module):
    """Token embeddings plus learned positions `ids_of(n)`, then a LayerNorm."""

    def __init__(self, ids_of: Callable[[int], torch.Tensor], rows: int = 16):
        super().__init__()
        self.tok = nn.Embedding(20, 8)
        self.pos = nn.Embedding(rows, 8)
        self.ids_of = ids_of

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = self.ids_of(ids.shape[1]).unsqueeze(0)
        h = self.tok(ids) + self.pos(positions)
        return F.layer_norm(h, h.shape[-1:]).sigmoid()


IDS: dict[str, tuple[Callable[[int], torch.Tensor], bool]] = {
    "arange": (lambda n: torch.arange(n), True),
    "arange + 0": (lambda n: torch.arange(n) + 0, True),  # GPT-2's, at past length 0
    "shifted": (lambda n: torch.arange(n) + 3, True),
    "from 2": (lambda n: torch.arange(2, 2 + n), True),
    "step 2": (lambda n: torch.arange(0, 2 * n, 2), False),
    "reversed": (lambda n: torch.arange(n).flip(0), False),
}
"""How the position ids are made, and whether they are consecutive rows."""


def _rows_as_view(ir: str) -> bool:
    """Whether the compiled program reads the position rows as a narrow view of
    the table (`aten.narrow`), not a lookup."""
    return "aten.narrow" in ir


def _compiled(how: str) -> tuple[Positions, Any, torch.Tensor, bool]:
    """The model with ids made `how`, its `torch.compile` with fusec, token ids,
    and whether the position ids are consecutive rows."""
    ids_of, consecutive = IDS[how]
    torch.manual_seed(0)
    model = Positions(ids_of)
    torch._dynamo.reset()
    clear_compiled_graphs()
    return model, torch.compile(model, backend="fusec"), torch.randint(0, 20, (3, 5)), consecutive


@pytest.mark.parametrize("how", list(IDS))
def test_positions_in_training(how):
    model, compiled, ids, consecutive = _compiled(how)
    out = compiled(ids)
    out.sum().backward()
    got = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    want = model(ids)
    want.sum().backward()
    torch.testing.assert_close(out, want)
    for g, p in zip(got, model.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad)
    calls = top_level_aten(lambda: compiled(ids))
    assert calls["aten::embedding"] == 0, calls
    # The ids are made again for the backward rather than saved, and one
    # tensor serves every call (`fusec_partition`, `torch_ops.reusable`).
    assert calls["aten::arange"] == 0, calls
    (forward,) = [g for g in compiled_graphs() if g.kind == "forward"]
    assert _rows_as_view(forward.function.ir()) == consecutive
    if how == "arange + 0":  # the int `+ 0` is the arange itself
        assert calls["aten::add"] == 0


@pytest.mark.parametrize("how", list(IDS))
def test_positions_in_inference(how):
    model, compiled, ids, consecutive = _compiled(how)
    with torch.no_grad():
        torch.testing.assert_close(compiled(ids), model(ids))
        calls = top_level_aten(lambda: compiled(ids))
    assert calls["aten::embedding"] == 0, calls
    assert _rows_as_view(fusec.dynamo_graphs()[-1].ir()) == consecutive


def test_positions_past_the_table_raise_as_eager():
    model = Positions(lambda n: torch.arange(n) + 3, rows=6)
    ids = torch.randint(0, 20, (2, 5))  # rows 3 .. 7 of 6
    with pytest.raises(IndexError):
        model(ids)
    with torch.no_grad(), pytest.raises(IndexError):
        fusec.compile(model)(ids)


class ReturnsRows(nn.Module):
    """Hands the looked-up rows out (through `.to()` of their own device, which
    returns them as they are): eager makes them a new tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.pos = nn.Embedding(16, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = self.pos(torch.arange(x.shape[1])).to(x.device)
        return rows, (x + rows).sigmoid()


def test_rows_handed_out_are_not_a_view_of_the_table():
    torch.manual_seed(0)
    model = ReturnsRows()
    x = torch.randn(2, 5, 8)
    before = model.pos.weight.detach().clone()
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    with torch.no_grad():
        rows, y = compiled(x)
        want_rows, want_y = model(x)
        torch.testing.assert_close(rows, want_rows)
        torch.testing.assert_close(y, want_y)
        rows.add_(1.0)  # the caller's tensor: the weights must not change
    torch.testing.assert_close(model.pos.weight.detach(), before)


class RotaryAngles(nn.Module):
    """Llama's rotary angles from position ids made per call, `arange(n) + 0`
    (the cache position at past length 0), read by a kernel, not a lookup."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / 10000 ** (torch.arange(0, 8, 2).float() / 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = (torch.arange(x.shape[1]) + 0).unsqueeze(0)
        angles = positions[:, :, None].float() * self.inv_freq
        return x * torch.cat((angles, angles), dim=-1).cos()


@pytest.mark.parametrize("grad", [False, True], ids=["inference", "training"])
def test_an_integer_plus_zero_of_an_arange_is_the_arange(grad: bool):
    """In Dynamo's torch-level graphs (inference) as in ATen graphs: no `aten::add`."""
    model = RotaryAngles()
    x = torch.randn(2, 5, 8, requires_grad=grad)  # with grad: AOTAutograd's ATen graph
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    with torch.enable_grad() if grad else torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        calls = top_level_aten(lambda: compiled(x))
    assert calls["aten::add"] == 0, calls


def test_an_arange_only_kernels_read_is_made_once():
    """Position ids of constant bounds read only by kernels are one tensor that
    serves every call: no `aten::arange` per call (`torch_ops.reusable`)."""
    model = RotaryAngles()
    x = torch.randn(2, 5, 8)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
        assert top_level_aten(lambda: compiled(x))["aten::arange"] == 0
        torch.testing.assert_close(compiled(x), model(x))


def test_a_returned_arange_is_made_each_call():
    """The caller may write to what the program returns: an `arange` it returns
    (or a view of it) is not shared between calls."""

    def positions(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        ids = torch.arange(x.shape[0])
        return ids, ids.unsqueeze(0), x.sigmoid() * ids.float()[:, None]

    x = torch.randn(4, 3)
    f = fusec.compile(positions)
    first, view, _ = f(x)
    first.add_(5)
    view.add_(7)
    again, view_again, y = f(x)
    torch.testing.assert_close(again, torch.arange(4))
    torch.testing.assert_close(view_again, torch.arange(4).unsqueeze(0))
    torch.testing.assert_close(y, positions(x)[2])
