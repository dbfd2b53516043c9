"""`fusec_partition`: min-cut, but a value the forward writes anyway is saved
rather than recomputed from several saved tensors in the backward."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.fx
from fusec.api.partition import fusec_partition, materialized, wasteful_recomputations
from fusec.api.training import pointwise_decompositions
from torch._functorch.aot_autograd import aot_function, make_boxed_func
from torch._functorch.partitioners import _size_of, min_cut_rematerialization_partition
from torch.fx.experimental.proxy_tensor import make_fx
from training_models import MODELS


def partition(
    fn: Callable[..., Any], args: tuple, partition_fn: Callable[..., Any]
) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    graphs: dict[str, torch.fx.GraphModule] = {}

    def keep(kind: str) -> Callable[..., Any]:
        def compiler(gm: torch.fx.GraphModule, _: Any) -> Any:
            graphs[kind] = gm
            return make_boxed_func(gm)

        return compiler

    f = aot_function(
        fn,
        keep("fw"),
        keep("bw"),
        partition_fn=partition_fn,
        decompositions=pointwise_decompositions(),
    )
    out = f(*args)
    (out if isinstance(out, torch.Tensor) else out[0]).sum().backward()
    return graphs["fw"], graphs["bw"]


def saved(fw: torch.fx.GraphModule) -> list[torch.fx.Node]:
    output = next(n for n in fw.graph.nodes if n.op == "output")
    return [n for n in output.args[0][1:] if isinstance(n, torch.fx.Node)]


def two_lstm_steps(
    x: torch.Tensor, c: torch.Tensor, w: torch.Tensor, b: torch.Tensor
) -> torch.Tensor:
    """Step 1 reads c0 after the matmul that reads h0: c0 crosses two fusions."""
    for _ in range(2):
        i, f, g, o = (x @ w + b).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        x = torch.sigmoid(o) * torch.tanh(c)
    return x


def lstm_args() -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return (
        torch.randn(3, 4),
        torch.randn(3, 4),
        torch.randn(4, 16, requires_grad=True),
        torch.randn(16, requires_grad=True),
    )


def test_min_cut_recomputes_a_materialized_cell_state_and_fusec_saves_it() -> None:
    fw, bw = partition(two_lstm_steps, lstm_args(), min_cut_rematerialization_partition)
    wasteful = wasteful_recomputations(fw, bw)
    assert len(wasteful) == 1, wasteful  # c0: f0 * c + i0 * g0, recomputed from 3+ tensors
    fw2, bw2 = partition(two_lstm_steps, lstm_args(), fusec_partition)
    assert wasteful_recomputations(fw2, bw2) == []
    assert wasteful[0] in [str(n) for n in saved(fw2)]
    assert wasteful[0] not in [n.name for n in bw2.graph.nodes if n.op == "call_function"]


def test_a_second_partition_of_a_graph_runs_min_cut_once(cache_dir, monkeypatch) -> None:
    """The saved values are kept in the cache, keyed by the joint graph: the same
    graph partitioned again (a warm process) marks them before min-cut, which
    then runs once and gives the very graphs the first partition gave."""
    import fusec.api.partition as partition_mod

    calls = []
    real = partition_mod.min_cut_rematerialization_partition

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(partition_mod, "min_cut_rematerialization_partition", counted)
    fw, bw = partition(two_lstm_steps, lstm_args(), fusec_partition)
    assert len(calls) == 2
    assert len(list((cache_dir / "partitions").rglob("*.bin"))) == 1
    calls.clear()
    fw2, bw2 = partition(two_lstm_steps, lstm_args(), fusec_partition)
    assert len(calls) == 1
    assert (fw2.code, bw2.code) == (fw.code, bw.code)
    # Other sizes are another joint graph's inputs: partitioned twice again.
    calls.clear()
    wider = tuple(
        torch.cat([a, a], 0).detach().requires_grad_(a.requires_grad) for a in lstm_args()[:2]
    )
    partition(two_lstm_steps, (*wider, *lstm_args()[2:]), fusec_partition)
    assert len(calls) == 2
    monkeypatch.setenv("FUSEC_PROGRAM_CACHE", "0")
    calls.clear()
    partition(two_lstm_steps, lstm_args(), fusec_partition)
    assert len(calls) == 2


def test_the_partition_gives_eager_gradients() -> None:
    args = lstm_args()
    f = aot_function(
        two_lstm_steps,
        lambda gm, _: make_boxed_func(gm),
        lambda gm, _: make_boxed_func(gm),
        partition_fn=fusec_partition,
        decompositions=pointwise_decompositions(),
    )
    f(*args).square().sum().backward()
    got = [a.grad for a in args[2:]]
    ref = [a.detach().requires_grad_() for a in args[2:]]
    two_lstm_steps(*args[:2], *ref).square().sum().backward()
    for g, r in zip(got, ref, strict=True):
        torch.testing.assert_close(g, r.grad)


def test_materialized_sees_a_cycle_through_a_matmul() -> None:
    def cross(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        y = torch.sin(x)  # read by pointwise ops only, one of them after the matmul
        return (torch.tanh(y) @ w) * y

    def chain(x: torch.Tensor) -> torch.Tensor:
        y = torch.sin(x) * 2.0  # read by pointwise ops only, all before any matmul
        return torch.tanh(y) + y

    square = torch.randn(4, 4)
    nodes = {n.name: n for n in make_fx(cross)(square, square).graph.nodes}
    assert materialized(nodes["sin"])  # one fusion holding sin and mul is a cycle
    assert materialized(nodes["tanh"])  # read by the matmul
    nodes = {n.name: n for n in make_fx(chain)(square).graph.nodes}
    assert not materialized(nodes["mul"])
    assert not materialized(nodes["sin"])


@pytest.mark.parametrize("name", sorted(set(MODELS) - {"lstm"}))
def test_other_models_save_no_more_than_min_cut(name: str) -> None:
    """The rule trades a recomputation for a saved tensor only where the forward
    writes that tensor anyway: the other models keep no more activations."""
    torch.manual_seed(0)
    model, inputs, _ = MODELS[name]()
    state = {**dict(model.named_parameters()), **dict(model.named_buffers())}

    def fn(params: dict[str, torch.Tensor], *xs: torch.Tensor) -> Any:
        return torch.func.functional_call(model, params, xs)

    base, _ = partition(fn, (state, *inputs), min_cut_rematerialization_partition)
    ours, _ = partition(fn, (state, *inputs), fusec_partition)
    assert len(saved(ours)) <= len(saved(base))
    assert sum(_size_of(n) for n in saved(ours)) <= sum(_size_of(n) for n in saved(base))
