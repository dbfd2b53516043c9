"""LLVM IR -> PTX (llvmlite's NVPTX backend, libdevice linked) -> cubin.

    ptx = emit_ptx(str(llvm_module), arch="sm_80", kernel_names=["fused_0"])
    cubin = assemble_ptx(ptx, arch="sm_80")

Kernel convention: the code generator emits each kernel as an ordinary external
function (`define void @fused_0(ptr %a, ...)`) and passes its name in
`kernel_names`; `emit_ptx` gives exactly those functions LLVM's `ptx_kernel`
calling convention (LLVM >= 20's replacement for `!nvvm.annotations`
"kernel"), so they become `.entry` points. Every other defined function
(helpers, linked libdevice) is internalized so O3 inlines or drops it.
Device code reads the thread/block ids with the `llvm.nvvm.read.ptx.sreg.*`
intrinsics.

libdevice (`__nv_expf`, ...) is linked only when the module declares a `__nv_*`
function, with `nvvm-reflect-ftz` = 0 (IEEE denormals, as PyTorch's kernels).
"""

from __future__ import annotations

import ctypes
import functools
import re
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import llvmlite.binding as llvm
from fusec.backends.cuda_toolchain import CudaToolchainError, find_toolchain

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
NVPTX_DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
"""LLVM's NVPTX64 data layout (what the NVPTX target machine reports)."""

_FTZ_FLAG = '!{i32 4, !"nvvm-reflect-ftz", i32 0}'


@functools.cache
def _nvptx_target() -> llvm.Target:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple(NVPTX_TRIPLE)


def _target_machine(arch: str, ptx_version: int | None) -> llvm.TargetMachine:
    features = f"+ptx{ptx_version}" if ptx_version is not None else ""
    return _nvptx_target().create_target_machine(cpu=arch, features=features, opt=3)


def _mark_kernels(llvm_ir: str, kernel_names: Sequence[str]) -> str:
    for name in kernel_names:
        pattern = re.compile(
            r"^(define\s+(?:(?:dso_local|external|default|hidden|protected)\s+)*)"
            r'(?!ptx_kernel)(.*?@"?' + re.escape(name) + r'"?\()',
            re.MULTILINE,
        )
        llvm_ir, count = pattern.subn(r"\1ptx_kernel \2", llvm_ir, count=1)
        if count == 0 and not re.search(
            r"^define\s.*ptx_kernel.*@\"?" + re.escape(name) + r"\"?\(", llvm_ir, re.M
        ):
            raise ValueError(f"emit_ptx: kernel '{name}' is not defined in the module")
    return llvm_ir


def _with_ftz_flag(llvm_ir: str) -> str:
    if "nvvm-reflect-ftz" in llvm_ir or "!llvm.module.flags" in llvm_ir:
        return llvm_ir
    return f"{llvm_ir}\n!llvm.module.flags = !{{!9999}}\n!9999 = {_FTZ_FLAG}\n"


@functools.cache
def _libdevice_bitcode() -> bytes:
    return find_toolchain().require_libdevice().read_bytes()


def emit_ptx(
    llvm_ir: str,
    arch: str = "sm_80",
    kernel_names: Sequence[str] = (),
    ptx_version: int | None = None,
) -> str:
    """PTX for `arch` from LLVM IR text (e.g. `str(convert_module(...))`).

    `kernel_names` become `.entry` kernels (see the module docstring);
    `ptx_version` (e.g. 78 for PTX ISA 7.8) caps the PTX ISA version for an
    older assembler; by default LLVM picks the one `arch` needs.
    """
    uses_libdevice = re.search(r"^declare\s.*@\"?__nv_", llvm_ir, re.MULTILINE) is not None
    text = _mark_kernels(llvm_ir, kernel_names)
    if uses_libdevice:
        text = _with_ftz_flag(text)
    module = llvm.parse_assembly(text)
    module.triple = NVPTX_TRIPLE
    module.data_layout = NVPTX_DATA_LAYOUT
    if uses_libdevice:
        libdevice = llvm.parse_bitcode(_libdevice_bitcode())
        libdevice.triple = NVPTX_TRIPLE
        libdevice.data_layout = NVPTX_DATA_LAYOUT
        module.link_in(libdevice)
    kernels = set(kernel_names)
    for fn in module.functions:
        if not fn.is_declaration and fn.name not in kernels:
            fn.linkage = llvm.Linkage.internal
    module.verify()
    tm = _target_machine(arch, ptx_version)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)
    return tm.emit_assembly(module)


# ----------------------------------------------------------------- assembling


class PtxAssemblyError(RuntimeError):
    """The assembler rejected the PTX; the message carries its log."""


_NVJITLINK_INPUT_PTX = 2


class _NvJitLink:
    """The few nvJitLink entry points we need, through ctypes (the library's
    symbols are versioned, e.g. `__nvJitLinkCreate_13_0`)."""

    def __init__(self, path: Path):
        self.lib = ctypes.CDLL(str(path))
        self.major = next((m for m in (13, 12) if self._has(f"__nvJitLinkCreate_{m}_0")), None)

    def _has(self, symbol: str) -> bool:
        try:
            getattr(self.lib, symbol)
        except AttributeError:
            return False
        return True

    def fn(self, name: str):
        for symbol in (f"__nvJitLink{name}_{self.major}_0", f"nvJitLink{name}"):
            if self._has(symbol):
                f = getattr(self.lib, symbol)
                f.restype = ctypes.c_int
                return f
        raise CudaToolchainError(f"nvJitLink{name} not found in {self.lib._name}")

    def _log(self, handle: ctypes.c_void_p) -> str:
        size = ctypes.c_size_t()
        if self.fn("GetErrorLogSize")(handle, ctypes.byref(size)) != 0 or size.value == 0:
            return ""
        buf = ctypes.create_string_buffer(size.value)
        self.fn("GetErrorLog")(handle, buf)
        return buf.value.decode(errors="replace")

    def link_ptx(self, ptx: str, arch: str) -> bytes:
        handle = ctypes.c_void_p()
        options = (ctypes.c_char_p * 1)(f"-arch={arch}".encode())
        if (rc := self.fn("Create")(ctypes.byref(handle), 1, options)) != 0:
            raise PtxAssemblyError(f"nvJitLinkCreate(-arch={arch}) failed with status {rc}")
        try:
            data = ptx.encode()
            rc = self.fn("AddData")(
                handle, _NVJITLINK_INPUT_PTX, data, ctypes.c_size_t(len(data)), b"fusec.backends.ptx"
            )
            if rc == 0:
                rc = self.fn("Complete")(handle)
            if rc != 0:
                raise PtxAssemblyError(f"nvJitLink failed (status {rc}):\n{self._log(handle)}")
            size = ctypes.c_size_t()
            self.fn("GetLinkedCubinSize")(handle, ctypes.byref(size))
            cubin = ctypes.create_string_buffer(size.value)
            if (rc := self.fn("GetLinkedCubin")(handle, cubin)) != 0:
                raise PtxAssemblyError(f"nvJitLinkGetLinkedCubin failed with status {rc}")
            return cubin.raw
        finally:
            self.fn("Destroy")(ctypes.byref(handle))


@functools.cache
def _nvjitlink(path: Path) -> _NvJitLink:
    return _NvJitLink(path)


def _ptxas(ptxas: Path, ptx: str, arch: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="fusec-ptxas-") as tmp:
        src, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        src.write_text(ptx)
        proc = subprocess.run(
            [str(ptxas), f"-arch={arch}", "-O3", str(src), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise PtxAssemblyError(f"ptxas -arch={arch} failed:\n{proc.stderr}")
        return out.read_bytes()


def assemble_ptx(ptx: str, arch: str = "sm_80", assembler: str | None = None) -> bytes:
    """A cubin for `arch` from PTX text: nvJitLink (in-process) when found,
    else `ptxas`. `assembler` = "nvjitlink" or "ptxas" forces one."""
    tc = find_toolchain()
    if assembler not in (None, "nvjitlink", "ptxas"):
        raise ValueError(f"assemble_ptx: unknown assembler '{assembler}'")
    if assembler in (None, "nvjitlink") and tc.nvjitlink is not None:
        lib = _nvjitlink(tc.nvjitlink)
        if lib.major is not None or assembler == "nvjitlink":
            return lib.link_ptx(ptx, arch)
    if assembler in (None, "ptxas") and tc.ptxas is not None:
        return _ptxas(tc.ptxas, ptx, arch)
    if assembler is not None:
        raise CudaToolchainError(f"assemble_ptx: {assembler} requested but not found")
    tc.require_assembler()
    raise CudaToolchainError("no usable PTX assembler")  # pragma: no cover
