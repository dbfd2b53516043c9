"""The CPU output pool (`fusec.runtime.cpu_pool`): a large kernel output's
storage is handed out again once nothing else refers to it, never while a
tensor, a view or a saved reference still does, and every result equals eager."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import fusec
import pytest
import torch
from fusec.runtime import cpu_pool
from fusec.runtime.cpu_pool import MIN_BYTES, OutputPool


def _fn(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * y + 1


def _args(seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    n = MIN_BYTES // 4 * 2  # an f32 output of twice the pooled minimum
    return torch.randn(n // 512, 512, generator=gen), torch.randn(n // 512, 512, generator=gen)


@pytest.fixture
def out_pool(monkeypatch: pytest.MonkeyPatch) -> OutputPool:
    fresh = OutputPool(1 << 30)
    monkeypatch.setattr(cpu_pool, "_POOL", fresh)
    # A kernel loaded by an earlier test keeps the allocator its launch plans
    # took then (the process's one pool, outside tests): load kernels afresh.
    from fusec.runtime import cpu

    monkeypatch.setattr(cpu, "_loaded", {})
    return fresh


def test_a_dropped_output_is_reused(out_pool):
    f = fusec.compile(_fn)
    x, y = _args(0)
    out = f(x, y)
    assert f.launches_per_call == 1
    torch.testing.assert_close(out, _fn(x, y))
    first = out.data_ptr()
    del out
    for seed in (1, 2):
        x, y = _args(seed)
        out = f(x, y)
        torch.testing.assert_close(out, _fn(x, y))
        assert out.data_ptr() == first
        del out
    assert out_pool.reused >= 2


def test_outputs_still_referred_to_are_not_reused(out_pool):
    f = fusec.compile(_fn)
    kept = []
    for seed in range(3):
        x, y = _args(seed)
        kept.append((f(x, y), _fn(x, y)))
    x, y = _args(9)
    whole = f(x, y)
    row = whole[3]  # a view keeps the block busy after its base is dropped
    del whole
    later = [f(*_args(seed)) for seed in (10, 11)]
    ptrs = {t.data_ptr() for t, _ in kept} | {t.data_ptr() for t in later}
    assert len(ptrs) == 5
    assert not any(row.data_ptr() <= p < row.data_ptr() + 512 * 4 for p in ptrs)
    for got, want in kept:
        torch.testing.assert_close(got, want)
    torch.testing.assert_close(row, _fn(x, y)[3])


def test_small_outputs_are_not_pooled(out_pool):
    f = fusec.compile(_fn)
    x, y = torch.randn(8, 8), torch.randn(8, 8)
    for _ in range(3):
        torch.testing.assert_close(f(x, y), _fn(x, y))
    assert out_pool.held == 0


def test_the_cap_drops_free_blocks_and_then_allocates_unpooled():
    mib = 1 << 20
    p = OutputPool(4 * mib)
    a = p.empty((mib // 4,), (1,), torch.float32, mib)
    b = p.empty((mib // 2,), (1,), torch.float32, 2 * mib)
    assert p.held == 3 * mib
    del a  # free: dropped to make room for a second 2 MiB block while b is in use
    c = p.empty((mib // 2,), (1,), torch.float32, 2 * mib)
    assert p.held == 4 * mib and c.data_ptr() != b.data_ptr()
    d = p.empty((mib // 4,), (1,), torch.float32, mib)  # nothing free: unpooled
    assert p.held == 4 * mib and p.reused == 0
    for t in (b, c, d):
        t.fill_(1.0)
        assert t.sum().item() == t.numel()


def test_concurrent_calls_never_share_a_block(out_pool):
    f = fusec.compile(_fn)
    f(*_args(0))
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for k in range(5):
                x, y = _args(seed * 10 + k)
                torch.testing.assert_close(f(x, y), _fn(x, y))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_a_cap_of_zero_turns_the_pool_off():
    code = "from fusec.runtime import cpu_pool; print(cpu_pool.pool() is None)"
    env = {**os.environ, "FUSEC_CPU_POOL_MB": "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "True", out.stderr


@pytest.mark.parametrize("change", ["shrunk", "shared"])
def test_a_block_whose_storage_was_shrunk_or_shared_is_dropped(change):
    mib = 1 << 20
    p = OutputPool(4 * mib)
    a = p.empty((mib // 4,), (1,), torch.float32, mib)
    if change == "shrunk":
        a.untyped_storage().resize_(0)
    else:
        a.share_memory_()  # another process may hold it now
    del a
    b = p.empty((mib // 4,), (1,), torch.float32, mib)
    b.fill_(2.0)
    assert p.reused == 0 and p.held == mib and b.sum().item() == 2 * b.numel()


def test_pooled_outputs_follow_inference_mode_and_autograd(out_pool):
    """A block made under `inference_mode` serves normal calls and back: each
    output is an inference tensor exactly when eager's is, and a call that
    needs grad (the training path) still gets its gradients right."""
    f = fusec.compile(_fn)
    x, y = _args(0)
    for mode in (True, False, True):
        with torch.inference_mode(mode):
            got, want = f(x, y), _fn(x, y)
            assert got.is_inference() == want.is_inference() == mode
            torch.testing.assert_close(got, want)
            del got
    assert out_pool.reused >= 2
    xg = x.clone().requires_grad_()
    f(xg, y).sum().backward()
    xe = x.clone().requires_grad_()
    _fn(xe, y).sum().backward()
    torch.testing.assert_close(xg.grad, xe.grad)


@pytest.mark.parametrize("keep", ["untyped_storage", "storage"])
def test_a_storage_kept_without_its_tensor_is_not_reused(out_pool, keep):
    """`s = f(x).untyped_storage()` (or `.storage()`) drops the tensor and keeps
    the storage: a later call must not write its output into `s`."""
    import warnings

    f = fusec.compile(_fn)
    x, y = _args(0)
    want = _fn(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # TypedStorage is deprecated
        kept = getattr(f(x, y), keep)()
    for seed in (1, 2):
        later = f(*_args(seed))
        torch.testing.assert_close(later, _fn(*_args(seed)))
        del later
    got = torch.empty(0).set_(kept if keep == "untyped_storage" else kept._untyped_storage)
    torch.testing.assert_close(got[: want.numel()].view(want.shape), want)
    del kept, got
    f(*_args(3))  # the block is free again once the storage is dropped
    assert out_pool.reused >= 1


def test_a_pooled_output_costs_no_aten_call(out_pool):
    """Outputs come from a block without `empty` + `set_` (the profiler counts
    those as the model's ATen calls): the fused call makes none, new block or reused."""
    f = fusec.compile(_fn)
    for seed in range(3):
        x, y = _args(seed)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            out = f(x, y)
        calls = [e.name for e in prof.events() if e.name.startswith("aten::")]
        if seed:  # the first call makes the block (and its base): later ones reuse it
            assert calls == []
        torch.testing.assert_close(out, _fn(x, y))
        del out
    assert out_pool.reused >= 2


def test_a_new_block_costs_no_aten_call(out_pool: OutputPool) -> None:
    """A block is made as a tensor of its first output's dtype, without dispatch:
    an output its caller keeps (as `.grad` keeps a first gradient) costs the next
    call no ATen call for the block that replaces it; the block is still
    recycled once that output is dropped."""
    size, nbytes = (256, 512), 256 * 512 * 4
    kept = out_pool.empty(size, (512, 1), torch.float32, nbytes)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        second = out_pool.empty(size, (512, 1), torch.float32, nbytes)
    assert [e.name for e in prof.events() if e.name.startswith("aten::")] == []
    assert second.data_ptr() != kept.data_ptr() and out_pool.reused == 0
    second.fill_(2.0)
    ptr = second.data_ptr()
    del second
    again = out_pool.empty(size, (512, 1), torch.float32, nbytes)
    assert again.data_ptr() == ptr and out_pool.reused == 1
    # Another dtype over the same block takes a base of its own.
    del again
    ints = out_pool.empty((256, 512), (512, 1), torch.int32, nbytes)
    assert ints.dtype == torch.int32 and ints.data_ptr() == ptr
