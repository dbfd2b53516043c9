"""`tril`/`triu` (as positions compared in a kernel) and `full_like`/`ones_like`/
`zeros_like` (a kernel constant) against eager, torch-level and ATen-level."""

from __future__ import annotations

import fusec
import pytest
import torch
from fusec.api.training import compiled_graphs

_TRIANGLES = {
    "tril": lambda x: torch.tril(x) * 2,
    "triu_1": lambda x: x.triu(1) + 1,
    "tril_minus_2": lambda x: torch.tril(x, -2) - x,
    "triu_5": lambda x: torch.triu(x, diagonal=5) * x,  # past the last column: all 0
    "tril_bool": lambda x: (x > 0).tril().float() + x,
    "tril_int": lambda x: (x * 10).long().tril(1) * 3,
    "mask_fill": lambda x: x.masked_fill(~torch.ones_like(x, dtype=torch.bool).tril(), -1e9),
}
_SHAPES = [(5, 7), (7, 5), (3, 4, 4), (2, 3, 6, 6), (1, 9)]


def _dev() -> torch.device:
    return torch.get_default_device()


@pytest.mark.parametrize("name", sorted(_TRIANGLES))
def test_triangles_match_eager(name: str) -> None:
    fn = _TRIANGLES[name]
    f = fusec.compile(fn)
    g = torch.Generator().manual_seed(1)
    for shape in _SHAPES:
        x = torch.randn(shape, generator=g, device="cpu").to(_dev())
        got, want = f(x), fn(x)
        assert got.dtype == want.dtype, (name, shape)
        torch.testing.assert_close(got, want)
        assert f.launches_per_call == 1, (name, shape)
        assert "aten.opaque" not in f.ir(), (name, shape)


def test_tril_of_a_transposed_and_of_a_broadcast_input() -> None:
    """The positions follow the tensor's logical dims, not its memory."""
    fn = lambda x, b: torch.tril(x.transpose(-1, -2) + b)  # noqa: E731
    f = fusec.compile(fn)
    x = torch.randn(2, 6, 4).to(_dev())
    b = torch.randn(1, 6).to(_dev())
    torch.testing.assert_close(f(x, b), fn(x, b))


_FILLS = {
    "ones_like": lambda x: torch.ones_like(x) + x,
    "zeros_like_f64": lambda x: torch.zeros_like(x, dtype=torch.float64) + x,
    "full_like": lambda x: torch.full_like(x, 2.5) * x,
    "full_like_int": lambda x: torch.full_like(x, 7, dtype=torch.int32) * 2,
    "full_like_bool": lambda x: torch.logical_and(torch.full_like(x, True, dtype=torch.bool), x > 0),
    "full_like_inf": lambda x: torch.maximum(torch.full_like(x, float("-inf")), x),
    "ones_like_transposed": lambda x: torch.ones_like(x.t()) * 3,
}


@pytest.mark.parametrize("name", sorted(_FILLS))
def test_fills_match_eager(name: str) -> None:
    fn = _FILLS[name]
    f = fusec.compile(fn)
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(2), device="cpu").to(_dev())
    got, want = f(x), fn(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want)
    assert "aten.opaque" not in f.ir()


def test_fills_that_stay_opaque_still_run() -> None:
    """Another device or `requires_grad` is PyTorch's business."""
    fn = lambda x: torch.ones_like(x, device="meta").shape[0] + torch.zeros_like(x) + x  # noqa: E731
    f = fusec.compile(fn)
    x = torch.randn(3, 4).to(_dev())
    torch.testing.assert_close(f(x), fn(x))
    g = fusec.compile(lambda x: torch.ones_like(x, requires_grad=True) * x)
    out = g(x)
    torch.testing.assert_close(out, x)


def test_tril_and_fills_in_a_training_graph() -> None:
    """AOTAutograd's ATen graph (`aten.tril.default`, `aten.ones_like.default`,
    `aten.full_like.default`): forward and gradient match eager, no op opaque."""

    def fn(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        att = x @ w
        keep = torch.ones_like(att, dtype=torch.bool).tril()
        y = torch.softmax(att.masked_fill(~keep, float("-inf")), -1)
        return (torch.triu(y, 1) + torch.full_like(y, 0.5)).tril() * y

    g = torch.Generator().manual_seed(3)
    x0 = torch.randn(2, 6, 6, generator=g, device="cpu")
    w0 = torch.randn(6, 6, generator=g, device="cpu")
    x, w = x0.clone().to(_dev()).requires_grad_(), w0.clone().to(_dev()).requires_grad_()
    xr, wr = x0.clone().to(_dev()).requires_grad_(), w0.clone().to(_dev()).requires_grad_()
    got = fusec.compile(fn)(x, w)
    want = fn(xr, wr)
    torch.testing.assert_close(got, want)
    got.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(x.grad, xr.grad)
    torch.testing.assert_close(w.grad, wr.grad)
    graphs = {c.kind: c for c in compiled_graphs()}
    fx = [str(n.target) for n in graphs["forward"].gm.graph.nodes if n.op == "call_function"]
    assert "aten.tril.default" in fx and "aten.ones_like.default" in fx
    assert "aten.opaque" not in graphs["forward"].function.ir()


def test_dynamic_shapes_through_torch_compile() -> None:
    """Dynamo's symbolic sizes: the positions take the runtime sizes."""
    fn = lambda x: torch.softmax(x.masked_fill(~torch.ones_like(x, dtype=torch.bool).tril(), float("-inf")), -1)  # noqa: E731
    c = torch.compile(fn, backend="fusec", dynamic=True)
    for n in (5, 8, 13):
        x = torch.randn(2, n, n).to(_dev())
        torch.testing.assert_close(c(x), fn(x))
