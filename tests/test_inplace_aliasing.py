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
    check_like_eager(
        backend, write_second_part_of_merged_groups, torch.randn(4, 3), torch.randn(4, 3)
    )


# ---------------------------------------------------------------- contiguous()


def write_contiguous_copy(x):
    y = x.t().contiguous()
    y.add_(1)
    return y


def write_contiguous_copy_then_read_source(x):
    y = x.t().contiguous()
    y.mul_(2)
    return y + x.t()


def write_contiguous_copy_of_fresh_tensor(x):
    t = x.exp()
    y = t.t().contiguous()
    y.add_(1)
    return y + t.t(), t


def write_contiguous_copy_through_view(x):
    y = x.T.contiguous().view(-1)
    y.add_(1)
    return y


def write_contiguous_copy_of_slice(x):
    y = x[:, ::2].contiguous()
    y.add_(1)
    return y, x


def write_contiguous_copy_called_as_function(x):
    y = torch.Tensor.contiguous(x.t(), memory_format=torch.contiguous_format)
    y.sub_(1)
    return y * x.t()


def write_contiguous_alias(x):
    y = x.contiguous()  # x itself: the write reaches x, as in eager
    y.add_(1)
    return y * 2, x


def write_source_after_contiguous_copy(x):
    y = x.t().contiguous()
    x.add_(1)
    return y * 2


def write_fresh_source_after_contiguous_copy(x):
    t = x.exp()
    y = t.t().contiguous()
    t.mul_(3)
    return y + 1, t


def write_reshape_copy(x):
    y = x.t().reshape(-1)  # not viewable: a copy in eager
    y.add_(1)
    return y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "f",
    [
        write_contiguous_copy,
        write_contiguous_copy_then_read_source,
        write_contiguous_copy_of_fresh_tensor,
        write_contiguous_copy_through_view,
        write_contiguous_copy_of_slice,
        write_contiguous_copy_called_as_function,
        write_contiguous_alias,
        write_source_after_contiguous_copy,
        write_fresh_source_after_contiguous_copy,
        write_reshape_copy,
    ],
)
def test_write_through_contiguous_reaches_what_eager_writes(backend, f):
    check_like_eager(backend, f, torch.randn(4, 6))


@pytest.mark.parametrize("backend", BACKENDS)
def test_contiguous_of_a_non_contiguous_input_is_a_copy(backend):
    check_like_eager(backend, write_contiguous_alias, torch.randn(6, 4).t())


def write_channels_last(x):
    y = x.contiguous(memory_format=torch.channels_last)
    y.add_(1)
    return y, x


@pytest.mark.parametrize("backend", BACKENDS)
def test_contiguous_in_another_memory_format_is_a_copy(backend):
    check_like_eager(backend, write_channels_last, torch.randn(2, 3, 4, 5))


def write_clone(x):
    y = x.clone()
    y[0].add_(1)
    return y


def write_contiguous_clone_through_view(x):
    y = x.t().clone(memory_format=torch.contiguous_format)
    y.view(-1).add_(1)
    return y


@pytest.mark.parametrize(
    "f", [write_clone, write_contiguous_copy_through_view, write_contiguous_clone_through_view]
)
def test_aten_graph_clone_is_a_copy(f):
    """A non-functional ATen graph (`make_fx`): `aten.clone` is a fresh tensor that
    writes through views of it reach, and its source never sees them."""
    from torch.fx.experimental.proxy_tensor import make_fx

    x = torch.randn(4, 6)
    graph = make_fx(f)(x.clone())
    assert any("clone" in str(n.target) for n in graph.graph.nodes)
    eager_in, ours_in = x.clone(), x.clone()
    torch.testing.assert_close(fusec.compile(graph)(ours_in), f(eager_in))
    torch.testing.assert_close(ours_in, eager_in)


# ---------------------------------------------------------------- equal results


def write_one_of_two_equal_results_unfused_group(x):
    # The chunk of a computed value leaves this group without a kernel: it runs
    # through PyTorch, where CSE's shared `x - y` was one tensor (random graph 2053).
    h = x.half()
    y = x * h
    a = x - y
    b = x - y
    c = h.chunk(3, 0)[-1] * 1
    a[None].clamp_(min=0.5)
    return b.half(), c


def write_one_of_two_equal_results(x):
    y = x.sin()
    a = y * 2
    b = y * 2
    a.add_(1)
    return a, b


def write_one_of_two_equal_views(x):
    y = x.sin()
    a = y[0]
    b = y[0]
    a.add_(1)
    return y, b


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "f, x",
    [
        (write_one_of_two_equal_results_unfused_group, torch.tensor([-2])),
        (write_one_of_two_equal_results, torch.randn(4, 3)),
        (write_one_of_two_equal_views, torch.randn(4, 3)),
    ],
)
def test_a_write_to_one_of_two_equal_results_leaves_the_other(backend, f, x):
    check_like_eager(backend, f, x)
