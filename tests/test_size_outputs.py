"""Sizes as runtime values: a returned `x.shape` is `aten.size` (valid for every
shape with the same broadcast pattern), and a group output read only for its size
is dropped (`remove-outputs-used-only-in-size`)."""

from __future__ import annotations

import re

import fusec
import torch


def group_outputs(ir: str) -> list[str]:
    """The result types of each `fusion.group` in printed IR."""
    return re.findall(r"fusion\.group \(.*?\) : \(.*?\) -> \((.*?)\) \{", ir)


def test_output_used_only_in_size_is_dropped() -> None:
    def f(x, y):
        z = torch.sigmoid(x) * y
        w = torch.tanh(z)
        return w, z.shape

    fn = fusec.compile(f)
    for xs, ys in (((4, 1), (3,)), ((7, 1), (5,))):
        x, y = torch.randn(*xs), torch.randn(*ys)
        w, size = fn(x, y)
        w_eager, size_eager = f(x, y)
        torch.testing.assert_close(w, w_eager)
        assert isinstance(size, torch.Size) and size == size_eager
        assert fn.launches_per_call == 1
    ir = fn.ir()
    # One group with one output (w); z's size comes from the inputs' sizes.
    assert group_outputs(ir) == ["tensor<4x3xf32>"], ir
    assert "fusion.broadcast_sizes" in ir
    assert len(fn.specializations) == 1, "the size must not specialize on exact shapes"


def test_size_of_a_kept_output_and_of_an_input() -> None:
    def f(x, y):
        z = x + y
        return z.exp(), z, z.size(), x.shape

    fn = fusec.compile(f)
    for xs in ((2, 3), (5, 6)):
        x, y = torch.randn(*xs), torch.randn(xs[1])
        got, want = fn(x, y), f(x, y)
        torch.testing.assert_close(got[:2], want[:2])
        assert got[2:] == want[2:]


def test_size_passed_to_an_opaque_op() -> None:
    def f(x):
        y = torch.sigmoid(x)
        return torch.zeros(y.size()) + 1, y.neg()

    fn = fusec.compile(f)
    for xs in ((2, 3), (4, 5)):
        x = torch.randn(*xs)
        got, want = fn(x), f(x)
        torch.testing.assert_close(got, want)
    assert "aten.size" in fn.ir()
    assert len(fn.specializations) == 1


def test_broadcast_of_a_scalar_and_a_size_one_dim() -> None:
    def f(x, y):
        z = (x * 2.5) - y
        return torch.relu(z), z.shape

    fn = fusec.compile(f)
    for xs, ys in (((1, 4), (3, 1)), ((1, 6), (2, 1))):
        x, y = torch.randn(*xs), torch.randn(*ys)
        (r, s), (r_e, s_e) = fn(x, y), f(x, y)
        torch.testing.assert_close(r, r_e)
        assert s == s_e
    assert len(group_outputs(fn.ir())) == 1
    assert group_outputs(fn.ir())[0].count("tensor") == 1
