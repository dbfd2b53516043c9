"""LLVM IR -> optimized host code, with llvmlite: O3 for the host CPU (its name
and features, so LLVM vectorizes for the real vector width) and an MCJIT engine."""

from __future__ import annotations

import ctypes
import struct
import threading
from functools import cache

import llvmlite.binding as llvm

_lock = threading.Lock()


@cache
def host_target_machine() -> llvm.TargetMachine:
    """The host's target machine: default triple, host cpu name and features."""
    return new_host_target_machine()


def new_host_target_machine() -> llvm.TargetMachine:
    """A target machine of its own: an MCJIT engine takes ownership of (and
    frees) the one it is created with, so engines must not share one."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        codemodel="jitdefault",
    )


def optimize_for_host(ir_text: str) -> str:
    """Runs LLVM's O3 pipeline (new pass manager) tuned for the host CPU."""
    with _lock:
        tm = host_target_machine()
        mod = llvm.parse_assembly(ir_text)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
        pto = llvm.PipelineTuningOptions(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
        return str(mod)


class UnresolvedSymbols(RuntimeError):
    """Generated code calls functions the JIT cannot resolve (a compiler-rt
    helper such as `__truncdfhf2`, say): loading it would crash the process at
    the first call, so the module is refused (its group runs through PyTorch)."""


@cache
def _process_symbols() -> ctypes.CDLL:
    return ctypes.CDLL(None)


def _resolvable(name: str) -> bool:
    if llvm.address_of_symbol(name):
        return True
    try:
        getattr(_process_symbols(), name)
    except AttributeError:
        return False
    return True


def elf_undefined_symbols(obj: bytes) -> list[str]:
    """Names an ELF64 little-endian relocatable object leaves undefined
    (symbol table entries with section index SHN_UNDEF); [] for other formats."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return []
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)
    ]
    names: list[str] = []
    for _, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        for k in range(1, size // (entsize or 24)):
            st_name, _, _, st_shndx = struct.unpack_from("<IBBH", obj, offset + k * 24)
            if st_shndx == 0 and st_name:
                end = obj.index(b"\0", strtab + st_name)
                names.append(obj[strtab + st_name : end].decode())
    return names


def check_symbols(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> None:
    """Raises `UnresolvedSymbols` if the machine code of `mod` (what LLVM's
    instruction selection emits, libcalls included) calls a function neither
    the JIT nor the process provides."""
    missing = sorted(
        {n for n in elf_undefined_symbols(tm.emit_object(mod)) if not _resolvable(n)}
    )
    if missing:
        raise UnresolvedSymbols(
            f"generated code calls {', '.join(missing)}, which the JIT cannot resolve"
        )


class JitModule:
    """One MCJIT engine holding one compiled module; `address(name)` gives a
    function pointer that lives as long as this object."""

    def __init__(self, ir_text: str):
        with _lock:
            tm = host_target_machine()
            mod = llvm.parse_assembly(ir_text)
            mod.verify()
            check_symbols(mod, tm)
            self._engine = llvm.create_mcjit_compiler(mod, new_host_target_machine())
            self._engine.finalize_object()
            self._mod = mod

    def address(self, name: str) -> int:
        return self._engine.get_function_address(name)
