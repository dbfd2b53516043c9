"""torch.fx -> aten import: op mapping, types from example inputs, opaque ops,
parameters as arguments, output structure, and the `fusec-opt` round trip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import fusec
import pytest
import torch
import torch.nn.functional as F
from fusec.dialects import aten
from fusec.frontend.importer import Const, Ret, import_fx, trace
from reference_models import lstm_cell
from torch import nn
from xdsl.dialects import arith, func

ROOT = Path(__file__).resolve().parent.parent


def lstm_inputs(b: int = 3, i: int = 5, h: int = 4) -> list[torch.Tensor]:
    return [
        torch.randn(b, i), torch.randn(b, h), torch.randn(b, h),
        torch.randn(4 * h, i), torch.randn(4 * h, h), torch.randn(4 * h), torch.randn(4 * h),
    ]  # fmt: skip


def op_names(module) -> list[str]:
    return [op.name for op in module.walk() if op.name.startswith(("aten.", "arith."))]


def test_lstm_cell_imports_to_aten_ops():
    m = fusec.import_graph(lstm_cell, lstm_inputs())
    names = op_names(m)
    assert names.count("aten.mm") == 2
    assert names.count("aten.sigmoid") == 3
    assert names.count("aten.tanh") == 2
    assert "aten.chunk" in names and "aten.opaque" not in names
    f = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    assert [str(t) for t in f.function_type.outputs] == ["tensor<3x4xf32>"] * 2
    assert str(f.function_type.inputs.data[3]) == "tensor<16x5xf32>"


def test_types_follow_example_inputs():
    def fn(x, y):
        return (x.half() + y).sum(1, keepdim=True)

    m = fusec.import_graph(fn, [torch.randn(2, 3, dtype=torch.float64), torch.randn(1, 3)])
    text = str(m)
    assert "aten.to %x : tensor<2x3xf64> -> tensor<2x3xf16>" in text
    assert "tensor<2x3xf16>, tensor<1x3xf32> -> tensor<2x3xf32>" in text
    assert "aten.sum" in text and "keepdim = true" in text


def test_scalars_constants_and_scalar_inputs():
    def fn(x, s: float):
        return torch.add(x * 2.5, s, alpha=3) > 1

    m = fusec.import_graph(fn, [torch.randn(4), 0.5])
    consts = [op for op in m.walk() if isinstance(op, arith.ConstantOp)]
    assert [str(c.value.type) for c in consts] == ["f64", "i64"]
    f = next(op for op in m.walk() if isinstance(op, func.FuncOp))
    assert [str(t) for t in f.function_type.inputs] == ["tensor<4xf32>", "f64"]
    assert "alpha = 3 : i64" in str(m)
    assert "-> tensor<4xi1>" in str(m)


def test_unknown_ops_become_opaque():
    def fn(x):
        return torch.flip(torch.relu(x), [1]).cumsum(0)

    g = import_fx(trace(fn), [torch.randn(2, 3)])
    opaque = [op for op in g.module.walk() if isinstance(op, aten.OpaqueOp)]
    assert [op.target.data for op in opaque] == ["torch.flip", "Tensor.cumsum"]
    assert set(g.opaque) == {op.node.data for op in opaque}


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(5, 4)
        self.act = nn.GELU(approximate="tanh")
        self.register_buffer("scale", torch.full((4,), 0.5))

    def forward(self, x):
        y = self.act(self.lin(x)) * self.scale
        return {"y": y, "parts": (y[:, 1:3], F.silu(y).view(x.size(0), -1))}


def test_module_parameters_become_arguments_and_structure_is_kept():
    g = import_fx(trace(Block()), [torch.randn(3, 5)])
    assert g.inputs == [("arg", 0), ("attr", "lin.weight"), ("attr", "lin.bias"), ("attr", "scale")]
    assert g.outputs == {"y": Ret(0), "parts": (Ret(1), Ret(2))}
    assert g.shape_dependent  # x.size(0) was folded into the view's shape
    names = op_names(g.module)
    assert {"aten.linear", "aten.gelu", "aten.slice", "aten.silu", "aten.view"} <= set(names)
    assert 'approximate = "tanh"' in str(g.module)


def test_chunk_getitem_split_cat_and_views():
    def fn(x):
        a, b = torch.split(x, [1, 3], dim=1)
        c = x.chunk(2, 0)[1]
        d = torch.cat([a, b], 1).permute(1, 0).unsqueeze(0).transpose(1, 2).squeeze(0)
        return d.expand(2, 2, 4) + c.narrow(1, 0, 4), x[0, None, ::2]

    x = torch.randn(2, 4)
    g = import_fx(trace(fn), [x])
    names = op_names(g.module)
    for n in ("aten.split", "aten.chunk", "aten.cat", "aten.permute", "aten.unsqueeze",
              "aten.transpose", "aten.squeeze", "aten.expand", "aten.narrow", "aten.slice"):  # fmt: skip
        assert n in names, n
    assert "aten.opaque" not in names


def test_in_place_on_an_input_imports_as_a_write_back():
    def fn(x):
        x.add_(1)
        return x * 2

    x = torch.zeros(3)
    g = import_fx(trace(fn), [x])
    assert torch.equal(x, torch.zeros(3)), "import must not mutate the caller's tensors"
    names = op_names(g.module)
    assert "aten.add" in names and "aten.copy_" in names and "aten.opaque" not in names


def test_const_outputs_and_passthrough():
    def fn(x):
        return x, None, 3

    g = import_fx(trace(fn), [torch.randn(2)])
    assert g.outputs == (Ret(0), Const(None), Const(3))


def test_printed_module_round_trips_through_fusec_opt(tmp_path):
    m = fusec.import_graph(Block(), [torch.randn(3, 5)])
    m2 = fusec.import_graph(lstm_cell, lstm_inputs())
    for i, mod in enumerate((m, m2)):
        src = tmp_path / f"m{i}.mlir"
        src.write_text(str(mod))
        bindir = str(Path(sys.executable).parent)
        env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
        proc = subprocess.run(
            ["fusec-opt", str(src)], capture_output=True, text=True, env=env, cwd=ROOT
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == str(mod).strip()


def _cache_update(past_dtype: torch.dtype):
    def update(x: torch.Tensor) -> torch.Tensor:
        # Hugging Face's DynamicCache: a layer's keys start as an empty 1-D tensor.
        past = torch.tensor([], dtype=past_dtype, device=x.device)
        keys = torch.cat([past, torch.sigmoid(x).transpose(1, 2)], dim=-2)
        return keys * 2 + 1

    return update


def test_cat_skips_a_constant_empty_tensor_as_pytorch_does():
    """`torch.cat` skips 1-D tensors of no elements: a `torch.tensor([])` only cats
    read is a constant of the import, not three ATen calls and a cat per call."""
    x = torch.randn(2, 3, 4)
    update = _cache_update(torch.float32)
    f = torch.compile(update, backend="fusec")
    for _ in range(2):
        torch.testing.assert_close(f(x), update(x))
    ir = fusec.dynamo_graphs()[-1].ir()
    assert "torch.tensor" not in ir and 'aten.opaque "torch.cat"' not in ir
    assert "aten.cat %" in ir  # of the transposed sigmoid alone


def test_an_empty_tensor_that_decides_the_dtype_of_a_cat_stays():
    # float64 empty + float32 values -> float64: the empty tensor takes part.
    x = torch.randn(2, 3, 4)
    update = _cache_update(torch.float64)
    f = torch.compile(update, backend="fusec")
    for _ in range(2):
        got = f(x)
        torch.testing.assert_close(got, update(x))
    assert got.dtype == torch.float64


@pytest.mark.parametrize("past_dtype", [torch.float32, torch.float64])
def test_cat_skips_a_lifted_empty_constant_in_training(past_dtype):
    """In an AOTAutograd graph the empty tensor is `lift_fresh_copy` of a tensor
    constant: the same constant for the cat (GPT-2's forward ran two `to`s and two
    opaque `cat`s per layer). A float64 one decides the cat's dtype and stays."""
    from fusec.api.training import clear_compiled_graphs, compiled_graphs

    update = _cache_update(past_dtype)
    x = torch.randn(2, 3, 4, requires_grad=True)
    want = update(x)
    (want_grad,) = torch.autograd.grad(want.sum(), x)
    torch._dynamo.reset()
    clear_compiled_graphs()
    got = torch.compile(update, backend="fusec")(x)
    (got_grad,) = torch.autograd.grad(got.sum(), x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_grad, want_grad)
    assert got.dtype == want.dtype
    (forward,) = [g for g in compiled_graphs() if g.kind == "forward"]
    ir = forward.function.ir()
    skipped = past_dtype == torch.float32
    assert ("aten.cat.default" not in ir) == skipped, ir
    assert ('"aten.to"' not in ir) or not skipped, ir


@torch.fx.wrap
def sigmoid_and_nothing(x: torch.Tensor) -> tuple[torch.Tensor, None]:
    """An op that leaves an output out (as `mkldnn_rnn_layer` leaves its workspace
    when not training): torch.fx keeps it a call."""
    return torch.sigmoid(x), None


def reads_a_left_out_output(x: torch.Tensor) -> tuple[torch.Tensor, None]:
    y, nothing = sigmoid_and_nothing(x)
    return y * 2 + 1, nothing


def test_a_left_out_output_of_an_opaque_call_is_none():
    x = torch.randn(4, 5)
    f = fusec.compile(reads_a_left_out_output)
    got = f(x)
    assert got[1] is None
    torch.testing.assert_close(got[0], reads_a_left_out_output(x)[0])
    assert f.launches_per_call == 1  # compiled, not eager
    assert "getitem" not in f.ir()  # the None is a constant, not a call per run


def lstm_and_head(lstm: nn.LSTM, x: torch.Tensor) -> torch.Tensor:
    y, (h, c) = lstm(x)
    return torch.tanh(y) * 2 + h.sum(0).unsqueeze(1)


def test_nested_results_of_an_opaque_call():
    """`nn.LSTM` (a leaf of torch.fx) returns `(output, (h, c))`: one opaque op whose
    results are the leaves."""

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(3, 4, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return lstm_and_head(self.lstm, x)

    m, x = M().eval(), torch.randn(2, 5, 3)
    with torch.no_grad():
        f = fusec.compile(m)
        torch.testing.assert_close(f(x), m(x))
        # The head's pointwise tail, and `h.sum(0)` (a reduction of the opaque
        # call's result: a kernel of its own, `fuse{lone-reductions}`).
        assert f.launches_per_call == 2
        ir = f.ir()
        assert ir.count("aten.opaque") == 1 and 'aten.opaque "module.lstm"' in ir
