"""LLVM IR -> optimized host code, with llvmlite: O3 for the host CPU (its name
and features, so LLVM vectorizes for the real vector width) and an MCJIT engine."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import struct
import threading
from functools import cache

import llvmlite.binding as llvm

_lock = threading.Lock()


@cache
def host_target_machine() -> llvm.TargetMachine:
    """The host's target machine: default triple, host cpu name and features."""
    return _new_host_target_machine()


def _new_host_target_machine() -> llvm.TargetMachine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
        opt=3,
        codemodel="jitdefault",
    )


@cache
def host_vector_width() -> int | None:
    """512 on AVX-512 hosts, else None (LLVM's own choice).

    LLVM's tuning for AVX-512 cores prefers 256-bit vectors (to keep clocks up
    in mixed code); a fused kernel is one hot loop, where full-width vectors
    measured about 25% faster (benchmarks/compile_bench.py)."""
    features = llvm.get_host_cpu_features()
    return 512 if features.get("avx512f") else None


_DEFINE = re.compile(r"^(define [^\n]*\))(\s*\n?\{)", re.M)


def _with_vector_width(ir_text: str, width: int | None) -> str:
    """Every defined function gets `"prefer-vector-width"="<width>"`."""
    if width is None:
        return ir_text
    tagged = _DEFINE.sub(lambda m: f"{m.group(1)} #4242{m.group(2)}", ir_text)
    return tagged + (
        f'\nattributes #4242 = {{ "prefer-vector-width"="{width}" '
        f'"min-legal-vector-width"="{width}" }}\n'
    )


LARGE_KERNEL_LINES = 4000
"""Unoptimized IR lines above which a kernel's vectorized loop gets no vector
epilogue: a kernel of a few hundred fused ops (about 25 lines per
transcendental op) would otherwise be compiled three times over (vector loop,
vector epilogue, scalar remainder), and LLVM's code generator spends half its
time on the epilogue, which only serves the last few elements of a chunk."""


SLP_MAX_VF = 16
"""Widest vector the SLP vectorizer builds (16 f32: one AVX-512 register).

Unbounded, it builds vectors wider than any register: on an LSTM backward's
bias-gradient kernel (50 column sums of 8 lanes each, which the loop vectorizer
had already widened) O3 took 74 s instead of under 1 s."""


HEAVY_FLOAT_OPS = 16
"""Float arithmetic instructions (`fadd`, `fsub`, `fmul`, `fdiv`) in a kernel's
unoptimized IR from which its loops are interleaved `HEAVY_INTERLEAVE` times:
about one expanded transcendental (exp, tanh, sigmoid, erf: 20-40 each)."""

HEAVY_INTERLEAVE = 4
"""Vector iterations a loop of a compute-heavy kernel runs side by side.

Such a loop body is one long dependency chain (chain8's tanh then sigmoid is
about 50 dependent ops and two divisions, over 200 cycles from load to store);
with one vector per iteration the out-of-order core holds too few iterations
to hide that latency, and LLVM's cost model, counting registers, picks an
interleave of 1. Four independent chains per iteration measured (one thread,
2^17 elements, in cache, AVX-512 Zen 4): chain8 1.35 -> 0.97 ns per element,
the LSTM tail 2.82 -> 2.19 ns; 8 was slower than 4 (register spills)."""

_FLOAT_OP = re.compile(r"= f(?:add|sub|mul|div) ")


def loop_interleave(ir_text: str) -> int:
    """`-force-vector-interleave` for a kernel: `HEAVY_INTERLEAVE` when its IR has
    `HEAVY_FLOAT_OPS` float ops or more and is not over `LARGE_KERNEL_LINES`
    (there each copy of the body costs code generation time), else 0 (LLVM's
    own choice: a memory-bound loop gains nothing from more)."""
    if ir_text.count("\n") > LARGE_KERNEL_LINES:
        return 0
    heavy = len(_FLOAT_OP.findall(ir_text)) >= HEAVY_FLOAT_OPS
    return HEAVY_INTERLEAVE if heavy else 0


def _vector_epilogue(enabled: bool) -> None:
    # A process-wide LLVM option: set for every module, under `_lock`.
    llvm.set_option("", f"-enable-epilogue-vectorization={'true' if enabled else 'false'}")


def _interleave(count: int) -> None:
    # Process-wide too (0: LLVM's cost model decides), set under `_lock`.
    llvm.set_option("", f"-force-vector-interleave={count}")


def optimize_for_host(ir_text: str) -> str:
    """Runs LLVM's O3 pipeline (new pass manager) tuned for the host CPU, with
    the host's full vector width (no vector epilogue for kernels over
    `LARGE_KERNEL_LINES`) and compute-heavy loops interleaved (`loop_interleave`)."""
    large = ir_text.count("\n") > LARGE_KERNEL_LINES
    interleave = loop_interleave(ir_text)
    ir_text = _with_vector_width(ir_text, host_vector_width())
    with _lock:
        _vector_epilogue(not large)
        _interleave(interleave)
        llvm.set_option("", f"-slp-max-vf={SLP_MAX_VF}")
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


def _object_key(ir_text: str) -> str:
    """What machine code for `ir_text` depends on: the IR and the host target."""
    from fusec.runtime.program_cache import digest

    tm = host_target_machine()
    return digest(
        ir_text,
        tm.triple,
        llvm.get_host_cpu_name(),
        llvm.get_host_cpu_features().flatten(),
        ".".join(map(str, llvm.llvm_version_info)),
    )


class UnresolvedSymbols(RuntimeError):
    """Generated code calls functions the JIT cannot resolve (a compiler-rt
    helper such as `__truncdfhf2`, say): loading it would crash the process at
    the first call, so the module is refused (its group runs through PyTorch)."""


@cache
def _process_symbols() -> ctypes.CDLL:
    return ctypes.CDLL(None)


@cache
def _compiler_runtime() -> ctypes.CDLL | None:
    # LLVM lowers some conversions (double -> half: `__truncdfhf2`) to libcalls
    # that live in libgcc_s; the process has it loaded, but not always in the
    # global namespace that MCJIT searches, so whether a kernel loaded would
    # depend on what the process happened to import before.
    try:
        return ctypes.CDLL(ctypes.util.find_library("gcc_s") or "libgcc_s.so.1")
    except OSError:
        return None


def _resolvable(name: str) -> bool:
    """Whether the JIT resolves `name`, registering it from the process or the
    compiler runtime where it is found there."""
    if llvm.address_of_symbol(name):
        return True
    for lib in (_process_symbols(), _compiler_runtime()):
        fn = None if lib is None else getattr(lib, name, None)
        if fn is not None:
            llvm.add_symbol(name, ctypes.cast(fn, ctypes.c_void_p).value)
            return True
    return False


def elf_undefined_symbols(obj: bytes) -> list[str]:
    """Names an ELF64 little-endian relocatable object leaves undefined
    (symbol table entries with section index SHN_UNDEF); [] for other formats."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        return []
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
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


def check_symbols(mod: llvm.ModuleRef, tm: llvm.TargetMachine) -> bytes:
    """Raises `UnresolvedSymbols` if the machine code of `mod` (what LLVM's
    instruction selection emits, libcalls included) calls a function neither
    the JIT nor the process provides; else returns that machine code (an
    object file), so it need not be generated again."""
    obj = tm.emit_object(mod)
    missing = sorted({n for n in elf_undefined_symbols(obj) if not _resolvable(n)})
    if missing:
        raise UnresolvedSymbols(
            f"generated code calls {', '.join(missing)}, which the JIT cannot resolve"
        )
    return obj


class JitModule:
    """One MCJIT engine holding one compiled module; `address(name)` gives a
    function pointer that lives as long as this object.

    The machine code is cached on disk (`fusec.runtime.program_cache`, kind
    "object"), so a later process loads it instead of running LLVM's code
    generator: MCJIT asks the object cache before compiling. On a miss the
    code is generated once, by the symbol check (`check_symbols`), and handed
    to MCJIT through the same object cache: a kernel of a few hundred ops
    spends seconds in LLVM's code generator, so it must not run twice."""

    def __init__(self, ir_text: str):
        from fusec.runtime import program_cache

        key = _object_key(ir_text) if program_cache.enabled() else None
        cached = None if key is None else program_cache.load("object", key)
        if cached is not None:
            from fusec.runtime.entry_checks import object_problem

            # LLVM's loader aborts the process on a malformed object: a payload
            # that is not one for this machine is a miss, generated again.
            problem = object_problem(cached[1])
            if problem is not None:
                program_cache.refused("object", program_cache.entry_path("object", key), problem)
                cached = None
        self.object_cache_hit = cached is not None

        with _lock:
            # An MCJIT engine owns its target machine and frees it with itself:
            # each gets its own, never the shared one.
            tm = _new_host_target_machine()
            mod = llvm.parse_assembly(ir_text)
            mod.verify()
            if cached is None:  # a cached object was checked before it was stored
                obj = check_symbols(mod, tm)
                if key is not None:
                    program_cache.store("object", key, obj)
            else:
                obj = cached[1]

            def getbuffer(_module: llvm.ModuleRef) -> bytes:
                return obj

            self._engine = llvm.create_mcjit_compiler(mod, tm)
            self._engine.set_object_cache(None, getbuffer)
            self._engine.finalize_object()
            self._mod = mod

    def address(self, name: str) -> int:
        return self._engine.get_function_address(name)

    def global_address(self, name: str) -> int:
        """The address of global variable `name`."""
        return self._engine.get_global_value_address(name)
