"""Views without PyTorch calls: a program specialized on exact shapes makes the
views it can from sizes and strides (`fusec.codegen.view_layouts`, the
`reinterpret` and learned view steps of `fusec.runtime.torch_steps`). Every result
is checked against eager on the same inputs, and the views' ATen calls are counted
with `torch.profiler`."""

from __future__ import annotations

import itertools
import random
from typing import Any

import fusec
import pytest
import torch
from fusec.api.compiled import run_pipeline
from fusec.codegen.host_program import build_program
from fusec.codegen.pipelines import FUSE_PIPELINE
from fusec.codegen.view_layouts import view_strides
from fusec.frontend.importer import import_fx, trace
from fusec.runtime.cache import default_cache
from fusec.runtime.program_data import program_from_data, program_to_data
from fusec.runtime.torch_steps import learned
from kernel_counts import top_level_aten
from test_guards import Built

VIEW_CALLS = {
    "aten::view",
    "aten::reshape",
    "aten::_unsafe_view",
    "aten::transpose",
    "aten::permute",
    "aten::t",
    "aten::split",
    "aten::chunk",
    "aten::narrow",
    "aten::slice",
    "aten::squeeze",
    "aten::unsqueeze",
    "aten::expand",
    "aten::as_strided",
    "aten::empty",
    "aten::set_",
}


# ------------------------------------------------------------------ view strides


def _layouts() -> list[torch.Tensor]:
    """Tensors of many layouts: contiguous, permuted, sliced, with size-1 dims."""
    rng = random.Random(0)
    out = []
    for _ in range(300):
        rank = rng.randint(1, 4)
        sizes = [rng.choice([1, 2, 3, 4, 6]) for _ in range(rank)]
        doubled = [2 * s for s in sizes]
        base = torch.arange(int(torch.tensor(doubled).prod())).view(doubled)
        index = tuple(slice(0, s) if rng.random() < 0.5 else slice(0, 2 * s, 2) for s in sizes)
        x = base[index]
        perm = list(range(rank))
        rng.shuffle(perm)
        out.append(x.permute(perm))
    return out


def _factorings(n: int) -> list[tuple[int, ...]]:
    shapes = [(n,), (1, n), (n, 1)]
    for a in range(2, n + 1):
        if n % a == 0:
            shapes += [(a, n // a), (1, a, n // a), (a, 1, n // a)]
            for b in range(2, n // a + 1):
                if (n // a) % b == 0:
                    shapes.append((a, b, n // a // b))
    return shapes


def test_view_strides_are_torchs() -> None:
    checked = copies = 0
    for x in _layouts():
        for new in _factorings(x.numel()):
            got = view_strides(tuple(x.shape), x.stride(), new)
            try:
                want = x.view(new).stride()
            except RuntimeError:
                want = None
            assert got == want, (tuple(x.shape), x.stride(), new)
            checked += 1
            copies += want is None
    # Both outcomes are covered: views and reshapes that must copy.
    assert checked > 1000 and 0 < copies < checked


# ------------------------------------------------------------------ whole programs


def attention_heads(a: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> Any:
    x = torch.addmm(b, a.view(-1, 32), w).view(2, 8, 96)
    q, k, v = x.split(32, dim=2)
    q = q.view(2, 8, 4, 8).transpose(1, 2)
    k = k.view(2, 8, 4, 8).transpose(1, 2)
    v = v.view(2, 8, 4, 8).permute(0, 2, 3, 1)
    return (q * k).sum(-1), k.reshape(2, -1), v, x.narrow(2, 8, 16)[:, 1:6:2].unsqueeze(0)


def _heads_args() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 32), torch.randn(32, 96), torch.randn(96)]


def test_views_of_a_matrix_product_make_no_aten_calls() -> None:
    cf = fusec.compile(attention_heads)
    args = _heads_args()
    for _ in range(2):
        got = cf(*args)
    for g, e in zip(got, attention_heads(*args), strict=True):
        torch.testing.assert_close(g, e)
        assert g.shape == e.shape
    counts = top_level_aten(lambda: cf(*args))
    # The transposed k copies (no view has its strides): one reshape; the rest are
    # made from sizes and strides.
    # One product: the flattened `addmm` is raised to one `linear` of `a`.
    assert counts["aten::addmm"] + counts["aten::linear"] == 1
    assert counts["aten::reshape"] == 1
    views = sum(n for name, n in counts.items() if name in VIEW_CALLS and name != "aten::reshape")
    assert views == 0, counts


def test_views_share_storage_as_eager_views_do() -> None:
    def f(a: torch.Tensor, w: torch.Tensor) -> Any:
        y = torch.mm(a, w)
        return y, y.t(), y.view(-1)[2:]

    cf = fusec.compile(f)
    a, w = torch.randn(3, 4), torch.randn(4, 5)
    for _ in range(2):
        y, t, tail = cf(a, w)
    assert t.data_ptr() == y.data_ptr() and t.stride() == (1, 5)
    assert tail.data_ptr() == y.data_ptr() + 2 * y.element_size()
    y.mul_(2)  # writes through the views, as in eager
    torch.testing.assert_close(t, y.t())
    torch.testing.assert_close(tail, y.view(-1)[2:])


def test_a_returned_view_of_an_argument_stays_a_torch_view() -> None:
    # A reinterpreted tensor has no `_base` and no `requires_grad`: a view of an
    # argument that leaves the program keeps eager's.
    def f(w: torch.Tensor, x: torch.Tensor) -> Any:
        # (A view: exact shapes; a kernel: a program of PyTorch calls runs eagerly.)
        return w.t(), torch.sigmoid(torch.mm(x, w.t()).view(-1) * 2)

    cf = fusec.compile(f)
    w = torch.randn(3, 4, requires_grad=True)
    x = torch.randn(2, 4)
    with torch.no_grad():
        for _ in range(2):
            wt, y = cf(w, x)
        assert wt._base is w and wt.requires_grad == w.t().requires_grad
        torch.testing.assert_close(y, f(w, x)[1])


def test_views_of_a_non_contiguous_argument_are_right() -> None:
    cf = fusec.compile(attention_heads)
    a, w, b = _heads_args()
    a = torch.randn(2, 8, 64)[..., ::2]  # same sizes, other strides
    for _ in range(2):
        got = cf(a, w, b)
    for g, e in zip(got, attention_heads(a, w, b), strict=True):
        torch.testing.assert_close(g, e)


def flipped(x: torch.Tensor) -> torch.Tensor:
    """`x` in a transposed layout, as an op fusec runs opaquely."""
    return x.t().contiguous().t()


torch.fx.wrap("flipped")


def viewed_in_a_group(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(flipped(b).t()) * 2 + a.reshape(4, 6)


def test_a_group_run_through_pytorch_takes_no_arguments_layout() -> None:
    # A group without its kernel runs its body, whose block arguments are the
    # group's inputs (here an opaque op's transposed result), not the function's
    # (both contiguous): the transpose inside must not take their layout.
    a, b = torch.randn(4, 6), torch.randn(6, 4)
    gm = trace(viewed_in_a_group)
    imported = import_fx(gm, [a, b], "viewed_in_a_group")
    run_pipeline(imported.module, FUSE_PIPELINE)
    program = build_program(
        imported.func,
        lambda group: None,
        lambda op: imported.opaque[op.node.data].bind(gm),
        exact_shapes=True,
        contiguous_args=[True, True],
    )
    assert [s.kind for s in program.steps].count("group") == 1
    for _ in range(2):
        (got,) = program([a, b])
        torch.testing.assert_close(got, viewed_in_a_group(a, b))


def guarded_then_viewed(a: torch.Tensor, b: torch.Tensor) -> Any:
    y = torch.sigmoid(a + b)
    return y.reshape(-1)[3:9], y.transpose(0, 1)


def test_a_guard_that_fails_makes_its_fallback_contiguous_for_the_views() -> None:
    # The fallback's `a + b` keeps a transposed `a`'s layout; the views after the
    # guarded group were computed for the kernel's contiguous output.
    example = [torch.randn(4, 6), torch.randn(4, 6)]
    built = Built(guarded_then_viewed, example, "guard{layout=contiguous}", exact_shapes=True)
    steps = built.program.describe()
    assert "contiguous" in steps
    for a, b in (example, [torch.randn(6, 4).t(), torch.randn(4, 6)]):
        got = built.program(list((a, b)))
        for g, e in zip(got, guarded_then_viewed(a, b), strict=True):
            torch.testing.assert_close(g, e)
    assert built.kernel_runs == 1 and built.program.guard_failures == 1


def test_a_program_with_reinterpreted_views_is_data() -> None:
    example = [torch.randn(4, 6), torch.randn(4, 6)]
    built = Built(guarded_then_viewed, example, "guard", exact_shapes=True)
    keys: dict[Any, str] = {}
    kernels: dict[str, Any] = {}

    def key(step_fn: Any) -> str:
        k = keys.setdefault(step_fn, f"k{len(keys)}")
        kernels[k] = step_fn
        return k

    data = program_to_data(built.program, lambda g: key(g), lambda node: {"node": node})
    assert "reinterpret" in str(data)
    cache = default_cache()
    loaded = program_from_data(
        data,
        lambda k: lambda xs: cache.kernel_for(kernels[k], "cpu")(xs),
        lambda call: pytest.fail("no opaque calls here"),
    )
    a, b = example
    for g, e in zip(loaded([a, b]), guarded_then_viewed(a, b), strict=True):
        torch.testing.assert_close(g, e)


# ------------------------------------------------------------------ learned views


def test_a_learned_view_follows_its_inputs_strides() -> None:
    calls: list[int] = []

    def transpose(x: torch.Tensor) -> tuple[torch.Tensor]:
        calls.append(1)
        return (x.transpose(0, 1),)

    step = learned(transpose)
    a = torch.randn(3, 4)
    b = torch.randn(4, 3).t()  # same sizes, other strides
    for x in (a, a + 1, b, b + 0, a):
        (got,) = step(x)
        assert got.data_ptr() == x.data_ptr() and got.stride() == x.t().stride()
        torch.testing.assert_close(got, x.t())
    # Learned from a, then from b (other strides), then from a again.
    assert len(calls) == 3


def test_a_learned_reshape_that_copies_keeps_copying() -> None:
    step = learned(lambda x: (x.reshape(-1),))
    x = torch.randn(4, 3).t()
    for _ in range(3):
        (got,) = step(x)
        torch.testing.assert_close(got, x.reshape(-1))
        assert got.data_ptr() != x.data_ptr()


def test_a_learned_split_makes_every_piece() -> None:
    step = learned(lambda x: tuple(x.split([1, 2, 3], dim=1)))
    for x in (torch.randn(2, 6), torch.randn(2, 6), torch.randn(6, 2).t()):
        for g, e in zip(step(x), x.split([1, 2, 3], dim=1), strict=True):
            assert g.stride() == e.stride() and g.data_ptr() == e.data_ptr()
            torch.testing.assert_close(g, e)


def test_views_of_an_opaque_result_are_learned() -> None:
    # `torch.cumsum` is opaque: its result's layout is known only at run time.
    # (The sigmoid is a kernel: a program of PyTorch calls alone runs eagerly.)
    def f(x: torch.Tensor) -> Any:
        y = torch.cumsum(x, 1).transpose(0, 1)
        return y.reshape(24)[1:], y.unsqueeze(0), torch.sigmoid(x * 2)

    cf = fusec.compile(f)
    x = torch.randn(4, 6)
    for _ in range(2):
        got = cf(x)
    for g, e in zip(got, f(x), strict=True):
        torch.testing.assert_close(g, e)
    counts = top_level_aten(lambda: cf(x))
    assert counts["aten::cumsum"] == 1
    assert counts["aten::reshape"] == 1  # the transposed cumsum copies
    assert counts["aten::unsqueeze"] == counts["aten::transpose"] == 0, counts


@pytest.mark.parametrize("dims", list(itertools.permutations(range(3))))
def test_permuted_views_of_a_kernel_output(dims: tuple[int, ...]) -> None:
    def f(x: torch.Tensor, y: torch.Tensor) -> Any:
        z = torch.sigmoid(x * y).permute(*dims)
        return z, z.expand(2, *z.shape), z.squeeze()

    cf = fusec.compile(f)
    x, y = torch.randn(2, 1, 5), torch.randn(2, 3, 5)
    for _ in range(2):
        got = cf(x, y)
    for g, e in zip(got, f(x, y), strict=True):
        torch.testing.assert_close(g, e)
        assert g.stride() == e.stride() or e.numel() == 0


class _Heads(torch.nn.Module):
    """Linear projections split into heads and merged back, as attention does."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv = torch.nn.Linear(32, 96)
        self.out = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).split(32, dim=-1)
        q, k, v = (t.view(2, 8, 4, 8).transpose(1, 2) for t in (q, k, v))
        y = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
        return self.out(torch.tanh(y.transpose(1, 2).reshape(2, 8, 32)))


def test_training_graphs_make_their_views_without_aten_calls() -> None:
    # AOTAutograd's forward and backward graphs are static: their programs bake
    # the views' strides too.
    torch.manual_seed(0)
    model = _Heads()
    ref = _Heads()
    ref.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="fusec")
    x = torch.randn(2, 8, 32)
    for _ in range(2):
        out = compiled(x)
        out.sum().backward()
    grad = torch.ones(2, 8, 32)
    out = compiled(x)
    backward = top_level_aten(lambda: out.backward(grad))
    views = {name: n for name, n in backward.items() if name in VIEW_CALLS}
    assert not views, backward
    ref(x).sum().backward()
    ref(x).backward(grad)
    ref(x).sum().backward()
    for p, r in zip(model.parameters(), ref.parameters(), strict=True):
        torch.testing.assert_close(p.grad, r.grad, rtol=1e-4, atol=1e-5)


class _Steps(torch.nn.Module):
    """An unrolled loop over `xs[t]`: the forward saves each step's view of the
    input for the backward, and also returns one."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 16) / 4)

    def forward(self, xs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        for t in range(xs.shape[0]):
            h = torch.tanh(xs[t] @ self.w + h) * xs[t]
        return h, xs[1]


def test_saved_and_returned_views_of_inputs_in_training_graphs() -> None:
    # The forward graph returns `xs[t]` (saved for the backward) and `xs[1]`:
    # the program makes them from sizes and strides, with no `select`/`squeeze`
    # per view and no `detach` by AOTAutograd per saved view. AOTAutograd makes
    # the returned alias again from `xs`, so it is still a view of it.
    torch.manual_seed(0)
    model, ref = _Steps(), _Steps()
    ref.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="fusec")
    xs, h = torch.randn(4, 3, 16, requires_grad=True), torch.randn(3, 16)
    for _ in range(2):
        compiled(xs, h)[0].sum().backward()
    box: dict[str, Any] = {}
    forward = top_level_aten(lambda: box.setdefault("out", compiled(xs, h)))
    assert not {n for n in forward if n in VIEW_CALLS or n == "aten::detach"}, forward
    out, alias = box["out"]
    want, want_alias = ref(xs, h)
    torch.testing.assert_close(out, want)
    assert alias._base is xs and alias.data_ptr() == xs[1].data_ptr()
    torch.testing.assert_close(alias, want_alias)
    xs.grad = None
    (out.sum() + alias.sum()).backward()
    got = xs.grad.clone()
    xs.grad = None
    (want.sum() + want_alias.sum()).backward()
    torch.testing.assert_close(got, xs.grad)
    torch.testing.assert_close(model.w.grad, 3 * ref.w.grad, rtol=1e-4, atol=1e-5)
