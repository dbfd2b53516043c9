"""The CPU executor's launch plans (`fusec.runtime.cpu`): merged dims, the work
split, static zero strides, scalars through the packed entry, and the generated
host code around them, each checked against eager PyTorch."""

from __future__ import annotations

import fusec
import pytest
import torch
from fusec.codegen.kernel import build_kernel
from fusec.runtime import cpu

from tests.test_codegen import make_group


def _only_plan(kernel: cpu.CpuKernel) -> cpu.LaunchPlan:
    (plan,) = kernel._plans.values()
    return plan


def _sizes(kernel: cpu.CpuKernel, plan: cpu.LaunchPlan) -> list[int]:
    lrank = kernel.signature.loop_rank
    return list(plan.template[2 : 2 + lrank])


def test_contiguous_operands_run_as_one_row():
    x, y = torch.randn(6, 7, 5), torch.randn(6, 7, 5)
    body = make_group([x, y], lambda b, a, c: b.MulOp(b.ExpOp(a), c))
    kernel = cpu.CpuKernel(build_kernel(body))
    (got,) = kernel([x, y])
    torch.testing.assert_close(got, x.exp() * y)
    assert _sizes(kernel, _only_plan(kernel)) == [1, 1, 6 * 7 * 5]


def test_broadcast_and_sliced_operands_keep_their_dims():
    # [R,1] + [R,C] where the [R,C] is a column slice: no dim merges.
    big = torch.randn(5, 12)
    x, y = torch.randn(5, 1), big[:, 2:9]
    kernel = cpu.CpuKernel(build_kernel(make_group([x, y], lambda b, a, c: b.AddOp(a, c))))
    (got,) = kernel([x, y])
    torch.testing.assert_close(got, x + y)
    assert _sizes(kernel, _only_plan(kernel)) == [5, 7]


def test_size_one_dim_with_any_stride_reads_its_one_element():
    # A [R,1] operand whose size-1 dim has a large stride (a column of a wider
    # tensor): the kernel's constant 0 stride on that dim must agree.
    x = torch.randn(4, 9)[:, 3:4]
    y = torch.randn(4, 6)
    kernel = cpu.CpuKernel(build_kernel(make_group([x, y], lambda b, a, c: b.SubOp(a, c))))
    (got,) = kernel([x, y])
    torch.testing.assert_close(got, x - y)


def test_one_kernel_serves_several_layouts():
    x = torch.randn(8, 16)
    kernel = cpu.CpuKernel(build_kernel(make_group([x], lambda b, a: b.TanhOp(a))))
    for t in (x, x[:, ::2], torch.randn(16, 8).t(), torch.randn(3, 5), torch.randn(0, 4)):
        (got,) = kernel([t])
        torch.testing.assert_close(got, t.tanh())
    assert len(kernel._plans) == 5


@pytest.mark.parametrize("threads", [2, 3])
def test_split_over_threads_along_a_deeper_dim(monkeypatch, threads):
    # Dim 0 is 1: the split must narrow a dim that is bigger than 1 and move the
    # base pointers, not split dim 0 into nothing. Dim 1 (3) splits evenly over 3
    # threads; over 2 it would split 2 : 1, so the innermost dim splits instead.
    monkeypatch.setattr(cpu, "num_threads", lambda: threads)
    monkeypatch.setattr(cpu, "NATIVE_LAUNCH_NS", 1.0)
    monkeypatch.setattr(cpu, "POOL_LAUNCH_NS", 1.0)
    monkeypatch.setattr(cpu, "CHUNKS_PER_THREAD", 1)
    big = torch.randn(1, 3, 50000)
    x, y = big[:, :, :40000], torch.randn(40000)
    kernel = cpu.CpuKernel(build_kernel(make_group([x, y], lambda b, a, c: b.MulOp(a, c))))
    (got,) = kernel([x, y])
    torch.testing.assert_close(got, x * y)
    plan = _only_plan(kernel)
    assert len(plan.chunks) == threads
    bounds, shifts = plan.chunks[1]
    assert bounds == ((2 + 1, 1),) if threads == 3 else ((2 + 2, 20000),)
    assert shifts


def test_split_over_threads_along_dim_zero(monkeypatch):
    monkeypatch.setattr(cpu, "num_threads", lambda: 2)
    monkeypatch.setattr(cpu, "NATIVE_LAUNCH_NS", 1.0)
    monkeypatch.setattr(cpu, "POOL_LAUNCH_NS", 1.0)
    monkeypatch.setattr(cpu, "CHUNKS_PER_THREAD", 1)
    x = torch.randn(64, 2048)[:, :1024]  # rows do not merge
    kernel = cpu.CpuKernel(build_kernel(make_group([x], lambda b, a: b.SigmoidOp(a))))
    (got,) = kernel([x])
    torch.testing.assert_close(got, x.sigmoid())
    bounds, shifts = _only_plan(kernel).chunks[1]
    assert bounds == ((0, 32), (1, 64)) and shifts == ()


@pytest.mark.parametrize("threads", [1, 2])
def test_the_split_follows_torchs_threads(monkeypatch, threads):
    # A user who runs PyTorch on one thread (`torch.set_num_threads(1)`) gets
    # fusec's kernels on one thread too, as Inductor's; `FUSEC_NUM_THREADS` unset.
    monkeypatch.delenv("FUSEC_NUM_THREADS", raising=False)
    monkeypatch.setattr(cpu, "NATIVE_LAUNCH_NS", 1.0)
    monkeypatch.setattr(cpu, "POOL_LAUNCH_NS", 1.0)
    monkeypatch.setattr(cpu, "CHUNKS_PER_THREAD", 1)
    cpu._fixed_threads.cache_clear()
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        x = torch.randn(64, 1024)
        kernel = cpu.CpuKernel(build_kernel(make_group([x], lambda b, a: b.SigmoidOp(a))))
        (got,) = kernel([x])
    finally:
        torch.set_num_threads(before)
        cpu._fixed_threads.cache_clear()
    torch.testing.assert_close(got, x.sigmoid())
    assert len(_only_plan(kernel).chunks) == threads


def test_unplanned_call_matches_the_planned_one():
    x, y = torch.randn(3, 4), torch.randn(4)
    kernel = cpu.CpuKernel(build_kernel(make_group([x, y], lambda b, a, c: b.AddOp(a, c))))
    (planned,) = kernel([x, y])
    (unplanned,) = kernel._call_unplanned([x, y])
    torch.testing.assert_close(planned, x + y)
    torch.testing.assert_close(unplanned, x + y)


@pytest.mark.parametrize("scalar", [2.5, 3, True])
def test_python_scalars_reach_the_kernel(scalar):
    def fn(x, s):
        return (x * s).sigmoid()

    f = fusec.compile(fn)
    x = torch.randn(5, 3)
    for s in (scalar, type(scalar)(0)):
        torch.testing.assert_close(f(x, s), fn(x, s))
    assert f.launches_per_call == 1


def test_generated_host_code_frees_and_returns_like_eager():
    def fn(x, y):
        a = torch.tanh(x) * y
        b = torch.mm(a, y.t())  # not fused: runs through torch between kernels
        return b.sigmoid() + 1, a

    f = fusec.compile(fn)
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    for _ in range(2):
        for g, w in zip(f(x, y), fn(x, y), strict=True):
            torch.testing.assert_close(g, w)
    assert f.launches_per_call == 2


def test_vector_width_attribute_tags_every_definition():
    from fusec.backends.llvm_jit import _with_vector_width

    ir = 'define void @"a"(i64 %".1")\n{\n  ret void\n}\ndefine void @b() {\n  ret void\n}\n'
    out = _with_vector_width(ir, 512)
    assert out.count("#4242") == 3  # two definitions and the attribute group
    assert '"prefer-vector-width"="512"' in out
    assert _with_vector_width(ir, None) == ir


@pytest.mark.skipif(
    __import__("fusec.backends.llvm_jit").backends.llvm_jit.host_vector_width() is None, reason="no AVX-512 host"
)
def test_kernels_use_full_width_vectors_on_avx512():
    x, y = torch.randn(1000), torch.randn(1000)
    artifact = build_kernel(make_group([x, y], lambda b, a, c: b.MulOp(b.TanhOp(a), c)))
    assert "<16 x float>" in artifact.code.decode()
    (got,) = cpu.CpuKernel(artifact)([x, y])
    torch.testing.assert_close(got, x.tanh() * y)


def test_transposed_inputs_are_read_along_their_memory():
    # Both inputs transposed: the loop over their contiguous dim goes innermost.
    a, b = torch.randn(30, 20), torch.randn(30, 20)
    x, y = a.t(), b.t()
    kernel = cpu.CpuKernel(build_kernel(make_group([x, y], lambda bb, p, q: bb.AddOp(p, q))))
    (got,) = kernel([x, y])
    torch.testing.assert_close(got, x + y)
    assert got.is_contiguous()
    assert _sizes(kernel, _only_plan(kernel)) == [30, 20]  # the space is [20, 30]


def test_loop_order_keeps_a_size_one_operand_dim_in_place():
    # `c` is [20, 1]: its constant 0 stride on dim 1 forbids moving dim 0 there.
    x, c = torch.randn(30, 20).t(), torch.randn(20, 1)
    kernel = cpu.CpuKernel(build_kernel(make_group([x, c], lambda bb, p, q: bb.MulOp(p, q))))
    (got,) = kernel([x, c])
    torch.testing.assert_close(got, x * c)
    assert _sizes(kernel, _only_plan(kernel)) == [20, 30]


@pytest.mark.parametrize("allocate", ["torch", "dispatched"])
def test_outputs_are_fresh_cpu_tensors_laid_out_as_eager(monkeypatch, allocate):
    # Outputs come from torch's own allocation entry, or `torch.empty_strided` on
    # a torch without it: either way fresh, contiguous and on the CPU, even under
    # a `torch.device` context that makes another device the default.
    if allocate == "dispatched":
        monkeypatch.setattr(cpu, "empty_strided_cpu", cpu._dispatched_empty_strided)
    x, y = torch.randn(6, 5), torch.randn(6, 5)
    kernel = cpu.CpuKernel(
        build_kernel(make_group([x, y], lambda b, a, c: b.MulOp(b.TanhOp(a), c)))
    )
    first = kernel([x, y])
    with torch.device("meta"):
        outs = [kernel.call([x, y]) for _ in range(2)]
    for (got,) in (first, *outs):
        torch.testing.assert_close(got, x.tanh() * y)
        assert got.device.type == "cpu" and got.is_contiguous() and got._base is None
    assert outs[0][0].data_ptr() != outs[1][0].data_ptr()
