"""Opaque calls as data (`fusec.runtime.opaque_calls`): what a warm-start entry
writes of an op left to PyTorch reads back as a call of the same target with the
same arguments, and what cannot be named again is `NotData`."""

from __future__ import annotations

import json
import math
import operator
import sys

import pytest
import torch
from fusec.runtime.opaque_calls import OpaqueCall, OperandRef, call_from_data, call_to_data
from fusec.runtime.program_data import NotData
from torch import nn

aten = torch.ops.aten


def _round_trip(call: OpaqueCall) -> OpaqueCall:
    return call_from_data(json.loads(json.dumps(call_to_data(call), allow_nan=False)))


@pytest.mark.parametrize(
    "call",
    [
        OpaqueCall(
            "call_function", aten.embedding.default, (OperandRef(0), OperandRef(1)), {}, False
        ),
        OpaqueCall(
            "call_function",
            aten.native_layer_norm_backward.default,
            (OperandRef(0), OperandRef(1), [4], OperandRef(2), OperandRef(3), None, None),
            {"output_mask": [True, False, False]},
            True,
            kept=(0,),
        ),
        OpaqueCall(
            "call_function", torch.cumsum, (OperandRef(0), 1), {"dtype": torch.float64}, False
        ),
        OpaqueCall(
            "call_function", operator.getitem, (OperandRef(0), (slice(None, 2, None), 0)), {}, False
        ),
        OpaqueCall(
            "call_function",
            torch.clamp,
            (OperandRef(0),),
            {"min": -math.inf, "max": 0.5},
            False,
        ),
        OpaqueCall(
            "call_method",
            "to",
            (OperandRef(0),),
            {"device": torch.device("cpu"), "memory_format": torch.contiguous_format},
            False,
        ),
        OpaqueCall("call_module", "lstm", (OperandRef(0),), {}, True, kept=(0, 1, 2), nested=True),
    ],
    ids=["aten", "masked-multi", "builtin", "getitem-slice", "inf", "method", "module"],
)
def test_a_call_reads_back_as_the_same_call(call: OpaqueCall) -> None:
    back = _round_trip(call)
    assert back == call
    assert back.target is call.target or back.target == call.target


def test_a_read_back_call_runs_as_the_original() -> None:
    root = nn.Module()
    root.lstm = nn.LSTM(3, 4, batch_first=True)
    x = torch.randn(2, 5, 3)
    cases = [
        (OpaqueCall("call_function", torch.cumsum, (OperandRef(0), 1), {}, False), (x,)),
        (OpaqueCall("call_module", "lstm", (OperandRef(0),), {}, True, nested=True), (x,)),
        (OpaqueCall("call_method", "sum", (OperandRef(0),), {"dim": -1}, False), (x,)),
    ]
    for call, ops in cases:
        want = call.bind(root)(*ops)
        got = _round_trip(call).bind(root)(*ops)
        assert len(got) == len(want) > 0
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w)


def _local(t: torch.Tensor) -> torch.Tensor:
    return t


@pytest.mark.parametrize(
    "call",
    [
        OpaqueCall("call_function", lambda t: t, (OperandRef(0),), {}, False),
        OpaqueCall("call_function", torch.add, (OperandRef(0), torch.ones(2)), {}, False),
        OpaqueCall("call_function", torch.add, (OperandRef(0), 1), {"alpha": object()}, False),
        OpaqueCall("placeholder", "x", (), {}, False),
    ],
    ids=["lambda", "tensor-constant", "object", "kind"],
)
def test_what_cannot_be_named_again_is_not_data(call: OpaqueCall) -> None:
    with pytest.raises(NotData):
        call_to_data(call)


def test_a_rebound_name_is_not_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """A module-level function whose name now holds another object is not found
    again by that name: the entry would call the wrong function."""
    call = OpaqueCall("call_function", _local, (OperandRef(0),), {}, False)
    assert _round_trip(call).target is _local
    monkeypatch.setattr(sys.modules[__name__], "_local", lambda t: t + 1)
    with pytest.raises(NotData):
        call_to_data(call)


@pytest.mark.parametrize(
    "data",
    [
        {"kind": "call_function", "target": {"op": "aten::no_such_op", "overload": "default"}},
        {"kind": "call_function", "target": {"module": "no.such.module", "name": "f"}},
        {"kind": "call_function", "target": {"module": "torch", "name": "float32"}},
        {"kind": "call_function", "target": {"module": "torch", "name": "cumsum"}, "args": [1]},
        {
            "kind": "call_function",
            "target": {"module": "torch", "name": "cumsum"},
            "args": {"tuple": [{"what": 1}]},
            "kwargs": {"dict": {}},
            "multi": False,
            "kept": None,
            "nested": False,
        },
        {"kind": "call_method", "target": {"module": "torch"}},
        {
            "kind": "call_function",
            "target": {"module": "torch", "name": "cumsum"},
            "args": {"tuple": [{"dtype": "cumsum"}]},
            "kwargs": {"dict": {}},
            "multi": False,
            "kept": None,
            "nested": False,
        },
    ],
    ids=["no-op", "no-module", "not-callable", "bad-args", "bad-tag", "bad-method", "bad-dtype"],
)
def test_malformed_data_is_not_data(data: dict) -> None:
    with pytest.raises(NotData):
        call_from_data(data)
