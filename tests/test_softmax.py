"""Softmax and log-softmax, forward and backward, against eager PyTorch at
`torch.testing.assert_close`'s default tolerances: f32/f64/f16/bf16, tiny, unit and
large inputs, masked (-inf) entries and rows that are all -inf (eager gives NaN
there, and so must the kernel), odd row lengths, and reductions over a dim that is
not the last. Each forward is one fused kernel (so the kernel, not a fallback, is
what is compared); each backward runs the compiled backward graph."""

from __future__ import annotations

from collections.abc import Callable

import fusec
import pytest
import torch
import torch.nn.functional as F
from fusec.api.training import clear_compiled_graphs, compiled_graphs

DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
SCALES = (1e-3, 40.0)
"""Input spread: near-uniform rows, rows where exp spans ~1e35 (the backward tests
take ordinary rows)."""


def _softmax_last(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def _log_softmax_last(x: torch.Tensor) -> torch.Tensor:
    return F.log_softmax(x, dim=-1)


def _softmax_dim1(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, 1)


def _log_softmax_dim0(x: torch.Tensor) -> torch.Tensor:
    return F.log_softmax(x, dim=0)


FORMS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "softmax_last": _softmax_last,
    "log_softmax_last": _log_softmax_last,
    "softmax_dim1": _softmax_dim1,
    "log_softmax_dim0": _log_softmax_dim0,
}


def _inputs(dtype: torch.dtype, scale: float, n: int) -> torch.Tensor:
    """[3, 5, n]: random rows, one row with a masked (-inf) tail, one all -inf."""
    g = torch.Generator().manual_seed(n)
    # The generator is a CPU one, so the values are the same on every device.
    x = torch.randn(3, 5, n, generator=g, dtype=torch.float64, device="cpu") * scale
    x = x.to(torch.get_default_device(), dtype)
    x[0, 1, n // 2 + 1 :] = float("-inf")
    x[1, 2, :] = float("-inf")
    return x


HALF = (torch.float16, torch.bfloat16)
DIMS = {"softmax_last": -1, "log_softmax_last": -1, "softmax_dim1": 1, "log_softmax_dim0": 0}


def assert_matches_eager(
    fn: Callable, x: torch.Tensor, got: torch.Tensor, want: torch.Tensor
) -> None:
    """Default tolerances, except where eager itself is off: ATen's half-precision
    log-softmax keeps each row's sum in the half type (`tmp_sum_scalar` is
    `scalar_t`), so its log is off by up to half an ulp of 1 (`finfo.eps`); there
    fusec must also match the float64 result, rounded, at the default tolerances."""
    if fn in (_log_softmax_last, _log_softmax_dim0) and x.dtype in HALF:
        eps = torch.finfo(x.dtype).eps
        torch.testing.assert_close(got, want, equal_nan=True, atol=eps, rtol=eps)
        exact = fn(x.double()).to(x.dtype)
        torch.testing.assert_close(got, exact, equal_nan=True)
    else:
        torch.testing.assert_close(got, want, equal_nan=True)


@pytest.fixture(autouse=True)
def fresh_graphs() -> None:
    torch._dynamo.reset()
    clear_compiled_graphs()


@pytest.mark.parametrize("n", (1, 33, 1000))
@pytest.mark.parametrize("scale", SCALES, ids=str)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("form", FORMS)
def test_forward_matches_eager(form: str, dtype: torch.dtype, scale: float, n: int) -> None:
    fn = FORMS[form]
    x = _inputs(dtype, scale, n)
    f = fusec.compile(fn)
    with torch.no_grad():
        got, want = f(x), fn(x)
    assert f.launches_per_call == 1
    assert got.dtype == want.dtype
    assert_matches_eager(fn, x, got, want)


@pytest.mark.parametrize("n", (7, 1000))
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("form", FORMS)
def test_backward_matches_eager(form: str, dtype: torch.dtype, n: int) -> None:
    fn = FORMS[form]
    x = _inputs(dtype, 1.0, n)
    grad = torch.randn(x.shape, generator=torch.Generator().manual_seed(1), device="cpu")
    grad = grad.to(x.device, dtype)
    want_x = x.clone().requires_grad_()
    want = fn(want_x)
    want.backward(grad)
    got_x = x.clone().requires_grad_()
    got = fusec.compile(fn)(got_x)
    got.backward(grad)
    assert {g.kind for g in compiled_graphs()} == {"forward", "backward"}
    assert_matches_eager(fn, x, got.detach(), want.detach())
    if dtype in HALF:
        # Eager's half backward rounds each step (`grad * y`, the sum, `grad - sum`)
        # to the half type and cancels there; fusec rounds once, so its gradient
        # must be the backward op in float64 on the same half inputs, rounded.
        backward = (
            torch._log_softmax_backward_data
            if form.startswith("log")
            else torch._softmax_backward_data
        )
        exact = backward(grad.double(), got.detach().double(), DIMS[form], torch.float64)
        torch.testing.assert_close(got_x.grad, exact.to(dtype), equal_nan=True)
    else:
        torch.testing.assert_close(got_x.grad, want_x.grad, equal_nan=True)


def test_half_to_float_and_dtype_argument() -> None:
    """A softmax that returns f32 from f16 input (`dtype=`), at f32's tolerance."""
    x = _inputs(torch.float16, 4.0, 33)
    fn = lambda x: F.softmax(x, dim=-1, dtype=torch.float32)  # noqa: E731
    f = fusec.compile(fn)
    with torch.no_grad():
        got, want = f(x), fn(x)
    assert f.launches_per_call == 1
    torch.testing.assert_close(got, want, equal_nan=True)


def _causal_softmax(att: torch.Tensor) -> torch.Tensor:
    """GPT-2's masked attention weights (`training_models.CausalSelfAttention`)."""
    mask = torch.ones_like(att, dtype=torch.bool).tril()
    return torch.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)


def test_causal_mask_fuses_into_the_softmax_forward_and_backward() -> None:
    """`masked_fill` (as `where`) and the mask's `~` (as `logical_not`) join the
    softmax's kernel in the forward graph and its backward's kernel in the
    backward graph; values and gradients match eager."""
    on = torch.get_default_device()
    att = torch.randn(2, 3, 9, 9, generator=torch.Generator().manual_seed(3), device="cpu").to(on)
    grad = torch.randn(att.shape, generator=torch.Generator().manual_seed(4), device="cpu").to(on)
    want_x = att.clone().requires_grad_()
    want = _causal_softmax(want_x)
    want.backward(grad)
    got_x = att.clone().requires_grad_()
    got = fusec.compile(_causal_softmax)(got_x)
    got.backward(grad)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_x.grad, want_x.grad)
    graphs = {g.kind: g for g in compiled_graphs()}
    assert graphs["forward"].launches_per_call == 1
    assert graphs["backward"].launches_per_call == 1
    fx_ops = [
        str(n.target) for g in graphs.values() for n in g.gm.graph.nodes if n.op == "call_function"
    ]
    assert "aten.masked_fill.Scalar" in fx_ops and "aten.bitwise_not.default" in fx_ops
    assert "aten.tril.default" in fx_ops and "aten.ones_like.default" in fx_ops
    assert "aten.opaque" not in graphs["forward"].function.ir()


def test_masked_fill_that_would_promote_stays_eager() -> None:
    """An integer tensor filled with a float keeps its dtype in eager (2.5 -> 2):
    in the ATen graph of a training call fusec must not make it a promoting
    `where`."""
    x = torch.randn(3, 4, requires_grad=True)
    n = torch.arange(12).reshape(3, 4)
    fn = lambda x, n, m: x * n.masked_fill(m, 2.5)  # noqa: E731
    got = fusec.compile(fn)(x, n, n % 3 == 0)
    got.sum().backward()
    assert {g.kind for g in compiled_graphs()} == {"forward", "backward"}
    want = fn(x, n, n % 3 == 0)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(x.grad, n.masked_fill(n % 3 == 0, 2).float())


def test_causal_mask_fuses_into_the_softmax_of_a_torch_level_graph() -> None:
    """Without grad the graph is torch-level (`Tensor.masked_fill`, `operator.invert`):
    the scale, the mask's `~` and the fill join the softmax's kernel there too."""
    on = torch.get_default_device()
    att = torch.randn(2, 3, 9, 9, generator=torch.Generator().manual_seed(5), device="cpu").to(on)

    def fn(a: torch.Tensor) -> torch.Tensor:
        return _causal_softmax(a * 0.125)

    f = fusec.compile(fn)
    with torch.no_grad():
        got, want = f(att), fn(att)
    torch.testing.assert_close(got, want)
    assert f.launches_per_call == 1
    assert "aten.where" in f.ir() and "aten.logical_not" in f.ir()
    # the mask itself (ones_like + tril) is positions compared in the kernel
    assert "aten.opaque" not in f.ir() and "aten.positions" in f.ir()


@pytest.mark.parametrize(
    "name, fn",
    [
        # in place, through the method, with a bool mask built in the graph
        ("in_place", lambda x, m: x.clone().masked_fill_(m > 0, -1.0) * 2),
        ("function", lambda x, m: torch.masked_fill(x, m > 0, 3) + 1),
        # integer `~` is bitwise: not `logical_not`
        ("int_invert", lambda x, m: (~(m > 0)).float() + (~m.long()).float()),
        # would promote: stays opaque, and eager keeps the integer dtype
        ("promote", lambda x, m: m.long().masked_fill(m > 0, 2.5) * 3),
        # a tensor value: opaque
        ("tensor_value", lambda x, m: x.masked_fill(m > 0, x[0, 0]) * 2),
    ],
)
def test_torch_level_masked_fill_and_invert_match_eager(name, fn) -> None:
    gen = torch.Generator().manual_seed(6)
    x = torch.randn(5, 7, generator=gen, device="cpu").to(torch.get_default_device())
    m = torch.randn(5, 7, generator=gen, device="cpu").to(torch.get_default_device())
    f = fusec.compile(fn)
    with torch.no_grad():
        got, want = f(x, m), fn(x, m)
    assert got.dtype == want.dtype, name
    torch.testing.assert_close(got, want)
