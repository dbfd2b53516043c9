"""Entry points for ATen-level graphs (AOTAutograd forward/backward graphs,
`make_fx` and `torch.export` graphs).

The torch-level importer (`fusec.frontend.importer`) reads these graphs too: a node whose
target is a `torch.ops.aten` OpOverload finds its builder in `fusec.frontend.aten_table`.
What this module adds is importing without real inputs: AOTAutograd hands its
compilers FakeTensors, and every placeholder carries its FakeTensor in
`node.meta['val']`, so the graph imports from those (the import-time run is then a
run on fake tensors, which costs no compute):

    def fw_compiler(gm, example_inputs):           # AOTAutograd's compiler hook
        imported = import_aten(gm)                  # placeholders' meta['val']
        print(imported.module)                      # aten dialect, e.g.
        # func.func @forward(%primals_1: tensor<8x16xf32>, ...) -> (...) {
        #   %t = aten.transpose %primals_1 dim0 = 0 dim1 = 1 : ...
        #   %addmm = aten.addmm %primals_2, %primals_4, %t : ...
        #   %sigmoid_backward = ... (pointwise ops)
        return fusec.compile(gm)                    # runs it, fused, on real inputs

Graphs with symbolic sizes (SymInt placeholders, FakeTensors with symbolic
dims) import at their first real call instead (`fusec.compile(gm)` does that):
the IR's types hold a dynamic dim (`?`) wherever the recorded size is a symbol,
and symbolic sizes stay runtime values.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx
from fusec.frontend.importer import ImportedGraph, UnsupportedGraph, import_fx


def example_inputs_from_meta(gm: torch.fx.GraphModule) -> list[Any]:
    """The placeholders' recorded values (`meta['val']`, Dynamo's `example_value`)."""
    values = []
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        if "val" in node.meta:
            values.append(node.meta["val"])
        elif "example_value" in node.meta:
            values.append(node.meta["example_value"])
        else:
            raise UnsupportedGraph(f"placeholder {node.name} records no value (meta['val'])")
    return values


def _symbolic(v: Any) -> bool:
    if isinstance(v, torch.SymInt | torch.SymFloat | torch.SymBool):
        return True
    return isinstance(v, torch.Tensor) and any(isinstance(s, torch.SymInt) for s in v.shape)


def import_aten(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any] | None = None, name: str = "forward"
) -> ImportedGraph:
    """Import an ATen-level graph; without `example_inputs`, from the placeholders'
    FakeTensors. Raises `UnsupportedGraph` when the recorded sizes are symbolic."""
    inputs = list(example_inputs) if example_inputs is not None else example_inputs_from_meta(gm)
    if any(_symbolic(v) for v in inputs):
        raise UnsupportedGraph("symbolic sizes: import at the first call with real inputs")
    from torch._guards import detect_fake_mode

    fake_mode = detect_fake_mode(inputs)
    with fake_mode if fake_mode is not None else contextlib.nullcontext():
        return import_fx(gm, inputs, name)
