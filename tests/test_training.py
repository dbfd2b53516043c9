"""Training through AOTAutograd: forward and backward graphs compiled by fusec.

Every model runs optimizer steps twice, eagerly and compiled, from the same
initial state on the same inputs; losses, every parameter's gradient, and the
parameters and buffers (batch-norm running stats) after each step must match.
No run may fall back to eager, and both halves must be fusec programs."""

from __future__ import annotations

import copy
import re
import warnings
from collections import Counter
from collections.abc import Callable
from typing import Any

import fusec
import pytest
import torch
from fusec.api.training import CompiledGraph, clear_compiled_graphs, compiled_graphs
from fusec.dialects.aten import Aten, Pointwise
from torch import nn
from training_models import MODELS, Loss

FRONTENDS = ["fusec.compile", "torch.compile"]


@pytest.fixture(autouse=True)
def fresh_dynamo() -> None:
    torch._dynamo.reset()
    clear_compiled_graphs()


def compiled(model: nn.Module, frontend: str) -> Callable[..., Any]:
    if frontend == "fusec.compile":
        return fusec.compile(model)
    return torch.compile(model, backend="fusec")


def train(
    model: nn.Module, forward: Callable[..., Any], inputs: tuple, loss_fn: Loss, steps: int = 2
) -> list[tuple[torch.Tensor, dict[str, torch.Tensor], dict[str, torch.Tensor]]]:
    """Per step: the loss, every parameter's gradient, and the state after the step."""
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    history = []
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(forward(*inputs))
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        opt.step()
        state = {k: v.clone() for k, v in model.state_dict().items()}
        history.append((loss.detach().clone(), grads, state))
    return history


def assert_same_training(got: list, want: list, names: list[str]) -> None:
    for (loss, grads, state), (loss_e, grads_e, state_e) in zip(got, want, strict=True):
        torch.testing.assert_close(loss, loss_e, rtol=1e-4, atol=1e-5)
        assert sorted(grads) == sorted(names), "every parameter gets a gradient"
        assert sorted(grads) == sorted(grads_e)
        for n in grads:
            torch.testing.assert_close(grads[n], grads_e[n], rtol=1e-4, atol=1e-5, msg=n)
        assert sorted(state) == sorted(state_e)
        for k in state:
            torch.testing.assert_close(state[k], state_e[k], rtol=1e-4, atol=1e-5, msg=k)


def run_both(name: str, frontend: str) -> tuple[list[CompiledGraph], Callable[..., Any]]:
    torch.manual_seed(0)
    model, inputs, loss_fn = MODELS[name]()
    model.train()
    reference = copy.deepcopy(model)
    want = train(reference, reference, inputs, loss_fn)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        forward = compiled(model, frontend)
        got = train(model, forward, inputs, loss_fn)
    eager = [str(w.message) for w in caught if "running eagerly" in str(w.message)]
    assert not eager, eager
    assert_same_training(got, want, [n for n, _ in model.named_parameters()])
    graphs = forward.compiled_graphs if frontend == "fusec.compile" else compiled_graphs()
    return graphs, forward


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_training_steps_match_eager(name: str, frontend: str) -> None:
    graphs, _ = run_both(name, frontend)
    kinds = [g.kind for g in graphs]
    # One forward and one backward graph per compiled region, both run by fusec.
    assert "forward" in kinds and "backward" in kinds, kinds
    assert kinds.count("forward") == kinds.count("backward")
    assert all(g.function.last is not None and g.function.last.program for g in graphs)
    # Every model has pointwise work on both sides (bias adds, activations,
    # residuals, their gradients): each side launches fused kernels.
    for kind in ("forward", "backward"):
        assert sum(g.launches_per_call for g in graphs if g.kind == kind) > 0, kind


def test_dynamo_graphs_lists_the_forward_and_backward_graphs() -> None:
    """`fusec.dynamo_graphs()` once held only graphs compiled without autograd:
    after a training step through `torch.compile` (a DDP run's every graph) it was
    empty, as if fusec had seen nothing, though both halves had fused."""
    graphs, _ = run_both("mlp", "torch.compile")
    assert {g.kind for g in graphs} == {"forward", "backward"}
    listed = [f for f in fusec.dynamo_graphs() if any(g.function is f for g in graphs)]
    assert len(listed) == len(graphs)
    per_step = sum(f.launches_per_call for f in listed)
    assert per_step == sum(g.launches_per_call for g in graphs) > 0
    assert fusec.explain(listed).kernels == per_step


def test_inference_keeps_the_fx_path() -> None:
    model = MODELS["mlp"]()[0]
    f = fusec.compile(model)
    x = torch.randn(4, 32)
    with torch.no_grad():
        torch.testing.assert_close(f(x), model(x))
    assert f.compiled_graphs == []
    assert f.last is not None and f.last.training is None and f.last.program is not None
    assert f.launches_per_call > 0


def test_torch_compile_inference_keeps_the_fx_path() -> None:
    model = MODELS["mlp"]()[0]
    g = torch.compile(model, backend="fusec")
    x = torch.randn(4, 32)
    with torch.no_grad():
        torch.testing.assert_close(g(x), model(x))
    assert compiled_graphs() == []
    assert fusec.cache_stats()["kernels_compiled"] > 0


def test_gradients_of_inputs_and_scalar_arguments() -> None:
    def fn(x: torch.Tensor, y: torch.Tensor, scale: float) -> torch.Tensor:
        return torch.tanh(x * y + scale) * torch.sigmoid(y)

    f = fusec.compile(fn)
    for scale in (0.5, 2.0):  # a scalar argument is part of the specialization
        x = torch.randn(6, 5, requires_grad=True)
        y = torch.randn(6, 5, requires_grad=True)
        out = f(x, y, scale)
        out.backward(torch.ones_like(out))
        xe, ye = x.detach().requires_grad_(), y.detach().requires_grad_()
        ref = fn(xe, ye, scale)
        ref.backward(torch.ones_like(ref))
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(x.grad, xe.grad)
        torch.testing.assert_close(y.grad, ye.grad)
    assert len([g for g in f.compiled_graphs if g.kind == "forward"]) == 2


def test_untraceable_by_aot_autograd_runs_eagerly_with_a_warning() -> None:
    class Item(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = nn.Parameter(torch.randn(4))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            # `.item()` is data-dependent: AOTAutograd cannot trace it without Dynamo.
            return x * self.w * torch.ops.aten._local_scalar_dense(x.sum())

    model = Item()
    f = fusec.compile(model)
    x = torch.randn(4)
    with pytest.warns(UserWarning, match="AOTAutograd failed"):
        out = f(x)
    torch.testing.assert_close(out, model(x))
    out.sum().backward()
    assert model.w.grad is not None


def lstm_grads(model: nn.Module, forward: Callable[..., Any], inputs: tuple) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)
    out = forward(*inputs)
    out.square().mean().backward()
    return [out.detach(), *(p.grad for p in model.parameters())]


def test_lstm_cell_forward_is_one_kernel_and_its_backward_two() -> None:
    """The seeds' LSTM cell: the forward (bias adds, chunk, gate tail) is one
    kernel; the backward's pointwise work is one kernel whose exit is the cat of
    the four gate gradients (chunk's backward), the two bias sums one more, the
    rest matmuls."""
    from reference_models import lstm_cell

    torch.manual_seed(0)
    b, i, h = 3, 5, 4
    inputs = [torch.randn(b, i), torch.randn(b, h), torch.randn(b, h)]
    weights = [torch.randn(4 * h, i), torch.randn(4 * h, h), torch.randn(4 * h), torch.randn(4 * h)]
    f = fusec.compile(lstm_cell)
    results = []
    for fn in (lstm_cell, f):
        w = [t.clone().requires_grad_() for t in weights]
        hy, cy = fn(*inputs, *w)
        (hy.square().sum() + cy.sum()).backward()
        results.append([hy, cy, *(t.grad for t in w)])
    for got, want in zip(results[1], results[0], strict=True):
        torch.testing.assert_close(got, want)
    forward, backward = f.compiled_graphs
    assert (forward.kind, forward.launches_per_call) == ("forward", 1)
    assert (backward.kind, backward.launches_per_call) == ("backward", 2)
    # The backward kernel's one output is the cat of the gate gradients, [b, 4h];
    # the two bias gradients, column sums of that cat, are one kernel of their
    # own (`fuse{lone-reductions}`: a cat exit takes no reduction).
    groups = [s for s in backward.function.last.program.all_steps() if s.kind == "kernel"]
    assert len(groups) == 2
    ir = backward.function.ir()
    assert f"-> (tensor<{b}x{4 * h}xf32>)" in ir
    assert f"-> (tensor<1x{4 * h}xf32>, tensor<1x{4 * h}xf32>)" in ir


def kernel_keys(graph: CompiledGraph, with_cat: bool | None = None) -> Counter[str]:
    """The kernel cache keys of a compiled graph's groups (one per launch), those
    writing a cat exit only (True), or those without one (False)."""
    from fusec.dialects.aten import CatOp
    from fusec.dialects.fusion import GroupOp
    from fusec.runtime.cache import default_cache

    spec = graph.function.last
    assert spec is not None and spec.imported is not None
    groups = [g for g in spec.imported.func.walk() if isinstance(g, GroupOp)]
    if with_cat is not None:
        groups = [g for g in groups if any(isinstance(o, CatOp) for o in g.walk()) == with_cat]
    return Counter(default_cache().key(g) for g in groups)


def test_lstm_loop_shares_its_kernels_across_50_steps() -> None:
    """Unrolled over T steps, each step launches one forward kernel and one
    backward kernel (the gate gradients through the cat exit), plus one kernel
    summing the bias gradients; the weights' gradients, sums of one product per
    step, are one product each (`concat-matmul-sum`). The boundary steps run the loop body's
    kernels (`share-group-kernels`): the last forward step and the first backward
    step write the outputs they lack to scratch, and the last backward step,
    which gets no cell-state gradient from a later step, is fed zeros for it.
    Step 1's backward reads the saved cell state of step 0 like every other step
    (`fusec_partition` keeps min-cut from recomputing it there). T=50 needs no
    step kernel that T=4 did not compile, and every distinct kernel is compiled
    exactly once: the step kernels with T=4, the bias-gradient sum (one more
    input per step) with each T."""
    from training_models import LSTMLoop

    step_keys: dict[int, set[str]] = {}
    seen: set[str] = set()
    for steps in (4, 50):
        torch.manual_seed(0)
        model = LSTMLoop(8, 8, steps)
        inputs = (torch.randn(steps, 2, 8), torch.randn(2, 8), torch.randn(2, 8))
        want = lstm_grads(model, model, inputs)
        compiled_before = fusec.cache_stats()["kernels_compiled"]
        f = fusec.compile(model)
        got = lstm_grads(model, f, inputs)
        for g, w in zip(got, want, strict=True):
            torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
        forward, backward = f.compiled_graphs
        assert forward.launches_per_call == steps
        # The two biases accumulate (their per-step gradients are one sum).
        assert backward.launches_per_call == steps + 1
        fw, bw = kernel_keys(forward), kernel_keys(backward, with_cat=True)
        assert list(fw.values()) == [steps], "one forward kernel for every step"
        assert list(bw.values()) == [steps], "one backward kernel for every step"
        # The other sums the steps' bias gradients.
        sums = kernel_keys(backward, with_cat=False)
        assert sorted(sums.values()) == [1]
        keys = set(fw) | set(bw) | set(sums)
        assert len(keys) == 3
        compiled = fusec.cache_stats()["kernels_compiled"] - compiled_before
        assert compiled == len(keys - seen) == (3 if not seen else 1)
        seen |= keys
        step_keys[steps] = set(fw) | set(bw)
    assert step_keys[50] == step_keys[4]


def saved_for_backward(gm: torch.fx.GraphModule) -> list[str]:
    """A forward graph's outputs after the function's own (one) result."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    return [str(n) for n in output.args[0][1:]]


def test_min_cut_partition_keeps_fewer_activations_than_saving_everything() -> None:
    """The partition recomputes cheap pointwise work in the backward (detached
    copies of activations are rematerialized there), so the forward saves fewer
    tensors than AOTAutograd's default partition, which saves every activation
    the backward reads."""
    from torch._functorch.aot_autograd import aot_function
    from torch._functorch.partitioners import default_partition

    def fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(torch.tanh(x) * y + 1.0) * torch.exp(x)

    f = fusec.compile(fn)
    x = torch.randn(8, 16, requires_grad=True)
    y = torch.randn(8, 16)
    out = f(x, y)
    out.backward(torch.ones_like(out))
    xe = x.detach().requires_grad_()
    ref = fn(xe, y)
    ref.backward(torch.ones_like(ref))
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(x.grad, xe.grad)
    forward, backward = f.compiled_graphs
    assert forward.launches_per_call == 1 and backward.launches_per_call == 1

    default_saved: list[list[str]] = []

    def keep(gm: torch.fx.GraphModule, _: Any) -> Any:
        default_saved.append(saved_for_backward(gm))
        return gm

    aot_function(fn, keep, keep, partition_fn=default_partition)(xe, y)
    assert 0 < len(saved_for_backward(forward.gm)) < len(default_saved[0])


@pytest.mark.parametrize("name", ["mlp", "gpt2"])
def test_torch_compile_dynamic_shapes_train_through_fusec(name: str) -> None:
    """With `dynamic=True` the ATen graphs take symbolic sizes as inputs; Dynamo's
    own restart signals raised inside AOTAutograd pass through the backend (they
    are not failures), and two batch sizes give eager's gradients."""
    torch.manual_seed(0)
    model, inputs, _ = MODELS[name]()
    reference = copy.deepcopy(model)
    g = torch.compile(model, backend="fusec", dynamic=True)
    for batch in (4, 6):
        x = torch.randn(batch, *inputs[0].shape[1:])
        got, want = g(x).square().mean(), reference(x).square().mean()
        got.backward()
        want.backward()
        torch.testing.assert_close(got, want)
        for (n, p), q in zip(model.named_parameters(), reference.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=n)
        model.zero_grad()
        reference.zero_grad()
    kinds = [c.kind for c in compiled_graphs()]
    assert "forward" in kinds and "backward" in kinds


def test_relu_backward_is_one_kernel_with_no_opaque_op() -> None:
    """relu's `threshold_backward` reaches fusec whole and imports as
    `where(x <= 0, 0, grad)` with the 0 a constant of the kernel: no
    `aten.scalar_tensor` (its decomposition's) runs opaque on every backward call
    or is handed to the kernel as a guarded input. Gradients match eager's, zero
    ones included (inputs exactly 0 where relu's gradient is 0)."""

    def fn(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(x @ w.t() + b) * 2.0

    torch.manual_seed(0)
    x = torch.randn(6, 5)
    x[0] = 0.0
    w, b = torch.randn(4, 5), torch.randn(4)
    b[1] = 0.0
    f = fusec.compile(fn)
    grads = []
    for call in (fn, f):
        ws = [w.clone().requires_grad_(), b.clone().requires_grad_()]
        call(x, *ws).sum().backward()
        grads.append([t.grad for t in ws])
    for got, want in zip(grads[1], grads[0], strict=True):
        torch.testing.assert_close(got, want)
    forward, backward = f.compiled_graphs
    assert backward.launches_per_call == 1
    assert "threshold_backward" in str(backward.gm.code)
    assert "aten.opaque" not in backward.function.ir()
    assert "scalar_tensor" not in backward.function.ir()


def _top_level_sums_of_pointwise(ir: str) -> list[str]:
    """The `aten.sum`s outside any group whose input is, through views, the result
    of a group or of a pointwise op (a sum `hoist-reductions` should have joined
    to that group)."""
    defs: dict[str, tuple[str, str]] = {}
    sums: list[tuple[str, str]] = []
    for line in ir.splitlines():
        m = re.match(r"^    (%[\w.]+)(?:, %[\w.]+)* = ([\w.]+) (%[\w.]+)", line)
        if m is None:
            continue
        name, op, first = m.groups()
        defs[name] = (op, first)
        if op == "aten.sum":
            sums.append((line.strip(), first))
    bad = []
    for line, value in sums:
        op, first = defs.get(value, ("", ""))
        while op in ("aten.view", "aten.reshape"):
            op, first = defs.get(first, ("", ""))
        if op in _POINTWISE or op in ("scf.if", "fusion.group"):  # a group, guarded or not
            bad.append(line)
    return bad


_POINTWISE = {op.name for op in Aten.operations if op.has_trait(Pointwise)}


@pytest.mark.parametrize("name", ["mlp", "vit"])
def test_bias_gradients_are_outputs_of_the_gradient_kernels(name: str) -> None:
    """A bias gradient (a column sum of a pointwise gradient that matrix products
    read first, often through a reshape) is an extra output of the kernel that
    computes the gradient, not a PyTorch `sum` after it (`hoist-reductions`)."""
    graphs, _ = run_both(name, "torch.compile")
    backward = [g for g in graphs if g.kind == "backward"]
    assert backward
    for g in backward:
        ir = g.function.ir()
        assert ir.count("aten.sum") > 0
        assert _top_level_sums_of_pointwise(ir) == []


@pytest.mark.parametrize("name", ["mlp", "vit"])
def test_backward_runs_no_sum_through_pytorch(name: str) -> None:
    """Every `sum` of the backward is in a kernel (issue 33, item 2): those whose
    input no kernel computes (the q/k/v bias gradients, column sums of the
    attention backward's output; the last layer's, of the loss gradient) are
    kernels of their own (`fuse{lone-reductions}`), with gradients equal to eager's."""
    graphs, _ = run_both(name, "torch.compile")
    backward = [g for g in graphs if g.kind == "backward"]
    assert backward
    for g in backward:
        top = [ln for ln in g.function.ir().splitlines() if re.match(r"^    %\S+ = aten\.sum ", ln)]
        assert top == [], top


def rotate_half(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Llama's RoPE: its backward pads two slices of the gradient back with zeros
    (`slice_backward`) and adds them."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def overlapping_halves(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Slices that overlap: their padded gradients' sum is no `cat`."""
    return torch.cat((x[..., :5] * sin[..., :5], x[..., 3:] * cos[..., 3:]), dim=-1)


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("f", [rotate_half, overlapping_halves])
def test_a_cats_padded_gradients_sum_to_a_cat(f, dynamic):
    """The backward of `cat` (of slices) adds two `slice_backward`s; when the slices
    are complementary the sum is imported as the `cat` of the parts, which fuses,
    so no `slice_backward` runs through PyTorch; otherwise it stays as written."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 8, requires_grad=True)
    cos, sin = torch.randn(5, 8), torch.randn(5, 8)
    want = f(x, cos, sin)
    (want_grad,) = torch.autograd.grad(want.square().sum(), x)
    torch._dynamo.reset()
    clear_compiled_graphs()
    if dynamic:  # symbolic batch and heads; positions and head size are the tables'
        for d in (0, 1):
            torch._dynamo.mark_dynamic(x, d)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(f, backend="fusec")(x, cos, sin)
        (got_grad,) = torch.autograd.grad(got.square().sum(), x)
    # The sum `x * cos`'s gradient + the cat is imported too, not run eagerly.
    assert not [w for w in caught if "running eagerly" in str(w.message)]
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_grad, want_grad)
    (backward,) = [g for g in compiled_graphs() if g.kind == "backward"]
    ir = backward.function.ir()
    assert ("slice_backward" in ir) == (f is overlapping_halves), ir
    if f is rotate_half:
        # The gradient times `sin`, read as two halves, runs per half inside the
        # kernel that negates and concatenates them (`slice-pointwise`).
        top = re.findall(r"^    %\S+ = aten\.\w+", ir, re.M)
        assert not [op for op in top if op.endswith(("aten.mul", "aten.neg", "aten.cat"))], top


def picked_entries(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """`nn.MultiheadAttention`'s fused projection: q, k, v picked from one
    product. The backward pads each gradient back (`select_backward`) and adds."""
    q, k, v = (x @ w).unflatten(-1, (3, 8)).unsqueeze(0).transpose(0, -2).squeeze(-2)
    return torch.tanh(q) * k + v


def two_of_three_entries(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """Entries 0 and 2 only: their padded gradients leave entry 1 zero, no `cat`."""
    t = (x @ w).unflatten(-1, (3, 8))
    return torch.tanh(t[..., 0, :]) * t[..., 2, :]


@pytest.mark.parametrize("f", [picked_entries, two_of_three_entries])
def test_picked_entries_gradients_sum_to_a_cat(f):
    """Gradients of every entry of a dim, padded and summed, are imported as
    their `cat` (the parts unsqueezed): no `select_backward` runs. Entries that
    leave a gap stay as written."""
    torch.manual_seed(0)
    x, w = torch.randn(4, 5, 16), torch.randn(16, 24, requires_grad=True)
    want = f(x, w)
    (want_grad,) = torch.autograd.grad(want.square().sum(), w)
    torch._dynamo.reset()
    clear_compiled_graphs()
    got = torch.compile(f, backend="fusec")(x, w)
    (got_grad,) = torch.autograd.grad(got.square().sum(), w)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got_grad, want_grad, rtol=1e-4, atol=1e-5)
    (backward,) = [g for g in compiled_graphs() if g.kind == "backward"]
    ir = backward.function.ir()
    assert ("select_backward" in ir) != (f is picked_entries), ir
