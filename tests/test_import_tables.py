"""The import tables (`fusec.frontend.registry`): ATen entries name packets,
whose overloads are derived (`register_aten`, as Inductor's
`register_lowering`), and still cover every overload the hand-written table
listed; the fast path reads its `CompiledFunction` only through
`fast_call.FastPathOwner`."""

from __future__ import annotations

import inspect
import re

import fusec.frontend.importer  # noqa: F401  (loads every table)
import torch
from fusec.api import fast_call
from fusec.api.compiled import CompiledFunction, CompileOptions
from fusec.frontend.registry import ATEN_TABLE, aten_overloads

A = torch.ops.aten

# The overloads the table listed by hand before they were derived from packets
# (less TorchScript's `eq.default`-style overloads on two Python numbers).
LISTED = """
    _log_softmax.default _log_softmax_backward_data.default _softmax.default
    _softmax_backward_data.default _to_copy.default _unsafe_view.default abs.default
    abs_.default add.Scalar add.Tensor add_.Scalar add_.Tensor addmm.default alias.default
    amax.default amin.default bitwise_not.default bmm.default cat.default ceil.default
    ceil_.default celu.default celu_.default chunk.default clamp.default clamp_.default
    clamp_max.default clamp_min.default clone.default copy_.default cos.default
    cos_.default detach.default div.Scalar div.Scalar_mode div.Tensor div.Tensor_mode
    div_.Scalar div_.Tensor div_.Tensor_mode elu.default elu_.default elu_backward.default
    eq.Scalar eq.Tensor eq_.Scalar eq_.Tensor erf.default erf_.default exp.default
    exp_.default expand.default expm1.default expm1_.default fix.default floor.default
    floor_.default floor_divide.Scalar floor_divide.default frac.default frac_.default
    full_like.default ge.Scalar ge.Tensor ge_.Scalar ge_.Tensor gelu.default
    gelu_backward.default gt.Scalar gt.Tensor gt_.Scalar gt_.Tensor hardsigmoid.default
    hardsigmoid_.default hardsigmoid_backward.default hardswish.default hardswish_.default
    hardswish_backward.default hardtanh.default hardtanh_.default hardtanh_backward.default
    layer_norm.default le.Scalar le.Tensor le_.Scalar le_.Tensor leaky_relu.default
    lift_fresh_copy.default linear.default log.default log1p.default log1p_.default
    log_.default log_softmax.int logical_and.default logical_and_.default
    logical_not.default logical_not_.default logical_or.default logical_or_.default
    logical_xor.default logical_xor_.default lt.Scalar lt.Tensor lt_.Scalar lt_.Tensor
    masked_fill.Scalar matmul.default maximum.default mean.default mean.dim minimum.default
    mish.default mish_.default mish_backward.default mm.default mul.Scalar mul.Tensor
    mul_.Scalar mul_.Tensor narrow.default native_layer_norm.default
    native_layer_norm_backward.default ne.Scalar ne.Tensor ne_.Scalar ne_.Tensor
    neg.default neg_.default ones_like.default permute.default pow.Scalar pow.Tensor_Scalar
    pow.Tensor_Tensor pow_.Scalar pow_.Tensor reciprocal.default reciprocal_.default
    relu.default relu_.default reshape.default rsqrt.default rsqrt_.default rsub.Scalar
    rsub.Tensor select.int selu.default selu_.default sigmoid.default sigmoid_.default
    sigmoid_backward.default silu.default silu_.default silu_backward.default sin.default
    sin_.default slice.Tensor softmax.int softplus.default softplus_backward.default
    split.Tensor split_with_sizes.default sqrt.default sqrt_.default squeeze.default
    squeeze.dim squeeze.dims std.correction std.dim sub.Scalar sub.Tensor sub_.Scalar
    sub_.Tensor sum.default sum.dim_IntList sym_size.int t.default tanh.default
    tanh_.default tanh_backward.default threshold_backward.default to.dtype transpose.int
    tril.default triu.default trunc.default trunc_.default unsqueeze.default var.correction
    var.dim view.default where.Scalar where.ScalarOther where.ScalarSelf where.self
    zeros_like.default
""".split()


def test_a_packet_stands_for_its_tensor_overloads():
    found = set(aten_overloads(A.add))
    assert {A.add.Tensor, A.add.Scalar} <= found
    assert A.add.out not in found  # `out=` variants never reach a handler
    assert A.add.int not in found  # TorchScript's add of two ints
    assert A.cat.default in aten_overloads(A.cat)  # a `Tensor[]` argument counts
    assert not any("Dimname" in str(o._schema) for o in aten_overloads(A.sum))
    assert aten_overloads(A.sum.dim_IntList) == [A.sum.dim_IntList]
    assert aten_overloads(None) == []


def test_every_overload_the_table_listed_is_still_there():
    table = {str(o).removeprefix("aten.") for o in ATEN_TABLE}
    missing = [name for name in LISTED if name not in table]
    assert not missing


def test_overloads_whose_arguments_differ_are_left_out():
    # `var.default(x, unbiased)` would read `unbiased` as var.dim's `dim`.
    assert A.var.dim in ATEN_TABLE and A.var.default not in ATEN_TABLE
    assert A.std.dim in ATEN_TABLE and A.std.default not in ATEN_TABLE
    # `to.device` and the like may alias their input; `_to_copy` never does.
    assert A.to.dtype in ATEN_TABLE and A.to.device not in ATEN_TABLE
    assert ATEN_TABLE[A.pow.Tensor_Tensor] is not ATEN_TABLE[A.pow.Scalar]
    assert ATEN_TABLE[A.squeeze.dim] is not ATEN_TABLE[A.squeeze.dims]


def test_the_fast_path_reads_its_owner_through_the_protocol():
    members = {
        name
        for name in dir(fast_call.FastPathOwner)
        if not name.startswith("_") or name == "__call__"
    } | set(fast_call.FastPathOwner.__annotations__)
    source = inspect.getsource(fast_call)
    read = set(re.findall(r"\bowner\.(\w+)", source))
    assert read <= members, read - members
    fn = CompiledFunction(torch.fx.symbolic_trace(lambda x: x + 1), None, CompileOptions())
    assert all(hasattr(fn, name) for name in members)
