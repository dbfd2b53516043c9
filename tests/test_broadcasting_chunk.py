"""The chunk-motion pipeline end to end: an LSTM cell written the usual way becomes
one kernel, and its results equal eager PyTorch."""

from __future__ import annotations

import fusec
import pytest
import torch
import torch.nn.functional as F

PIPELINE = "decompose,broadcasting-chunk,lower-broadcasting-chunk,fuse"


def lstm_linear(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gates = F.linear(x, w_ih, b_ih) + F.linear(hx, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    hy = torch.sigmoid(o) * torch.tanh(cy)
    return hy, cy


def lstm_matmul(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    gates = x @ w_ih.t() + b_ih + hx @ w_hh.t() + b_hh
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    hy = torch.sigmoid(o) * torch.tanh(cy)
    return hy, cy


@pytest.mark.parametrize("cell", [lstm_linear, lstm_matmul])
def test_lstm_cell_is_one_kernel(cell):
    torch.manual_seed(0)
    batch, inp, hid = 5, 7, 6
    args = (
        torch.randn(batch, inp),
        torch.randn(batch, hid),
        torch.randn(batch, hid),
        torch.randn(4 * hid, inp),
        torch.randn(4 * hid, hid),
        torch.randn(4 * hid),
        torch.randn(4 * hid),
    )
    compiled = fusec.compile(cell, args, pipeline=PIPELINE)
    got = compiled(*args)
    want = cell(*args)
    assert compiled.launches_per_call == 1
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
