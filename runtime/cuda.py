"""CUDA executor: the only module that calls the CUDA driver (through cuda-python).

    kernel = load_kernel(artifact)          # artifact.target == "sm_90"; cubin assembled once
    outs = kernel(inputs)                   # on the inputs' device, PyTorch's current stream

A `KernelArtifact` for "sm_XX" holds PTX (see `KernelSignature` for its launch
ABI). `CudaKernel` assembles it to a cubin once (`fusec.backends.ptx.assemble_ptx`,
nvJitLink), loads a module per device lazily into that device's primary context
(the one PyTorch uses) and launches a 1-D grid sized from the element count and
the device's properties:

    grid, block = launch_config(numel, device_props(0))   # (min(ceil(n/256), 32*SMs), 256)

Every driver call goes through `check`, which turns a `CUresult` into a
`CudaError` naming the error (`CUDA_ERROR_INVALID_VALUE: invalid argument`).
A machine without the driver library gets a `CudaUnavailable` saying so on the
first call that needs it; everything before the driver (`launch_config`,
`kernel_params`, cubins) works without one.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import math
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from fusec.runtime.kernel_signature import KernelArtifact, KernelSignature, is_gpu_target
from fusec.runtime.operands import (
    MAX_PLANS,
    broadcast_strides,
    planned_call,
    prepare,
    put_scalars,
)

log = logging.getLogger("fusec")

THREADS_PER_BLOCK = 256
BLOCKS_PER_SM = 32
"""Grid cap: more blocks than this per SM only add scheduling work, since the
kernel grid-strides."""


class CudaError(RuntimeError):
    """A CUDA driver call failed; `name` is the `CUresult` name (or a fusec reason)."""

    def __init__(self, message: str, name: str = ""):
        super().__init__(message)
        self.name = name


class CudaUnavailable(CudaError):
    """cuda-python or the NVIDIA driver library is missing, or there is no device."""


# ---------------------------------------------------------------------- driver access


@functools.cache
def _driver_module() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise CudaUnavailable(
            f"cuda-python is not installed ({e}); pip install cuda-python", "NO_CUDA_PYTHON"
        ) from None
    return driver


def _error_text(result: Any) -> tuple[str, str]:
    """(name, description) of a `CUresult`, without raising (the driver may be
    the thing that is missing)."""
    name, text = getattr(result, "name", str(result)), ""
    try:
        driver = _driver_module()
        err, s = driver.cuGetErrorString(result)
        if int(err) == 0 and s:
            text = s.decode() if isinstance(s, bytes) else str(s)
        err, n = driver.cuGetErrorName(result)
        if int(err) == 0 and n:
            name = n.decode() if isinstance(n, bytes) else str(n)
    except Exception:  # noqa: BLE001 - the message must not fail while reporting an error
        pass
    return name, text


def check(result: tuple[Any, ...], what: str = "CUDA driver call") -> Any:
    """The values of a cuda-python call's `(CUresult, *values)` tuple: None for
    none, the value for one, a tuple for more. Raises `CudaError` on failure:

        check(driver.cuDeviceGet(0))                  # -> CUdevice
        check((CUresult.CUDA_ERROR_INVALID_VALUE,))   # CudaError: ...invalid argument
    """
    err, *values = result
    if int(err) != 0:
        name, text = _error_text(err)
        detail = f": {text}" if text else ""
        raise CudaError(f"{what} failed with {name}{detail}", name)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def _call(what: str, fn_name: str, *args: Any) -> Any:
    """`check(driver.<fn_name>(*args))`, with a missing driver library reported as
    `CudaUnavailable` instead of cuda-python's loader traceback."""
    driver = _driver_module()
    try:
        result = getattr(driver, fn_name)(*args)
    except CudaError:
        raise
    except Exception as e:
        if type(e).__name__ == "DynamicLibNotFoundError" or "libcuda" in str(e):
            raise CudaUnavailable(
                f"the NVIDIA driver library (libcuda) cannot be loaded: {e}", "NO_DRIVER"
            ) from None
        raise
    return check(result, f"{fn_name} ({what})")


@functools.cache
def _libcuda() -> Any:
    """The driver library through ctypes, for the per-call launch path: one
    `cuLaunchKernel` through cuda-python costs several microseconds of argument
    conversion, through ctypes well under one. Same library, same context."""
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuLaunchKernel.restype = ctypes.c_int
    lib.cuLaunchKernel.argtypes = [
        ctypes.c_void_p, *([ctypes.c_uint] * 7), ctypes.c_void_p, ctypes.c_void_p,
        ctypes.c_void_p,
    ]  # fmt: skip
    lib.cuCtxGetCurrent.restype = ctypes.c_int
    lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    return lib


def check_code(code: int, what: str) -> None:
    """`check` for a driver call made through ctypes (a bare `CUresult` int)."""
    if code != 0:
        driver = _driver_module()
        check((driver.CUresult(code),), what)


_init_lock = threading.Lock()
_initialized = False


def init() -> None:
    """`cuInit(0)` once per process."""
    global _initialized
    if _initialized:
        return
    with _init_lock:
        if not _initialized:
            _call("initializing the driver", "cuInit", 0)
            _initialized = True


def driver_available() -> bool:
    """True when cuda-python and the driver load and report at least one device."""
    try:
        init()
        return int(_call("counting devices", "cuDeviceGetCount")) > 0
    except CudaError:
        return False


@dataclass(frozen=True)
class DeviceProps:
    """What launch configuration and benchmarks need to know about a device."""

    sm_count: int
    max_threads_per_block: int
    arch: str
    """`sm_90` for compute capability 9.0."""
    memory_clock_khz: int = 0
    bus_width_bits: int = 0

    @property
    def peak_bandwidth_gbs(self) -> float:
        """Theoretical DRAM bandwidth: clock x bus width x 2 (double data rate)."""
        return 2 * self.memory_clock_khz * 1e3 * self.bus_width_bits / 8 / 1e9


class _Device:
    """A device's handle and retained primary context (PyTorch's context)."""

    def __init__(self, index: int):
        init()
        self.index = index
        self.handle = _call(f"device {index}", "cuDeviceGet", index)
        self.context = _call(f"device {index}", "cuDevicePrimaryCtxRetain", self.handle)
        self.context_id = int(self.context)

    def attribute(self, name: str) -> int:
        driver = _driver_module()
        attr = getattr(driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
        return int(_call(f"device {self.index} {name}", "cuDeviceGetAttribute", attr, self.handle))

    def props(self) -> DeviceProps:
        major = self.attribute("COMPUTE_CAPABILITY_MAJOR")
        minor = self.attribute("COMPUTE_CAPABILITY_MINOR")
        return DeviceProps(
            sm_count=self.attribute("MULTIPROCESSOR_COUNT"),
            max_threads_per_block=self.attribute("MAX_THREADS_PER_BLOCK"),
            arch=f"sm_{major}{minor}",
            memory_clock_khz=self.attribute("MEMORY_CLOCK_RATE"),
            bus_width_bits=self.attribute("GLOBAL_MEMORY_BUS_WIDTH"),
        )


_devices: dict[int, _Device] = {}
_devices_lock = threading.Lock()


def _once(table: dict[Any, Any], lock: threading.Lock, key: Any, make: Callable[[], Any]) -> Any:
    """`table[key]`, made by `make()` the first time; the lock is only taken on a miss."""
    value = table.get(key)
    if value is None:
        with lock:
            value = table.get(key)
            if value is None:
                value = table[key] = make()
    return value


def _device(index: int) -> _Device:
    return _once(_devices, _devices_lock, index, lambda: _Device(index))


@functools.cache
def device_props(index: int) -> DeviceProps:
    """The properties of CUDA device `index` (read once)."""
    return _device(index).props()


class _InContext:
    """Makes the device's primary context current for a driver call and restores
    the caller's: PyTorch's runtime derives its current device from it."""

    def __init__(self, device: _Device):
        self.device = device
        self.pushed = False

    def __enter__(self) -> None:
        current = _call("current context", "cuCtxGetCurrent")
        if current is None or int(current) != self.device.context_id:
            _call(f"device {self.device.index}", "cuCtxPushCurrent", self.device.context)
            self.pushed = True

    def __exit__(self, *exc: object) -> None:
        if self.pushed:
            _call(f"device {self.device.index}", "cuCtxPopCurrent")


# ---------------------------------------------------------------------- launches


def launch_config(numel: int, props: DeviceProps, lanes: int = 1) -> tuple[int, int]:
    """(blocks, threads per block) of a 1-D launch over `numel` elements, each
    thread taking `lanes` of them per trip: the kernel grid-strides, so the
    grid is capped at `BLOCKS_PER_SM` per SM. (Threads past the work would
    only exit: on an H200 a 2^20-element LSTM tail ran 3.4 us slower with 4x
    the threads it needed.)"""
    block = max(1, min(THREADS_PER_BLOCK, props.max_threads_per_block))
    blocks = min(math.ceil(numel / (block * lanes)), BLOCKS_PER_SM * max(props.sm_count, 1))
    return max(blocks, 1), block


_U64, _F64, _U8 = ctypes.c_uint64, ctypes.c_double, ctypes.c_uint8
_SCALAR_PARAM = {"f64": _F64, "i64": _U64, "i1": _U8}


def kernel_params(
    sig: KernelSignature,
    pointers: Sequence[int],
    strides: Sequence[Sequence[int]],
    space: Sequence[int],
    scalars: Sequence[float | int | bool],
) -> tuple[tuple[int | float, ...], tuple[type, ...]]:
    """The kernel's parameters as (values, ctypes types), in `KernelSignature`'s
    nvptx order: numel, sizes, (pointer, strides) per operand then output, scalars.

    `pointers`/`strides` are per operand then output (data_ptr, broadcast strides
    over `space`); rank 0 is launched as sizes [1], strides [0]. Negative values
    (an i64 scalar, a stride) are passed as their two's complement."""
    lrank = sig.loop_rank
    n_tensors = len(sig.operands) + len(sig.outputs)
    if len(pointers) != n_tensors or len(strides) != n_tensors:
        raise ValueError(f"kernel_params: {n_tensors} tensors expected, got {len(pointers)}")
    if len(scalars) != len(sig.scalars):
        raise ValueError(f"kernel_params: {len(sig.scalars)} scalars expected, got {len(scalars)}")
    sizes = list(space) if space else [1]
    values: list[int | float] = [math.prod(sizes), *sizes]
    for ptr, st in zip(pointers, strides, strict=True):
        st = list(st) if space else [0]
        if len(st) != lrank:
            raise ValueError(f"kernel_params: {lrank} strides expected, got {len(st)}")
        values += [ptr, *(s & 0xFFFF_FFFF_FFFF_FFFF for s in st)]
    types: list[type] = [_U64] * len(values)
    for value, (_, dtype) in zip(scalars, sig.scalars, strict=True):
        ctype = _SCALAR_PARAM[dtype]
        types.append(ctype)
        if ctype is _F64:
            values.append(float(value))
        elif ctype is _U8:
            values.append(1 if value else 0)
        else:
            values.append(int(value) & 0xFFFF_FFFF_FFFF_FFFF)
    return tuple(values), tuple(types)


class ParamBuffer:
    """`kernelParams` for `cuLaunchKernel`: one 8-byte slot per parameter and an
    array of pointers to the slots (`address`). The driver copies the values at
    launch (and at graph capture), so the buffer only lives for the call."""

    def __init__(self, values: Sequence[int | float], types: Sequence[type]):
        n = len(values)
        self.slots = (ctypes.c_uint64 * max(n, 1))()
        for k, (v, t) in enumerate(zip(values, types, strict=True)):
            # Slots are little-endian u64; a u8 or f64 parameter reads its own bytes.
            self.slots[k] = struct.unpack("<Q", struct.pack("<d", v))[0] if t is _F64 else int(v)
        base = ctypes.addressof(self.slots)
        self.pointers = (ctypes.c_void_p * max(n, 1))(*[base + 8 * k for k in range(n)])
        self.address = ctypes.addressof(self.pointers)


def launch(
    function: Any,
    grid: int,
    block: int,
    params: ParamBuffer,
    stream: int,
    device: int,
) -> None:
    """`cuLaunchKernel` of a 1-D grid on `stream` (a raw `cudaStream_t`)."""
    driver = _driver_module()
    with _InContext(_device(device)):
        _call(
            "launching a fused kernel",
            "cuLaunchKernel",
            function,
            grid,
            1,
            1,
            block,
            1,
            1,
            0,
            driver.CUstream(stream),
            params.address,
            0,
        )


def current_stream(device: int) -> int:
    """PyTorch's current stream on `device` as a raw handle."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(device))
    return int(torch.cuda.current_stream(device).cuda_stream)


def load_module(image: bytes, device: int) -> Any:
    """`cuModuleLoadData` of a cubin (or NUL-terminated PTX) into the device's
    primary context."""
    # A raw address is the one `image` form every cuda-python version takes.
    buffer = ctypes.create_string_buffer(image, len(image) + 1)
    with _InContext(_device(device)):
        return _call(
            f"loading a module on cuda:{device}", "cuModuleLoadData", ctypes.addressof(buffer)
        )


def get_function(module: Any, name: str, device: int) -> Any:
    with _InContext(_device(device)):
        return _call(f"kernel {name}", "cuModuleGetFunction", module, name.encode())


# ---------------------------------------------------------------------- kernels


def arch_of(device: int) -> str:
    """The `sm_XX` of a CUDA device as PyTorch reports it (no driver call)."""
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def common_cuda_device(inputs: Sequence[Any]) -> int | None:
    """The index of the CUDA device every tensor in `inputs` is on, or None
    (a CPU tensor, tensors on several devices, no tensor at all)."""
    index: int | None = None
    for x in inputs:
        if isinstance(x, torch.Tensor):
            dev = x.device
            if dev.type != "cuda":
                return None
            i = dev.index if dev.index is not None else torch.cuda.current_device()
            if index is None:
                index = i
            elif i != index:
                return None
    return index


Fallback = Callable[[Sequence[Any]], Sequence[Any]]


class CudaKernel:
    """A fused GPU kernel: cubin assembled once, a module per device (loaded on
    first use there). Call it with the group's inputs (on one CUDA device)."""

    def __init__(self, artifact: KernelArtifact):
        from fusec.backends.ptx import assemble_ptx

        if not is_gpu_target(artifact.target):
            raise ValueError(f"CudaKernel: '{artifact.target}' is not an sm_XX target")
        self.artifact = artifact
        self.signature = artifact.signature
        self.arch = artifact.target
        self.cubin = assemble_ptx(artifact.code.decode(), artifact.target)
        self.functions: dict[int, Any] = {}
        """device index -> CUfunction."""
        self._modules: dict[int, Any] = {}
        self._lock = threading.Lock()
        sig = self.signature
        self._keyed = tuple(sorted({s.input for s in sig.operands}))
        self._plans: dict[tuple[Any, ...], _CudaPlan | None] = {}
        self._n_params = (
            1
            + sig.loop_rank
            + (len(sig.operands) + len(sig.outputs)) * (1 + sig.loop_rank)
            + len(sig.scalars)
        )
        self._params = ParamBuffer([0] * self._n_params, [_U64] * self._n_params)
        """The one parameter block of the per-call path: the driver copies the
        values at launch, so calls refill it under `_launch_lock`."""
        self._doubles = (ctypes.c_double * max(self._n_params, 1)).from_buffer(self._params.slots)
        first_scalar = self._n_params - len(sig.scalars)
        self._scalar_slots = tuple(
            (first_scalar + k, i, dt) for k, (i, dt) in enumerate(sig.scalars)
        )
        self._launch_lock = threading.Lock()

    def function(self, device: int) -> Any:
        """The kernel's CUfunction on `device`, loading its module the first time."""

        def load() -> Any:
            module = self._modules[device] = self._load(device)
            return get_function(module, self.artifact.name, device)

        return _once(self.functions, self._lock, device, load)

    def _load(self, device: int) -> Any:
        try:
            return load_module(self.cubin, device)
        except CudaUnavailable:
            raise
        except CudaError as cubin_error:
            # A driver older than the assembler may reject its cubin but still JIT
            # the PTX (LLVM emits the oldest PTX ISA the arch allows).
            try:
                return load_module(self.artifact.code, device)
            except CudaError as ptx_error:
                raise CudaError(
                    f"cannot load kernel {self.artifact.name} on cuda:{device}: "
                    f"cubin: {cubin_error}; PTX: {ptx_error}",
                    cubin_error.name,
                ) from None

    def call(
        self, inputs: Sequence[torch.Tensor | float | int | bool], fallback: Fallback | None = None
    ) -> Sequence[torch.Tensor]:
        """The per-call path: a plan per layout of the inputs (sizes, strides,
        device), made on first sight (`_plan`), holds everything that follows from
        it: the output allocations, the parameter block's sizes and strides, the
        views' byte offsets, the grid. A call allocates the outputs, stores the
        data pointers and scalars and launches through ctypes."""
        key = []
        for i in self._keyed:
            t = inputs[i]
            key += (t.shape, t.stride(), t.get_device())  # type: ignore[union-attr]
        k = tuple(key)
        plan = self._plans.get(k, False)
        if plan is False:
            plan = self._plan(inputs, k)
        if plan is None:
            return self(inputs, fallback)
        if plan.device == _current_device():
            allocs = [_empty_strided_cuda(shape, st, dt) for shape, st, dt in plan.allocs]
        else:
            allocs = [
                torch.empty_strided(shape, st, dtype=dt, device=plan.torch_device)
                for shape, st, dt in plan.allocs
            ]
        results = [allocs[j] for j in plan.results]
        if plan.grid == 0:
            return results
        stream = current_stream(plan.device)
        slots = self._params.slots
        with self._launch_lock:
            ctypes.memmove(slots, plan.template, plan.template_bytes)
            for slot, src, offset in plan.pointers:
                t = inputs[src] if src >= 0 else allocs[-1 - src]
                slots[slot] = t.data_ptr() + offset  # type: ignore[union-attr]
            put_scalars(slots, self._doubles, self._scalar_slots, inputs)
            lib = _libcuda()
            current = ctypes.c_void_p()
            lib.cuCtxGetCurrent(ctypes.byref(current))
            pushed = current.value != plan.context
            if pushed:
                check_code(lib.cuCtxPushCurrent(ctypes.c_void_p(plan.context)), "cuCtxPushCurrent")
            try:
                check_code(
                    lib.cuLaunchKernel(
                        plan.function, plan.grid, 1, 1, plan.block, 1, 1, 0, stream,
                        self._params.address, None,
                    ),
                    "cuLaunchKernel (launching a fused kernel)",
                )  # fmt: skip
            finally:
                if pushed:
                    lib.cuCtxPopCurrent(ctypes.byref(current))
        return results

    def _plan(self, inputs: Sequence[Any], key: tuple[Any, ...]) -> _CudaPlan | None:
        """The launch plan of one layout of the inputs (from one call's `prepare`,
        the executors' shared reference), or None for calls the per-call path
        does not take: inputs not on one CUDA device, an operand that is a copy
        rather than a view of its input, a zero-division flag to read."""
        sig = self.signature
        device = common_cuda_device(inputs)
        plan = None
        if device is not None and not sig.zero_division_flag:
            plan = self._make_plan(inputs, device)
        if len(self._plans) >= MAX_PLANS:
            self._plans.pop(next(iter(self._plans)))
        self._plans[key] = plan
        return plan

    def _make_plan(self, inputs: Sequence[Any], device: int) -> _CudaPlan | None:
        sig = self.signature
        dev = torch.device("cuda", device)
        planned = planned_call(sig, inputs, dev)
        if planned is None:
            return None
        operands, space, outs, allocs, result_index, sources = planned
        alloc_specs = tuple((tuple(a.shape), tuple(a.stride()), a.dtype) for a in allocs)
        numel = math.prod(space)
        tensors = (*operands, *outs)
        values, _ = kernel_params(
            sig,
            [0] * len(tensors),
            [broadcast_strides(t, space) for t in tensors],
            space,
            [0] * len(sig.scalars),
        )
        # The scalars' slots are filled per call (an f64 one through `_doubles`).
        fixed = [int(v) for v in values[: self._n_params - len(sig.scalars)]]
        template = (ctypes.c_uint64 * max(self._n_params, 1))(*fixed)
        step = 1 + sig.loop_rank
        pointers = tuple((step * (1 + k), *src) for k, src in enumerate(sources))
        grid, block = launch_config(numel, device_props(device), sig.lanes) if numel else (0, 0)
        return _CudaPlan(
            device=device,
            torch_device=dev,
            context=_device(device).context_id,
            function=int(self.function(device)) if numel else 0,
            allocs=alloc_specs,
            results=result_index,
            pointers=pointers,
            template=template,
            template_bytes=ctypes.sizeof(template),
            grid=grid,
            block=block,
        )

    def __call__(
        self, inputs: Sequence[torch.Tensor | float | int | bool], fallback: Fallback | None = None
    ) -> Sequence[torch.Tensor]:
        """The reference path: everything worked out for this call alone (also
        what runs calls the per-call path does not take)."""
        device = common_cuda_device(inputs)
        if device is None:
            if fallback is not None:
                return fallback(inputs)
            raise CudaError(
                f"kernel {self.artifact.name} needs its tensor inputs on one CUDA device, got "
                + ", ".join(str(x.device) for x in inputs if isinstance(x, torch.Tensor)),
                "WRONG_DEVICE",
            )
        sig = self.signature
        operands, space, outs, results = prepare(sig, inputs, torch.device("cuda", device))
        numel = math.prod(space)
        if numel == 0:
            return results
        tensors = (*operands, *outs)
        values, types = kernel_params(
            sig,
            [t.data_ptr() for t in tensors],
            [broadcast_strides(t, space) for t in tensors],
            space,
            [inputs[i] for i, _ in sig.scalars],  # type: ignore[misc]
        )
        flag = None
        if sig.zero_division_flag:
            flag = torch.zeros(1, dtype=torch.int8, device=torch.device("cuda", device))
            values, types = (*values, flag.data_ptr()), (*types, _U64)
        grid, block = launch_config(numel, device_props(device), sig.lanes)
        launch(
            self.function(device),
            grid,
            block,
            ParamBuffer(values, types),
            current_stream(device),
            device,
        )
        # Reading the flag synchronizes, so only integer-division kernels do it;
        # inside a CUDA graph capture it cannot be read (replays do not raise).
        if flag is not None and not torch.cuda.is_current_stream_capturing() and flag.item():
            raise RuntimeError("ZeroDivisionError")
        return results


@dataclass(frozen=True)
class _CudaPlan:
    """What one layout of a kernel's inputs needs per call (`CudaKernel.call`).

    `allocs` are the tensors a call allocates (shape, strides, dtype); `results`
    index them in the group's result order. `pointers` are the parameter slots
    that get a data pointer: (slot, source, byte offset), source `i >= 0` input
    `i` and `-1 - j` allocation `j`; `template` holds every other parameter.
    `grid` is 0 for an empty index space (nothing to launch)."""

    device: int
    torch_device: torch.device
    context: int
    function: int
    allocs: tuple[tuple[tuple[int, ...], tuple[int, ...], torch.dtype], ...]
    results: tuple[int, ...]
    pointers: tuple[tuple[int, int, int], ...]
    template: Any
    template_bytes: int
    grid: int
    block: int


_current_device: Callable[[], int] = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)

_dynamo_guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
_empty_strided_cuda: Any = getattr(_dynamo_guards, "_empty_strided_cuda", None) or (
    lambda size, stride, dtype: torch.empty_strided(size, stride, dtype=dtype, device="cuda")
)
"""`(size, stride, dtype)`: an uninitialized tensor on the current CUDA device,
through torch's allocation entry for generated code (Inductor's wrappers call
it), which skips the argument parser and the dispatcher."""


_loaded: dict[KernelArtifact, CudaKernel] = {}
_loaded_lock = threading.Lock()


def load_kernel(artifact: KernelArtifact) -> CudaKernel:
    """The `CudaKernel` of an "sm_XX" artifact, one per artifact (its cubin is
    assembled once; modules load per device on first use)."""
    return _once(_loaded, _loaded_lock, artifact, lambda: CudaKernel(artifact))


# ---------------------------------------------------------------------- fusec.compile


@functools.cache
def gpu_unusable_reason(device: int) -> str | None:
    """Why fused kernels cannot run on CUDA device `device` here (no cuda-python,
    no driver, no PTX toolchain), or None when they can."""
    try:
        init()
        props = device_props(device)
    except CudaError as e:
        return str(e)
    from fusec.backends.cuda_toolchain import CudaToolchainError, find_toolchain

    try:
        tc = find_toolchain()
        tc.require_libdevice()
        tc.require_assembler()
    except CudaToolchainError as e:
        return str(e)
    log.debug("fusec: cuda:%d is %s with %d SMs", device, props.arch, props.sm_count)
    return None
