"""Reference PyTorch models the tests compile and compare with eager."""

from __future__ import annotations

import torch


def lstm_cell(x, hx, cx, w_ih, w_hh, b_ih, b_hh):
    """An LSTM cell written the usual way: two matmuls, two biases, one chunk."""
    gates = torch.mm(x, w_ih.t()) + torch.mm(hx, w_hh.t()) + b_ih + b_hh
    i, f, g, o = gates.chunk(4, 1)
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    cy = f * cx + i * g
    hy = o * torch.tanh(cy)
    return hy, cy


def lstm_tail(gates, cx):
    """The pointwise tail of an LSTM cell after its gates were computed."""
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy
