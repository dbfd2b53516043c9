"""Transposed and expanded operands on the CPU (`fusec.passes.lowering.cpu_loop_nest`,
`fusec.runtime.cpu`): the tiled kernel variant against eager PyTorch on every
layout it copies (transposed, permuted, partly transposed, expanded, sliced and
chunked views), at sizes that are and are not multiples of the tiles, and the
launch plan that asks for the variant only when a layout needs it."""

from __future__ import annotations

from collections.abc import Callable

import fusec
import pytest
import torch
from fusec.codegen.kernel import TILED_CPU, build_kernel
from fusec.dialects.inference import I64
from fusec.passes.lowering.cpu_loop_nest import TILE_INNER, TILE_OUTER
from fusec.runtime import cpu
from fusec.runtime.cache import KernelCache
from xdsl.dialects.builtin import IntegerAttr

from tests.test_codegen import make_group


def _add_relu(b, x, y):
    return b.ReluOp(b.AddOp(x, y))


def _sigmoid_mul(b, x, y):
    return b.MulOp(b.SigmoidOp(x), y)


def _check_variant(
    inputs: list[torch.Tensor], body: Callable, want: Callable[..., torch.Tensor]
) -> None:
    """The tiled variant and the plain kernel both give eager's result."""
    group = make_group(inputs, body)
    for target in ("cpu", TILED_CPU):
        (got,) = cpu.CpuKernel(build_kernel(group, target))(inputs)
        torch.testing.assert_close(got, want(*inputs))


SIZES = [
    (1, 1),
    (1, 7),
    (3, 5),
    (TILE_OUTER, TILE_INNER),
    (TILE_OUTER + 1, TILE_INNER - 1),
    (2 * TILE_OUTER - 1, 3 * TILE_INNER + 5),
    (64, 64),
    (257, 130),
]


@pytest.mark.parametrize(("r", "c"), SIZES)
def test_transposed_operand(r, c):
    a, b = torch.randn(c, r).t(), torch.randn(r, c)
    _check_variant([a, b], _add_relu, lambda x, y: torch.relu(x + y))


@pytest.mark.parametrize(("r", "c"), [(3, 5), (33, 140), (64, 256)])
def test_both_operands_transposed_and_output_strided(r, c):
    # Both inputs contiguous along dim 0: that becomes the inner loop, and the
    # output (contiguous along dim 1) is the tensor read across.
    a, b = torch.randn(c, r).t(), torch.randn(c, r).t()
    _check_variant([a, b], _sigmoid_mul, lambda x, y: x.sigmoid() * y)


@pytest.mark.parametrize("perm", [(2, 0, 1), (1, 2, 0), (0, 2, 1), (2, 1, 0)])
def test_permuted_3d(perm):
    shape = (5, 37, 130)
    x = torch.randn(shape).permute(perm)
    y = torch.randn(x.shape)
    _check_variant([x, y], _add_relu, lambda p, q: torch.relu(p + q))


def test_partially_transposed_and_sliced():
    # A column slice of a transposed tensor: stride 1 on dim 0, a gap between columns.
    big = torch.randn(300, 70).t()  # [70, 300], strides (1, 70)
    x = big[3:60, 5:290:2]
    y = torch.randn(x.shape)
    _check_variant([x, y], _add_relu, lambda p, q: torch.relu(p + q))


def test_broadcast_and_transposed():
    # A row vector broadcast over rows (a constant 0 stride), a transposed
    # operand and a column broadcast, in one kernel.
    a = torch.randn(150, 40).t()  # [40, 150]
    row = torch.randn(150)
    col = torch.randn(40, 1)

    def body(b, x, r, c):
        return b.MulOp(b.AddOp(x, r), c)

    _check_variant([a, row, col], body, lambda x, r, c: (x + r) * c)


@pytest.mark.parametrize(("r", "c"), [(2, 2), (19, 300), (128, 128)])
def test_expanded_operand(r, c):
    # A runtime 0 stride on the inner dim (an expanded column), which the plain
    # kernel runs as a scalar loop and the variant copies into row fills.
    x = torch.randn(r, c)
    e = torch.randn(r, 1).expand(r, c)
    _check_variant([x, e], _sigmoid_mul, lambda p, q: p.sigmoid() * q)


def test_chunks_of_a_transposed_tensor():
    # Chunk views of a transposed input: each chunk its own strided operand.
    base = torch.randn(96, 50).t()  # [50, 96]

    def body(b, x):
        p, q = b.ChunkOp(x, chunks=IntegerAttr(2, I64), dim=IntegerAttr(1, I64))
        return b.AddOp(b.TanhOp(p), q)

    def want(x):
        p, q = x.chunk(2, 1)
        return p.tanh() + q

    _check_variant([base], body, want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64, torch.int32])
def test_other_dtypes(dtype):
    a = torch.randn(70, 33).t().to(dtype) if dtype.is_floating_point else None
    if a is None:
        a = torch.randint(-50, 50, (70, 33)).t().to(dtype)
    b = torch.ones(33, 70, dtype=dtype)

    def body(bb, x, y):
        return bb.AddOp(x, y)

    _check_variant([a, b], body, lambda x, y: x + y)


BLOCK_DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int32,
    torch.int64,
    torch.int16,
    torch.int8,
    torch.uint8,
]
"""Every dtype a CPU kernel computes in but bool."""


def _distinct(shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """Values that tell elements apart (in range of every dtype here), so an
    element a block transpose puts in the wrong place shows."""
    n = torch.arange(int(torch.tensor(shape).prod())).reshape(shape)
    return (n % 97 + n // 97 % 13).to(dtype)


@pytest.mark.parametrize("bits", [256, 512])
@pytest.mark.parametrize("dtype", BLOCK_DTYPES)
def test_block_transpose_every_dtype_and_width(monkeypatch, dtype, bits):
    # Tiles of whole blocks (64 x 128), tiles with rows and columns left over
    # (sizes not multiples of 4, 8 or 16), and tiles smaller than one block,
    # at both register widths (8 x 8 f32 blocks at both, 4 x 4 / 8 x 8 f64).
    import fusec.backends.llvm_jit
    from fusec.dialects import inference

    from tests import test_codegen

    monkeypatch.setattr(fusec.backends.llvm_jit, "host_vector_width", lambda: bits)
    monkeypatch.setitem(test_codegen.DT, torch.int8, inference.I8)
    monkeypatch.setitem(test_codegen.DT, torch.int16, inference.I16)
    monkeypatch.setitem(test_codegen.DT, torch.uint8, inference.U8)
    probe = [_distinct((8, 8), dtype).t(), _distinct((8, 8), dtype)]
    group = make_group(probe, lambda b, x, y: b.AddOp(x, y))
    kernel = cpu.CpuKernel(build_kernel(group, TILED_CPU))
    for r, c in [(TILE_OUTER, TILE_INNER), (67, 131), (2 * TILE_OUTER + 9, 17), (5, 7), (16, 16)]:
        a, b = _distinct((c, r), dtype).t(), _distinct((r, c), dtype).flip(0)
        (got,) = kernel([a, b])
        torch.testing.assert_close(got, a + b)


@pytest.mark.parametrize("perm", [(2, 0, 1), (1, 2, 0), (0, 2, 1)])
def test_block_transpose_3d_permutes_of_whole_blocks(monkeypatch, perm):
    # Dims that are multiples of 8: every tile is whole blocks. One thread: a
    # split may narrow the tiled dim (48 rows in 8 chunks of 6, say), which
    # leaves no whole block to transpose. (1, 2, 0) tiles a dim of 4: edges only.
    monkeypatch.setattr(cpu, "num_threads", lambda: 1)
    x = _distinct((4, 64, 48), torch.float32).permute(perm)
    y = torch.randn(x.shape)
    _check_variant([x, y], _add_relu, lambda p, q: torch.relu(p + q))


@pytest.mark.parametrize("threads", [2, 3, 5])
def test_block_transpose_split_over_threads(monkeypatch, threads):
    # Each thread's rows start where the split puts them, mid-block as often
    # as not; a broadcast row and a transposed half operand in the same kernel.
    monkeypatch.setattr(cpu, "num_threads", lambda: threads)
    a = torch.randn(515, 300).t()  # [300, 515]
    h = torch.randn(515, 300, dtype=torch.float16).t()
    row = torch.randn(515)

    def body(b, x, y, r):
        return b.MulOp(b.AddOp(x, y), r)

    _check_variant([a, h, row], body, lambda x, y, r: (x + y) * r)


def test_bool_operand_transposed():
    m = (torch.randn(40, 30) > 0).t()
    x = torch.randn(30, 40)
    _check_variant(
        [m, x], lambda b, p, q: b.WhereOp(p, q, b.NegOp(q)), lambda p, q: torch.where(p, q, -q)
    )


@pytest.mark.parametrize("threads", [2, 3])
def test_work_split_over_threads(monkeypatch, threads):
    # Big enough to split: each thread's rows start mid-tile for the variant.
    monkeypatch.setattr(cpu, "num_threads", lambda: threads)
    a, b = torch.randn(301, 250).t(), torch.randn(250, 301)
    _check_variant([a, b], _add_relu, lambda x, y: torch.relu(x + y))


# ----------------------------------------------------------------- the plan


def test_plan_builds_the_variant_only_for_a_layout_that_needs_it():
    cache = KernelCache(directory=None)
    a, b = torch.randn(40, 60), torch.randn(40, 60)
    kernel = cache.kernel_for(make_group([a, b], _add_relu))
    assert isinstance(kernel, cpu.CpuKernel)
    for x in (a, a[:, ::2].contiguous(), torch.randn(40, 1).expand(40, 60).contiguous()):
        y = b[:, : x.shape[1]]
        torch.testing.assert_close(kernel([x, y])[0], torch.relu(x + y))
    assert cache.stats.kernels_compiled == 1 and kernel._tiled is None
    t = torch.randn(60, 40).t()
    torch.testing.assert_close(kernel([t, b])[0], torch.relu(t + b))
    assert cache.stats.kernels_compiled == 2 and kernel._tiled is not None
    # Every layout still right through the variant, and it is built once.
    e = torch.randn(40, 1).expand(40, 60)
    for x in (a, t, e):
        torch.testing.assert_close(kernel([x, b])[0], torch.relu(x + b))
    assert cache.stats.kernels_compiled == 2


def test_a_tiled_launch_is_split_by_the_tiled_cost(monkeypatch):
    # 2^15 elements: the plain estimate (0.26 ns each) keeps a contiguous launch
    # on one thread; the same launch with a transposed operand costs at least
    # `TILED_COST` per element, which pays for a split.
    monkeypatch.setattr(cpu, "num_threads", lambda: 2)
    kernel = KernelCache(directory=None).kernel_for(
        make_group([torch.randn(8, 8), torch.randn(8, 8)], _add_relu)
    )
    a, b = torch.randn(128, 256), torch.randn(128, 256)
    plans = []
    for x in (a, torch.randn(256, 128).t()):
        torch.testing.assert_close(kernel([x, b])[0], torch.relu(x + b))
        plans.append(list(kernel._plans.values())[-1])
    assert kernel.signature.cost < cpu.TILED_COST
    assert len(plans[0].chunks) == 1 and len(plans[1].chunks) > 1


def test_compiled_function_on_transposed_inputs():
    def fn(a, b):
        return torch.relu(a.t() + b)

    f = fusec.compile(fn)
    for r, c in [(3, 5), (33, 129), (64, 64), (1, 200)]:
        a, b = torch.randn(c, r), torch.randn(r, c)
        torch.testing.assert_close(f(a, b), fn(a, b))
    assert f.launches_per_call == 1


def test_compiled_function_on_an_expanded_input():
    def fn(x, e):
        return torch.nn.functional.gelu(x + e)

    f = fusec.compile(fn)
    x, c = torch.randn(30, 200), torch.randn(30, 1)
    torch.testing.assert_close(f(x, c.expand(30, 200)), fn(x, c.expand(30, 200)))
    torch.testing.assert_close(f(x, c.expand(30, 200) * 1), fn(x, c.expand(30, 200)))


@pytest.mark.parametrize(
    ("strides", "inner_fixed", "want"),
    [
        ([[1, 64], [64, 1], [64, 1]], [False, False], True),  # a.t() + b
        ([[64, 1], [1, 0], [64, 1]], [False, False], True),  # x + c.expand
        ([[64, 1], [1, 0], [64, 1]], [False, True], False),  # x + c, c is [r, 1]
        ([[64, 1], [0, 1], [64, 1]], [False, False], False),  # x + row
        ([[2, 128], [64, 1], [64, 1]], [False, False], False),  # strided, not transposed
    ],
)
def test_wants_tiles(strides, inner_fixed, want):
    assert cpu._wants_tiles([32, 64], strides[:2], inner_fixed) is want


def test_memory_order_puts_a_transposed_operands_dim_second_innermost():
    # [A, B, C] space; x contiguous along dim 0, y and the output along dim 2.
    sizes = [5, 6, 7]
    x, y, out = [1, 35, 5], [42, 7, 1], [42, 7, 1]
    got_sizes, got_strides, order = cpu._memory_order(sizes, [x, y, out], [set(), set()])
    assert order == [1, 0, 2]
    assert got_sizes == [6, 5, 7] and got_strides[0] == [35, 1, 5]


def test_many_operands_keep_within_the_stack_limit():
    # 40 f32 operands would need 40 tile buffers (1.25 MiB of stack): the
    # variant has no tiled nest then, and still computes the sum.
    from fusec.codegen.kernel import kernel_llvm_ir

    inputs = [torch.randn(70, 20).t() for _ in range(40)]

    def body(b, *xs):
        acc = xs[0]
        for x in xs[1:]:
            acc = b.AddOp(acc, x)
        return acc

    group = make_group(inputs, body)
    _, ir_text, _ = kernel_llvm_ir(group, "cpu", tile=True)
    assert "alloca" not in ir_text
    (got,) = cpu.CpuKernel(build_kernel(group, TILED_CPU))(inputs)
    torch.testing.assert_close(got, sum(inputs[1:], inputs[0]))
    few = make_group(inputs[:4], body)
    assert "alloca" in kernel_llvm_ir(few, "cpu", tile=True)[1]


def test_variant_is_cached_on_disk_like_any_kernel(tmp_path, monkeypatch):
    # A second cache over the same directory (another process, say) loads both
    # the kernel and its variant, and takes neither for a corrupt entry.
    t, b = torch.randn(50, 30).t(), torch.randn(30, 50)
    for round_ in range(2):
        # Each round loads its own kernels (not this process's loaded ones).
        monkeypatch.setattr(cpu, "_loaded", {})
        cache = KernelCache(directory=tmp_path)
        kernel = cache.kernel_for(make_group([t, b], _add_relu))
        torch.testing.assert_close(kernel([t, b])[0], torch.relu(t + b))
        built = (2, 0) if round_ == 0 else (0, 2)
        assert (cache.stats.kernels_compiled, cache.stats.disk_hits) == built
        assert cache.stats.corrupt_entries == 0


def test_a_kernel_loaded_by_key_finds_its_variant_on_disk(tmp_path, monkeypatch):
    # A warm-started program has kernels by key and no group: the variant an
    # earlier process built is found by the key derived from its kernel's.
    t, b = torch.randn(50, 30).t(), torch.randn(30, 50)
    cache = KernelCache(directory=tmp_path)
    group = make_group([t, b], _add_relu)
    key, kernel = cache.keyed_kernel_for(group)
    kernel([t, b])
    assert cache.stats.kernels_compiled == 2
    monkeypatch.setattr(cpu, "_loaded", {})
    warm = KernelCache(directory=tmp_path)
    loaded = warm.kernel_by_key(key)
    torch.testing.assert_close(loaded([t, b])[0], torch.relu(t + b))
    assert loaded._tiled is not None
    assert (warm.stats.kernels_compiled, warm.stats.disk_hits) == (0, 2)
    # With no variant on disk, it is built from the group text the kernel's
    # entry keeps, on the first launch that wants it, and stored for later.
    monkeypatch.setattr(cpu, "_loaded", {})
    cold = tmp_path / "other"
    first = KernelCache(directory=cold)
    key, _ = first.keyed_kernel_for(group)
    monkeypatch.setattr(cpu, "_loaded", {})
    second = KernelCache(directory=cold)
    built = second.kernel_by_key(key)
    torch.testing.assert_close(built([t, b])[0], torch.relu(t + b))
    assert built._tiled is not None
    assert (second.stats.kernels_compiled, second.stats.disk_hits) == (1, 1)
    monkeypatch.setattr(cpu, "_loaded", {})
    third = KernelCache(directory=cold)
    assert third.kernel_by_key(key)([t, b])[0].equal(torch.relu(t + b))
    assert (third.stats.kernels_compiled, third.stats.disk_hits) == (0, 2)


def test_a_kernel_entry_without_group_text_runs_its_plain_nest(tmp_path, monkeypatch):
    # An entry with no (or unparseable) group text, and no variant on disk:
    # the kernel runs its plain nest, still right, and nothing is built.
    from fusec.codegen import ir_text

    t, b = torch.randn(50, 30).t(), torch.randn(30, 50)
    group = make_group([t, b], _add_relu)
    for text in ("", "not IR {"):
        monkeypatch.setattr(ir_text, "group_text", lambda _g, text=text: text)
        d = tmp_path / str(len(text))
        key, _ = KernelCache(directory=d).keyed_kernel_for(group)
        monkeypatch.setattr(cpu, "_loaded", {})
        plain = KernelCache(directory=d)
        kernel = plain.kernel_by_key(key)
        torch.testing.assert_close(kernel([t, b])[0], torch.relu(t + b))
        assert kernel._tiled is None and plain.stats.kernels_compiled == 0


def test_group_text_round_trips_to_the_same_key():
    from fusec.codegen.ir_text import group_from_text, group_text

    cache = KernelCache(directory=None)
    for inputs, body in [
        ([torch.randn(5, 3).t(), torch.randn(3, 5)], _add_relu),
        ([torch.randn(4, 6), torch.randn(4, 1)], _sigmoid_mul),
    ]:
        group = make_group(inputs, body)
        again = group_from_text(group_text(group))
        assert again is not None and cache.key(again) == cache.key(group)
