"""In-place writes that must reach exactly the tensors eager writes (issue 31): a
write to a `cat` part before the cat, and writes through `.contiguous()`, which
is its input only when that is already contiguous. Each function runs through
`fusec.compile` and `torch.compile(backend="fusec")`; outputs and the inputs
after the call are compared with eager PyTorch on clones of the same inputs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fusec
import pytest
import torch


def _compiled(backend: str, f: Callable[..., Any]) -> Callable[..., Any]:
    if backend == "fusec.compile":
        return fusec.compile(f)
    torch._dynamo.reset()
    return torch.compile(f, backend="fusec")


def _as_tuple(v: Any) -> tuple[Any, ...]:
    return v if isinstance(v, tuple) else (v,)


def check_like_eager(backend: str, f: Callable[..., Any], *inputs: torch.Tensor) -> None:
    """`f` compiled returns what eager returns and leaves its inputs as eager does."""
    eager_in = [x.clone() for x in inputs]
    ours_in = [x.clone() for x in inputs]
    expected = _as_tuple(f(*eager_in))
    got = _as_tuple(_compiled(backend, f)(*ours_in))
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e)
    for g, e in zip(ours_in, eager_in, strict=True):
        torch.testing.assert_close(g, e)


BACKENDS = ["fusec.compile", "torch.compile"]


# ---------------------------------------------------------------- cat parts


def write_part_before_cat(x):
    a = x.sin()
    b = x.cos()
    a.add_(1)
    return torch.cat([a, b])


def write_part_through_row_view(x):
    a = x.sin()
    b = x.cos()
    a[0].add_(1)
    return torch.cat([a, b])


def write_part_through_flat_view(x):
    a = x.sin()
    b = x.cos()
    a.view(-1).mul_(3)
    return torch.cat([a, b], 1)


def write_second_part_of_merged_groups(x, y):
    a = x.exp()
    b = y.neg()
    b.sub_(2)
    return torch.cat([a, b], 1)


def write_part_after_cat(x):
    a = x.sin()
    b = x.cos()
    c = torch.cat([a, b])
    a.mul_(2)
    return c + 1, a


def write_cat_result(x):
    a = x.sin()
    b = x.cos()
    c = torch.cat([a, b])
    c[0].add_(1)
    c.mul_(2)
    return c, a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "f",
    [
        write_part_before_cat,
        write_part_through_row_view,
        write_part_through_flat_view,
        write_part_after_cat,
        write_cat_result,
    ],
)
def test_write_to_a_cat_part_is_seen_by_the_cat(backend, f):
    check_like_eager(backend, f, torch.randn(4, 3))


@pytest.mark.parametrize("backend", BACKENDS)
def test_write_to_a_part_of_merged_groups_is_seen_by_the_cat(backend):
    check_like_eager(backend, write_second_part_of_merged_groups, torch.randn(4, 3), torch.randn(4, 3))
