"""Concat as a fusion exit (`fuse-concat-exits`): a `cat` of one group's outputs runs
inside that group's kernel, which writes each part into its slice of one buffer.
Every result is compared with eager PyTorch on the same inputs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import fusec
import pytest
import torch
from fusec.codegen.kernel import KernelSignature, OperandSpec, OutputSpec
from fusec.runtime.kernel_signature import CatExit
from fusec.runtime.operands import prepare
from fusec.runtime.program import Step


def lstm_backward(ig, fg, gg, og, cx, cy, dhy, dcy):
    """The pointwise backward of an LSTM cell (gates already activated), ending in
    the `cat` of the four gate gradients, as in the seeds' word language model."""
    t = torch.tanh(cy)
    dc = dhy * og * (1 - t * t) + dcy
    do = dhy * t * og * (1 - og)
    di = dc * gg * ig * (1 - ig)
    df = dc * cx * fg * (1 - fg)
    dg = dc * ig * (1 - gg * gg)
    return torch.cat([di, df, dg, do], 1), dc * fg


def _taken(steps: Sequence[Step]) -> Iterator[Step]:
    """The steps a call runs when every guard holds: guards themselves are checks,
    an `if` runs its then-branch (the kernel; the else-branch is the fallback)."""
    for s in steps:
        if s.kind == "if":
            yield from _taken(s.branches[0].steps)
        elif s.kind != "guard":
            yield s


def _steps(f: Any) -> list[Step]:
    assert f.last is not None and f.last.program is not None
    return list(_taken(f.last.program.steps))


def _torch_cats(f: Any) -> list[Step]:
    return [s for s in _steps(f) if s.kind != "kernel" and "cat" in s.name]


class _Counter:
    """Counts calls of a torch function while patched in."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.calls = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.fixture
def count_torch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], _Counter]]:
    def patch(name: str) -> _Counter:
        counter = _Counter(getattr(torch, name))
        monkeypatch.setattr(torch, name, counter)
        return counter

    yield patch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(4, 5), (3, 16)])
def test_lstm_backward_is_one_kernel_writing_into_the_cat(dtype, shape, count_torch):
    f = fusec.compile(lstm_backward)
    gen = torch.Generator().manual_seed(0)
    # CPU generator, values moved to the default device (`--device cuda`)
    args = [torch.rand(shape, dtype=dtype, generator=gen, device="cpu") for _ in range(8)]
    args = [a.to(torch.get_default_device()) for a in args]
    want = lstm_backward(*args)
    f(*args)  # compiles
    cat = count_torch("cat")
    got = f(*args)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w)
    assert f.launches_per_call == 1
    assert [s.kind for s in _steps(f)] == ["kernel"]
    assert _torch_cats(f) == []
    assert cat.calls == 0
    # One buffer for the cat and one for dc * fg: no intermediate for the four parts.
    # (The kernel's call allocates its plan's buffers, through
    # `fusec.runtime.cpu.empty_strided_cpu`, which bypasses `torch.empty`.)
    (kernel,) = [s.fn.kernel for s in _steps(f) if s.kind == "kernel"]
    kernel = getattr(getattr(kernel, "func", None), "__self__", kernel)  # CUDA: a partial
    (plan,) = kernel._plans.values()
    assert len(plan.allocs) == 2
    assert got[0].is_contiguous() and got[0]._base is None


def _three_parts(dim: int) -> Callable[..., torch.Tensor]:
    def fn(x, y):
        a = torch.exp(x)
        b = a * y
        return torch.cat([a, b, torch.sigmoid(b) - x], dim)

    return fn


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_of_group_outputs_matches_eager(dtype, shape, dim):
    fn = _three_parts(dim)
    f = fusec.compile(fn)
    x, y = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    got, want = f(x, y), fn(x, y)
    assert got.dtype == want.dtype and got.shape == want.shape
    torch.testing.assert_close(got, want)
    assert f.launches_per_call == 1 and _torch_cats(f) == []
    # Another shape of the same broadcast pattern reuses the kernel.
    big = tuple(s + 2 for s in shape)
    x, y = torch.randn(big, dtype=dtype), torch.randn(big, dtype=dtype)
    torch.testing.assert_close(f(x, y), fn(x, y))
    assert len(f.specializations) == 1


def test_part_used_outside_the_cat_stays_an_output():
    def fn(x, y):
        a = torch.exp(x)
        b = a * y
        s = a + b
        return torch.cat([a, b, a], 0), s, a

    f = fusec.compile(fn)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    got, want = f(x, y), fn(x, y)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)
    assert f.launches_per_call == 1 and _torch_cats(f) == []


def test_cat_promotes_parts_of_different_dtypes():
    def fn(x, y):
        a = x * 2
        b = y > 0
        s = a + b
        return torch.cat([a, b], 1), s

    f = fusec.compile(fn)
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    got, want = f(x, y), fn(x, y)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        torch.testing.assert_close(g, w)
    assert _torch_cats(f) == []


def test_empty_index_space():
    fn = _three_parts(1)
    f = fusec.compile(fn)
    x, y = torch.randn(0, 3), torch.randn(0, 3)
    got, want = f(x, y), fn(x, y)
    assert got.shape == want.shape == (0, 9)


def test_parts_of_different_shapes_stay_a_torch_cat():
    def fn(x, y):
        return torch.cat([torch.exp(x), x * y], 1)

    f = fusec.compile(fn)
    x, y = torch.randn(4, 1), torch.randn(4, 3)
    torch.testing.assert_close(f(x, y), fn(x, y))
    assert len(_torch_cats(f)) == 1


def test_a_non_group_part_of_another_shape_stays_a_torch_cat():
    def fn(x, y):
        return torch.cat([torch.exp(x), y], 0)

    f = fusec.compile(fn)
    x, y = torch.randn(2, 3), torch.randn(5, 3)
    torch.testing.assert_close(f(x, y), fn(x, y))
    assert len(_torch_cats(f)) == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_part_no_group_computes_is_copied_by_the_exit(dtype):
    def fn(x, y):
        return torch.cat([torch.exp(x), y, x * 2], 1)

    f = fusec.compile(fn)
    x, y = torch.randn(4, 3, dtype=dtype), torch.randn(4, 3, dtype=dtype)
    torch.testing.assert_close(f(x, y), fn(x, y))
    assert _torch_cats(f) == []
    assert f.launches_per_call == 1
    yt = torch.randn(3, 4, dtype=dtype).t()  # passed through from a transposed layout
    torch.testing.assert_close(f(x, yt), fn(x, yt))


def test_a_cat_of_one_part_no_group_computes_is_a_copy_kernel():
    def fn(x, w):
        k = (x @ w).view(2, 4, 3, 8).transpose(1, 2)  # a KV cache's `cat((past, k))`
        return torch.cat([k], dim=-2), torch.cat([x, x.t().t()], 0)

    torch._dynamo.reset()
    f = torch.compile(fn, backend="fusec")
    x, w = torch.randn(8, 12), torch.randn(12, 24)
    for got, want in zip(f(x, w), fn(x, w), strict=True):
        torch.testing.assert_close(got, want)
        assert got.is_contiguous()
    with torch.profiler.profile() as prof:
        f(x, w)
    # The one-part cat is a kernel; `cat((x, x))` of no computed part stays one.
    assert [e.name for e in prof.events()].count("aten::cat") == 1
    assert fusec.dynamo_graphs()[-1].launches_per_call == 1


def _rotary(q, cos, sin):
    # Hugging Face Llama's `apply_rotary_pos_emb` with its `rotate_half`.
    half = q.shape[-1] // 2
    rotated = torch.cat((-q[..., half:], q[..., :half]), dim=-1)
    return q * cos + rotated * sin


def test_rotate_half_runs_as_a_kernel_with_no_neg_or_cat_call():
    torch._dynamo.reset()
    f = torch.compile(_rotary, backend="fusec")
    q, cos, sin = torch.randn(2, 4, 8, 16), torch.randn(8, 16), torch.randn(8, 16)
    torch.testing.assert_close(f(q, cos, sin), _rotary(q, cos, sin))
    with torch.profiler.profile() as prof:
        got = f(q, cos, sin)
    torch.testing.assert_close(got, _rotary(q, cos, sin))
    names = {e.name for e in prof.events()}
    assert "aten::neg" not in names and "aten::cat" not in names
    assert fusec.dynamo_graphs()[-1].launches_per_call == 2


def test_a_part_of_symbolic_sizes_is_passed_through_only_where_sizes_agree():
    """Under `dynamic=True` a passed-through part's `?` dims may differ from the
    group's at run time: a size 1 is specialized (a program of its own, where
    the parts' types differ and the cat stays PyTorch's); other sizes that do
    not broadcast make the kernel decline, and PyTorch's cat runs."""

    def fn(x, y):
        return torch.cat([torch.exp(x), y], 0)

    torch._dynamo.reset()
    f = torch.compile(fn, backend="fusec", dynamic=True)
    for n, m in ((3, 3), (4, 1), (1, 4), (2, 5), (6, 6)):
        x, y = torch.randn(n, 3), torch.randn(m, 3)
        torch.testing.assert_close(f(x, y), fn(x, y))


def test_prepare_hands_the_kernel_slices_of_one_buffer():
    # Kernel outputs: 0 plain, 1 and 2 the parts of group result 0 along dim 1.
    out = OutputSpec("f32", (-1, -1))
    sig = KernelSignature(
        rank=2,
        inputs=("f32",),
        operands=(OperandSpec(0, (), "f32"),),
        scalars=(),
        outputs=(out, out, out),
        exits=(CatExit(result=0, dim=1, parts=(1, 2)),),
    )
    x = torch.randn(4, 3, device="cpu")  # prepare's outputs are CPU tensors by default
    operands, space, outs, results = prepare(sig, [x])
    assert space == (4, 3) and len(outs) == 3 and len(results) == 2
    cat, plain = results
    assert cat.shape == (4, 6) and plain.shape == (4, 3)
    assert outs[0] is plain
    outs[1].fill_(1.0)
    outs[2].fill_(2.0)
    assert torch.equal(cat, torch.cat([torch.ones(4, 3), torch.full((4, 3), 2.0)], 1).cpu())
    assert all(o._base is cat for o in outs[1:])
