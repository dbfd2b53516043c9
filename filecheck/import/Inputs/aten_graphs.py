"""Prints the imported `aten` IR of ATen-level graphs, for the FileCheck tests:

    python aten_graphs.py export-lstm        # torch.export + core ATen decompositions
    python aten_graphs.py export-dynamic     # torch.export with a symbolic batch size
    python aten_graphs.py aot-mlp-backward   # AOTAutograd's backward graph (FakeTensors)
    python aten_graphs.py make-fx-symbolic   # make_fx with symbolic sizes (every dim a symbol)
"""

from __future__ import annotations

import sys

import fusec
import torch
from fusec.frontend.aten_import import import_aten
from torch import nn


class LSTMCell(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w_ih = nn.Parameter(torch.randn(16, 4))
        self.w_hh = nn.Parameter(torch.randn(16, 4))
        self.b = nn.Parameter(torch.randn(16))

    def forward(self, x: torch.Tensor, hx: torch.Tensor, cx: torch.Tensor):
        gates = x @ self.w_ih.t() + hx @ self.w_hh.t() + self.b
        i, f, g, o = gates.chunk(4, 1)
        cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(cy), cy


def export_lstm() -> str:
    args = (torch.randn(2, 4), torch.randn(2, 4), torch.randn(2, 4))
    ep = torch.export.export(LSTMCell(), args).run_decompositions()
    return str(fusec.import_graph(ep))


class ScaledFlatten(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.view(x.size(0), -1).sigmoid() * x.size(0)


def export_dynamic() -> str:
    batch = torch.export.Dim("batch")
    ep = torch.export.export(ScaledFlatten(), (torch.randn(4, 3, 2),), dynamic_shapes=[{0: batch}])
    return str(fusec.import_graph(ep))


def scaled_softmax(x: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.sigmoid(x + b) * x.size(0)
    return torch.softmax(y.view(-1, 2, 4), -1), torch.cat([y, x], 0)


def make_fx_symbolic() -> str:
    from torch.fx.experimental.proxy_tensor import make_fx

    x, b = torch.randn(4, 8), torch.randn(8)
    gm = make_fx(scaled_softmax, tracing_mode="symbolic")(x, b)
    return str(fusec.import_graph(gm, (x, b)))


def aot_mlp_backward() -> str:
    from torch._dynamo.backends.common import aot_autograd

    printed: list[str] = []

    def fw(gm: torch.fx.GraphModule, example_inputs: list) -> torch.fx.GraphModule:
        return gm

    def bw(gm: torch.fx.GraphModule, example_inputs: list) -> torch.fx.GraphModule:
        printed.append(str(import_aten(gm, name="backward").module))
        return gm

    mlp = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 4), nn.Sigmoid())
    model = torch.compile(mlp, backend=aot_autograd(fw_compiler=fw, bw_compiler=bw))
    model(torch.randn(2, 4)).sum().backward()
    return printed[0]


if __name__ == "__main__":
    graphs = {
        "export-lstm": export_lstm,
        "export-dynamic": export_dynamic,
        "aot-mlp-backward": aot_mlp_backward,
        "make-fx-symbolic": make_fx_symbolic,
    }
    print(graphs[sys.argv[1]]())
