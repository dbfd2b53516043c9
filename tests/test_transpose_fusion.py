"""Transposes and permutes whose uses are all in a group join it (`fuse`): the
kernel's launch plan works out the view's strides once per input layout, so no
PyTorch call is left on the host per call for them; one op alone behind a view
stays with ATen, and a view also used outside stays outside."""

from __future__ import annotations

import fusec
import torch


def transposed_add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.relu(a.t() + b)


def permuted(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.exp(x.permute(2, 0, 1) * y)


def _host_views(f) -> list[str]:
    """The program's own PyTorch view steps (not those of a guard's fallback)."""
    steps = [ln for ln in f.last.program.describe().splitlines() if ln.startswith("  torch ")]
    return [ln for ln in steps if "transpose" in ln or "permute" in ln]


def test_transpose_runs_inside_the_kernel():
    torch.manual_seed(0)
    f = fusec.compile(transposed_add)
    for a, b in (
        (torch.randn(5, 7), torch.randn(7, 5)),
        (torch.randn(7, 5).t(), torch.randn(7, 5)),  # a already transposed
        (torch.randn(64, 48), torch.randn(48, 1)),  # b broadcast
    ):
        torch.testing.assert_close(f(a, b), transposed_add(a, b))
        assert f.launches_per_call == 1
        assert not _host_views(f), f.last.program.describe()


def test_permute_runs_inside_the_kernel():
    torch.manual_seed(1)
    x, y = torch.randn(2, 3, 4), torch.randn(4, 2, 3)
    f = fusec.compile(permuted)
    torch.testing.assert_close(f(x, y), permuted(x, y))
    assert f.launches_per_call == 1 and not _host_views(f), f.last.program.describe()


def test_a_view_and_one_op_stay_with_aten_and_outside_uses_keep_the_view_outside():
    torch.manual_seed(2)
    a = torch.randn(5, 7)
    alone = fusec.compile(lambda a: torch.relu(a.t()))
    torch.testing.assert_close(alone(a), torch.relu(a.t()))
    assert alone.launches_per_call == 0

    def outside(a):
        t = a.t()
        return torch.relu(torch.exp(t)), t

    f = fusec.compile(outside)
    got, want = f(a), outside(a)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
    assert f.launches_per_call == 1 and _host_views(f), f.last.program.describe()


def test_transposed_gradient_in_training():
    """A transpose inside a group of a training graph: values and gradients match."""
    torch.manual_seed(3)
    a0, b0 = torch.randn(6, 4), torch.randn(4, 6)
    a, b = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    ar, br = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    f = fusec.compile(lambda a, b: torch.tanh(a.t() * b + 1))
    got, want = f(a, b), torch.tanh(ar.t() * br + 1)
    torch.testing.assert_close(got, want)
    got.sum().backward()
    want.sum().backward()
    torch.testing.assert_close(a.grad, ar.grad)
    torch.testing.assert_close(b.grad, br.grad)
