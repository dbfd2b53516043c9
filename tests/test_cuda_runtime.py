"""The CUDA runtime (`fusec.runtime.cuda`) and CUDA graphs (`fusec.runtime.cudagraphs`).

Everything up to the driver runs anywhere: PTX from real groups assembled to
cubins for sm_80/sm_90, launch configuration, the kernel parameter block,
driver error reporting (also with no driver library at all), CUDA graph
eligibility, and `fusec.compile` on CPU inputs. Tests marked `gpu` launch
kernels and are compared against eager PyTorch; they are skipped without a
CUDA device.
"""

from __future__ import annotations

import ctypes
import logging
import re
import struct
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any

import fusec
import pytest
import torch
import torch.fx
from fusec.api.compiled import run_pipeline
from fusec.codegen import host_program
from fusec.codegen.pipelines import compile_pipeline
from fusec.dialects.fusion import GroupOp, GuardOp
from fusec.frontend.importer import import_fx, trace
from fusec.runtime import cuda
from fusec.runtime.cache import KernelCache
from fusec.runtime.cudagraphs import (
    CudaGraphRunner,
    ineligible_reason,
    input_names,
    mutated_inputs,
)
from reference_models import lstm_cell, lstm_tail
from toolchains import cuda_driver_bindings_or_skip, cuda_toolchain_or_skip
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from vector_layouts import LAYOUTS, vector_layouts
from xdsl.ir import BlockArgument

HAS_CUDA = torch.cuda.is_available()


def gpu(test: Callable[..., None]) -> Callable[..., None]:
    """Marks a test `gpu` and skips it where no CUDA device exists."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")(test))


ARCHS = ["sm_80", "sm_90"]


def group_args(group: GroupOp, args: Sequence[Any]) -> list[Any]:
    """The values of `group`'s inputs when the function is called with `args`
    (the tests' groups read function arguments directly)."""
    out = []
    for v in group.inputs:
        assert isinstance(v, BlockArgument), v
        out.append(args[v.index])
    return out


def groups(fn: Callable[..., Any], *args: Any) -> list[GroupOp]:
    """The fusion groups of `fn` after the default pipeline."""
    imported = import_fx(trace(fn), list(args), "f")
    run_pipeline(imported.module)
    return [op for op in imported.module.walk() if isinstance(op, GroupOp)]


def scaled_tail(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return torch.tanh(x * alpha) + torch.sigmoid(y) * x


def fake(shape: tuple[int, ...], device: str) -> torch.Tensor:
    """A tensor that claims to live on `device` (no memory, no driver)."""
    return FakeTensor(FakeTensorMode(), torch.empty(shape, device="meta"), torch.device(device))


def props(sms: int = 132, threads: int = 1024) -> cuda.DeviceProps:
    return cuda.DeviceProps(sm_count=sms, max_threads_per_block=threads, arch="sm_90")


# ---------------------------------------------------------------------- cubins


@pytest.mark.parametrize("arch", ARCHS)
def test_cache_gives_a_cuda_kernel_with_a_cubin_per_arch(arch: str) -> None:
    cuda_toolchain_or_skip()
    (group,) = groups(lstm_tail, torch.randn(4, 32), torch.randn(4, 8))
    cache = KernelCache()
    kernel = cache.kernel_for(group, arch)
    assert isinstance(kernel, cuda.CudaKernel)
    assert kernel.arch == arch and kernel.signature.target == "nvptx"
    assert kernel.cubin[:4] == b"\x7fELF"
    assert f".target {arch}".encode() in kernel.artifact.code
    assert kernel.functions == {}  # modules load on first use, per device
    # The same group again is a memory hit with the same kernel, whatever device calls it.
    assert cache.kernel_for(group, arch) is kernel
    assert cache.stats.kernels_compiled == 1 and cache.stats.memory_hits == 1


def test_cubins_are_per_arch_and_loaded_once_per_artifact() -> None:
    cuda_toolchain_or_skip()
    (group,) = groups(lstm_tail, torch.randn(4, 32), torch.randn(4, 8))
    cache = KernelCache()
    k80, k90 = cache.kernel_for(group, "sm_80"), cache.kernel_for(group, "sm_90")
    assert k80 is not k90 and k80.cubin != k90.cubin
    assert cuda.load_kernel(k80.artifact) is k80


# ---------------------------------------------------------------------- launch configuration


@pytest.mark.parametrize(
    ("numel", "sms", "threads", "expected"),
    [
        (1, 132, 1024, (1, 256)),
        (256, 132, 1024, (1, 256)),
        (257, 132, 1024, (2, 256)),
        (10**9, 132, 1024, (32 * 132, 256)),
        (10**9, 2, 1024, (64, 256)),
        (1000, 1, 128, (8, 128)),
        (0, 8, 1024, (1, 256)),
    ],
)
def test_launch_config(numel: int, sms: int, threads: int, expected: tuple[int, int]) -> None:
    assert cuda.launch_config(numel, props(sms, threads)) == expected


def test_launch_grid_is_sized_for_the_lanes() -> None:
    """A kernel taking 4 elements per trip needs a quarter of the threads."""
    assert cuda.launch_config(1 << 20, props(), lanes=4) == (1024, 256)
    assert cuda.launch_config(1 << 20, props(), lanes=1) == (4096, 256)
    assert cuda.launch_config(10**9, props(), lanes=4) == (32 * 132, 256)
    assert cuda.launch_config(3, props(), lanes=4) == (1, 256)


@pytest.mark.parametrize(
    "dtypes, lanes",
    [
        ((torch.float32, torch.float32), 4),
        ((torch.float16, torch.float16), 4),
        ((torch.int8, torch.int8), 4),
        ((torch.float64, torch.float64), 2),
        ((torch.float32, torch.float64), 2),
    ],
)
def test_signature_lanes_follow_the_widest_element(
    dtypes: tuple[torch.dtype, torch.dtype], lanes: int
) -> None:
    """16-byte vectors: 4 lanes, 2 where any operand or output is 8 bytes wide."""
    cuda_toolchain_or_skip()
    x, y = (torch.ones(4, 8, dtype=dt) for dt in dtypes)
    (group,) = groups(scale_and_add, x, y)
    assert KernelCache().kernel_for(group, "sm_80").signature.lanes == lanes


def test_peak_bandwidth_from_clock_and_bus_width() -> None:
    p = cuda.DeviceProps(132, 1024, "sm_90", memory_clock_khz=2_619_000, bus_width_bits=5120)
    assert p.peak_bandwidth_gbs == pytest.approx(3352.3, rel=1e-3)


# ---------------------------------------------------------------------- kernel parameters


def test_kernel_params_follow_the_signature_order_and_types() -> None:
    cuda_toolchain_or_skip()
    x, y = torch.randn(4, 1), torch.randn(3)
    (group,) = groups(scaled_tail, x, y, 0.5)
    sig = KernelCache().kernel_for(group, "sm_80").signature
    assert sig.rank == 2 and [dt for _, dt in sig.scalars] == ["f64"]
    n_tensors = len(sig.operands) + len(sig.outputs)
    pointers = [0x1000 * (k + 1) for k in range(n_tensors)]
    strides = [[k, -1] for k in range(n_tensors)]
    values, types = cuda.kernel_params(sig, pointers, strides, (4, 3), [0.5])
    u64, f64 = ctypes.c_uint64, ctypes.c_double
    expected: list[Any] = [12, 4, 3]
    for k in range(n_tensors):
        expected += [pointers[k], k, 2**64 - 1]
    assert list(values) == [*expected, 0.5]
    assert list(types) == [u64] * len(expected) + [f64]


def test_kernel_params_match_the_ptx_entry_parameters() -> None:
    """The host-side parameter list must be exactly the PTX `.entry`'s: same
    count, and each value in a slot of the declared width and kind."""
    cuda_toolchain_or_skip()

    def f(x: torch.Tensor, a: float, n: int, flag: bool) -> torch.Tensor:
        return torch.sigmoid(x * a + n) * flag

    (group,) = groups(f, torch.randn(4, 3), 0.5, 3, True)
    artifact = KernelCache().kernel_for(group, "sm_80").artifact
    sig = artifact.signature
    assert sorted(dt for _, dt in sig.scalars) == ["f64", "i1", "i64"]
    ptx = artifact.code.decode()
    entry = ptx[ptx.index(f".entry {artifact.name}(") :]
    declared = re.findall(r"\.param\s+\.(\w+)", entry[: entry.index(")")])
    n_tensors = len(sig.operands) + len(sig.outputs)
    scalars = {"f64": 0.5, "i64": 3, "i1": True}
    _, types = cuda.kernel_params(
        sig,
        [0] * n_tensors,
        [[1] * sig.loop_rank] * n_tensors,
        (4, 3),
        [scalars[dt] for _, dt in sig.scalars],
    )
    ptx_type = {ctypes.c_uint64: ("u64", "b64", "s64"), ctypes.c_double: ("f64",),
                ctypes.c_uint8: ("u8", "b8", "s8")}  # fmt: skip
    assert len(declared) == len(types)
    for k, (t, d) in enumerate(zip(types, declared, strict=True)):
        assert d in ptx_type[t], f"parameter {k}: host {t.__name__}, PTX .{d}"


def test_kernel_params_of_a_rank_0_kernel() -> None:
    cuda_toolchain_or_skip()
    (group,) = groups(lambda a: torch.sigmoid(a) * 2, torch.tensor(1.0))
    sig = KernelCache().kernel_for(group, "sm_80").signature
    assert sig.rank == 0 and sig.loop_rank == 1
    values, _ = cuda.kernel_params(sig, [16, 32], [[], []], (), [])
    # Launched as sizes [1] with stride 0.
    assert list(values) == [1, 1, 16, 0, 32, 0]


def test_kernel_params_reject_wrong_counts() -> None:
    cuda_toolchain_or_skip()
    (group,) = groups(lstm_tail, torch.randn(4, 32), torch.randn(4, 8))
    sig = KernelCache().kernel_for(group, "sm_80").signature
    with pytest.raises(ValueError, match="tensors expected"):
        cuda.kernel_params(sig, [0], [[1, 1]], (4, 8), [])


def test_param_buffer_points_at_each_value_in_its_ptx_type() -> None:
    values = (7, 2**64 - 3, 0.25, 1)
    types = (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_double, ctypes.c_uint8)
    buf = cuda.ParamBuffer(values, types)
    pointers = (ctypes.c_void_p * 4).from_address(buf.address)
    read = [t.from_address(p).value for t, p in zip(types, pointers, strict=True)]
    assert read == [7, 2**64 - 3, 0.25, 1]
    raw = ctypes.string_at(pointers[2], 8)
    assert struct.unpack("<d", raw)[0] == 0.25


# ---------------------------------------------------------------------- driver errors


def test_check_returns_values_and_raises_named_errors() -> None:
    driver: Any = cuda_driver_bindings_or_skip()

    ok = driver.CUresult.CUDA_SUCCESS
    assert cuda.check((ok,)) is None
    assert cuda.check((ok, 5)) == 5
    assert cuda.check((ok, 1, 2)) == (1, 2)
    with pytest.raises(cuda.CudaError, match="cuModuleLoadData failed with CUDA_ERROR_INVALID_PTX"):
        cuda.check((driver.CUresult.CUDA_ERROR_INVALID_PTX,), "cuModuleLoadData")


def test_missing_driver_library_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    driver: Any = cuda_driver_bindings_or_skip()

    class DynamicLibNotFoundError(RuntimeError):
        pass

    def missing(*args: Any) -> Any:
        raise DynamicLibNotFoundError('"cuda" is an NVIDIA driver library ...')

    fake_driver = SimpleNamespace(cuInit=missing, cuGetErrorName=missing, cuGetErrorString=missing)
    monkeypatch.setattr(cuda, "_driver_module", lambda: fake_driver)
    monkeypatch.setattr(cuda, "_initialized", False)
    with pytest.raises(cuda.CudaUnavailable, match=r"driver library \(libcuda\) cannot be loaded"):
        cuda.init()
    assert not cuda.driver_available()
    # Reporting an error code needs no driver either.
    with pytest.raises(cuda.CudaError, match="cuDeviceGet failed with CUDA_ERROR_NO_DEVICE"):
        cuda.check((driver.CUresult.CUDA_ERROR_NO_DEVICE,), "cuDeviceGet")


def test_kernel_without_one_cuda_device_uses_its_fallback_or_says_why() -> None:
    cuda_toolchain_or_skip()
    x, y = torch.randn(4, 1), torch.randn(3)
    (group,) = groups(scaled_tail, x, y, 0.5)
    kernel = KernelCache().kernel_for(group, "sm_80")
    inputs = group_args(group, [x, y, 0.5])
    with pytest.raises(cuda.CudaError, match="one CUDA device, got cpu, cpu"):
        kernel(inputs)
    (got,) = kernel(inputs, host_program._TorchGroup(group))
    torch.testing.assert_close(got, scaled_tail(x, y, 0.5))


def test_common_cuda_device() -> None:
    a, b, c = fake((2,), "cuda:0"), fake((2,), "cuda:1"), torch.randn(2)
    assert cuda.common_cuda_device([a, 1.0, a]) == 0
    assert cuda.common_cuda_device([b]) == 1
    assert cuda.common_cuda_device([a, b]) is None
    assert cuda.common_cuda_device([a, c]) is None
    assert cuda.common_cuda_device([1.0]) is None


@pytest.mark.parametrize("device", ["cpu", "cuda", "cuda:0", "cuda:1"])
def test_compile_pipeline_guards_for_an_indexed_device(device: str) -> None:
    """`cuda:0` is what `fusec.compile` asks for on a GPU: its `:` must not break
    the pipeline spec (it did, and every CUDA compile ran eagerly)."""
    imported = import_fx(trace(scaled_tail), [torch.randn(4), torch.randn(4), 0.5], "f")
    run_pipeline(imported.module, compile_pipeline(device))
    guards = [op for op in imported.module.walk() if isinstance(op, GuardOp)]
    assert guards and all(s.device.data == device for g in guards for s in g.specs.data)


def test_mixed_devices_get_no_gpu_kernels(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="fusec"):
        provide = host_program.gpu_kernel_provider(KernelCache(), [fake((2,), "cuda:0"), torch.ones(2)])
    assert provide(None) is None
    assert "inputs on cpu, cuda:0: fused groups run through PyTorch" in caplog.text


def test_a_zero_dim_cpu_tensor_does_not_pick_the_device(caplog: pytest.LogCaptureFixture) -> None:
    """Attention's backward takes its RNG seed and offset as 0-dim CPU tensors
    beside CUDA ones: the device is still the CUDA one (it was "cpu, cuda:0", and
    every backward group ran through PyTorch)."""
    with caplog.at_level(logging.INFO, logger="fusec"):
        host_program.gpu_kernel_provider(KernelCache(), [fake((2,), "cuda:0"), torch.tensor(7)])
    assert "inputs on" not in caplog.text


# ---------------------------------------------------------------------- CUDA graph eligibility


def test_ineligible_reasons_name_the_input() -> None:
    names = ["a", "b", "x"]
    a0, a1 = fake((2,), "cuda:0"), fake((2,), "cuda:1")
    assert ineligible_reason([a0, 2.0, a0], names) is None
    assert ineligible_reason([a0, 2.0, torch.ones(2)], names) == "input 2 (x) is on cpu"
    assert ineligible_reason([a0, a1], names) == (
        "inputs are on several devices: input 0 (a) on cuda:0, input 1 (b) on cuda:1"
    )
    assert ineligible_reason([a0, a0], names, {1}) == "input 1 (b) is mutated by the graph"
    assert ineligible_reason([1.0], names) == "no input is a CUDA tensor"


def test_mutated_inputs_of_fx_graphs() -> None:
    def f(a, b, c, d, e):
        a.add_(1)
        b[0].mul_(2)
        torch.relu_(c)
        torch.sigmoid(d, out=e)
        return a + b

    gm = torch.fx.symbolic_trace(f)
    assert input_names(gm) == ["a", "b", "c", "d", "e"]
    assert mutated_inputs(gm) == {0, 1, 2, 4}

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.act = nn.ReLU(inplace=True)

        def forward(self, x, y):
            y = y * 2
            return self.act(x), self.act(y)

    assert mutated_inputs(torch.fx.symbolic_trace(M())) == {0}
    assert mutated_inputs(torch.fx.symbolic_trace(lstm_tail)) == set()


def test_cuda_graphs_option_on_cpu_inputs_runs_without_a_graph(
    caplog: pytest.LogCaptureFixture,
) -> None:
    f = fusec.compile(lstm_tail, cuda_graphs=True)
    args = (torch.randn(4, 32), torch.randn(4, 8))
    with caplog.at_level(logging.INFO, logger="fusec"):
        got = f(*args)
        f(*args)
    for g, w in zip(got, lstm_tail(*args), strict=True):
        torch.testing.assert_close(g, w)
    assert f.launches_per_call == 1
    assert caplog.text.count("not using a CUDA graph: input 0 (gates) is on cpu") == 1


def test_compile_on_cpu_inputs_still_uses_cpu_kernels() -> None:
    targets: list[str] = []

    def builder(group: GroupOp, target: str) -> Any:
        from fusec.codegen.kernel import build_kernel

        targets.append(target)
        return build_kernel(group, target)

    f = fusec.compile(lstm_tail, cache=KernelCache(builder=builder))
    args = (torch.randn(4, 32), torch.randn(4, 8))
    for g, w in zip(f(*args), lstm_tail(*args), strict=True):
        torch.testing.assert_close(g, w)
    assert targets == ["cpu"] and f.launches_per_call == 1


# ---------------------------------------------------------------------- on a GPU


def pointwise_chain(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    z = torch.exp(-torch.abs(x)) * torch.tanh(y)
    return torch.log1p(z * z) + torch.sigmoid(x - y) * 0.5


def lstm_args(device: str, batch: int = 8, inp: int = 16, hid: int = 32) -> tuple[Any, ...]:
    g = torch.Generator().manual_seed(0)

    def r(*s: int) -> torch.Tensor:
        return torch.randn(*s, generator=g).to(device)

    return (r(batch, inp), r(batch, hid), r(batch, hid), r(4 * hid, inp), r(4 * hid, hid),
            r(4 * hid), r(4 * hid))  # fmt: skip


def assert_same(got: Any, want: Any) -> None:
    if isinstance(want, tuple | list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_same(g, w)
        return
    assert got.device == want.device and got.dtype == want.dtype
    # A fused f16 chain computes in f32 and rounds once, eager rounds after every
    # op: they differ by an ulp or two of f16 (test_differential's tolerance).
    tol = {"rtol": 5e-3, "atol": 2e-3} if want.dtype == torch.float16 else {}
    torch.testing.assert_close(got, want, **tol)


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
@pytest.mark.parametrize("shape", [(1,), (37, 5), (3, 1000, 7), (1 << 20,), (5, 3, 300), (2, 128)])
def test_pointwise_chain_on_cuda_matches_eager(shape: tuple[int, ...], dtype: torch.dtype) -> None:
    x = torch.randn(shape, device="cuda", dtype=dtype)
    y = torch.randn(shape, device="cuda", dtype=dtype)
    f = fusec.compile(pointwise_chain)
    with torch.no_grad():
        assert_same(f(x, y), pointwise_chain(x, y))
    assert f.launches_per_call == 1


@gpu
@pytest.mark.parametrize("rows, cols", [(64, 48), (37, 129), (3, 1000)])
def test_broadcast_and_strided_inputs_on_cuda(rows: int, cols: int) -> None:
    """A broadcast column and a transposed operand, in short and long rows."""
    x = torch.randn(rows, 1, device="cuda")
    y = torch.randn(cols, rows, device="cuda").t()
    f = fusec.compile(scaled_tail)
    assert_same(f(x, y, 0.25), scaled_tail(x, y, 0.25))
    assert f.launches_per_call == 1


@gpu
def test_offsets_past_32_bits_take_the_64_bit_loop() -> None:
    """Two rows 2^32 elements apart (4 GiB of int8): the last offset is past the
    32-bit loop's bound (`NARROW_LIMIT`), so the kernel must run its 64-bit
    version; the 32-bit one would wrap the far row's offset to the near row's."""
    storage = torch.zeros((1 << 32) + 64, dtype=torch.int8, device="cuda")
    x = storage.as_strided((2, 64), (1 << 32, 1))
    x.copy_(torch.randint(-50, 50, (2, 64), dtype=torch.int8, device="cuda"))
    assert not torch.equal(x[0], x[1])
    f = fusec.compile(scale_and_shift)
    assert_same(f(x), scale_and_shift(x))
    assert f.launches_per_call == 1


def scale_and_shift(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + 1


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64, torch.int8])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_vector_lanes_on_aligned_and_misaligned_layouts(layout: str, dtype: torch.dtype) -> None:
    """Each thread takes 4 consecutive elements as one vector access where every
    operand's innermost run is an aligned vector, one element otherwise: both
    give eager's result, on views that are and are not aligned."""
    x, y = vector_layouts(dtype, "cuda", rows=64, cols=48)[layout]
    f = fusec.compile(scale_and_add)
    got = f(x, y)
    assert f.launches_per_call == 1
    if dtype != torch.float16:
        assert_same(got, scale_and_add(x, y))
        return
    # The kernel computes in f32 and rounds once: eager's rounding after every
    # op differs by more than an f16 ulp where y * x - y cancels.
    want = scale_and_add(x.float(), y.float()).half()
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)


def scale_and_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * 3 + y * x - y


@gpu
def test_lstm_cell_on_cuda_is_one_kernel() -> None:
    args = lstm_args("cuda")
    f = fusec.compile(lstm_cell)
    with torch.no_grad():
        assert_same(f(*args), lstm_cell(*args))
    assert f.launches_per_call == 1


@gpu
def test_kernels_launch_on_the_current_stream() -> None:
    x, y = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
    f = fusec.compile(pointwise_chain)
    f(x, y)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = f(x, y)
        want = pointwise_chain(x, y)
    side.synchronize()
    assert_same(got, want)


@gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_two_devices_share_a_cache_entry_with_a_module_each() -> None:
    def fn(x, y):
        return x * y * x * y

    cpu = [torch.randn(4, 4), torch.randn(4, 4)]
    cache = KernelCache()
    f = fusec.compile(fn, cache=cache)
    for dev in ("cuda:0", "cuda:1"):
        args = [t.to(dev) for t in cpu]
        assert_same(f(*args), fn(*args))
        assert f.launches_per_call == 1
    assert cache.entries() == 1 and cache.stats.kernels_compiled == 1
    (kernel,) = cache._memory.values()
    assert set(kernel.functions) == {0, 1}


@gpu
def test_mixed_devices_fall_back_and_match_eager() -> None:
    x = torch.randn(8, 8, device="cuda")
    s = torch.tensor(1.5)  # a CPU scalar tensor mixes with CUDA tensors in eager too
    f = fusec.compile(lambda a, b: torch.sigmoid(a) * b + a)
    assert_same(f(x, s), torch.sigmoid(x) * s + x)
    assert f.launches_per_call == 0


@gpu
def test_cpu_inputs_to_a_cuda_compiled_function() -> None:
    f = fusec.compile(pointwise_chain)
    xc, yc = torch.randn(5, 7, device="cuda"), torch.randn(5, 7, device="cuda")
    assert_same(f(xc, yc), pointwise_chain(xc, yc))
    x, y = xc.cpu(), yc.cpu()
    assert_same(f(x, y), pointwise_chain(x, y))
    # A GPU kernel handed CPU tensors runs its group through PyTorch instead.
    (group,) = groups(pointwise_chain, xc, yc)
    kernel = KernelCache().kernel_for(group, cuda.arch_of(0))
    (got,) = kernel(group_args(group, [x, y]), host_program._TorchGroup(group))
    assert_same(got, pointwise_chain(x, y))


@gpu
def test_cuda_graphs_replay_with_new_inputs() -> None:
    args = lstm_args("cuda")
    f = fusec.compile(lstm_cell, cuda_graphs=True)
    with torch.no_grad():
        for seed in range(3):
            torch.manual_seed(seed)
            new = tuple(torch.randn_like(a) for a in args)
            assert_same(f(*new), lstm_cell(*new))
    (runner,) = f._cuda_graph_runners.values()
    assert len(runner.graphs) == 1
    # Results are copies: a later replay does not overwrite them.
    first = f(*args)
    kept = [t.clone() for t in first]
    f(*tuple(torch.randn_like(a) for a in args))
    assert_same(list(first), kept)


@gpu
def test_cuda_graphs_recapture_for_new_scalars() -> None:
    x, y = torch.randn(16, 1, device="cuda"), torch.randn(16, 9, device="cuda")
    f = fusec.compile(scaled_tail, cuda_graphs=True)
    for alpha in (0.5, 2.0, 0.5):
        assert_same(f(x, y, alpha), scaled_tail(x, y, alpha))
    (runner,) = f._cuda_graph_runners.values()
    assert len(runner.graphs) == 2


@gpu
def test_cuda_graph_runner_skips_mutated_inputs_with_a_reason(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[int] = []

    def program(inputs: Any) -> list[Any]:
        calls.append(1)
        inputs[0].add_(1)
        return [inputs[0] * 2]

    runner = CudaGraphRunner(program, [0], ["x"], {0})
    x = torch.zeros(4, device="cuda")
    with caplog.at_level(logging.INFO, logger="fusec"):
        (out,) = runner([x], [x])
    assert_same(out, torch.full((4,), 2.0, device="cuda"))
    assert_same(x, torch.ones(4, device="cuda"))
    assert runner.graphs == {} and calls == [1]
    assert "not using a CUDA graph: input 0 (x) is mutated by the graph" in caplog.text


@gpu
def test_cuda_graphs_with_cpu_inputs_log_and_match_eager(caplog: pytest.LogCaptureFixture) -> None:
    f = fusec.compile(scaled_tail, cuda_graphs=True)
    x, y = torch.randn(4, 3, device="cuda"), torch.randn(4, 3)
    with caplog.at_level(logging.INFO, logger="fusec"):
        f(x.cpu(), y, 1.0)
    assert "input 0 (x) is on cpu" in caplog.text
    xc = x.cpu()
    assert_same(f(xc, y, 1.0), scaled_tail(xc, y, 1.0))
