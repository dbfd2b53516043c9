"""The GPU kernels' 32-bit loop divides a flat index by a size as a multiply
and a shift (`gpu_loop._magic_divisor` / `_magic_quotient`). The
same IR is compiled for this host here and checked against integer division
over the whole range it serves: every n < 2^31, every size 1..2^30."""

from __future__ import annotations

import ctypes
import functools
import random
from collections.abc import Callable

import llvmlite.binding as llvm
import torch
from fusec.backends.llvm_jit import host_target_machine, optimize_for_host
from fusec.codegen.kernel import lower_to_llvm_dialect, translate_to_llvm_ir
from fusec.passes.lowering.emitter import INDEX, LoopEmitter
from fusec.passes.lowering.gpu_loop import _magic_divisor, _magic_quotient
from xdsl.dialects import func, memref, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, IntegerType, MemRefType, ModuleOp
from xdsl.ir import Block, Region

_ENGINES: list[llvm.ExecutionEngine] = []


@functools.cache
def divide() -> Callable[..., None]:
    """`out[i] = n[i] / size[i]` over `count` i32 pairs, through the magic pair."""
    i32 = MemRefType(IntegerType(32), [DYNAMIC_INDEX])
    entry = Block(arg_types=[i32, i32, i32, INDEX])
    n_ref, size_ref, out_ref, count = entry.args
    e = LoopEmitter()
    body = Block(arg_types=[INDEX])
    b = LoopEmitter([])
    i = body.args[0]
    n = b.add(memref.LoadOp.get(n_ref, [i]))
    size = b.add(memref.LoadOp.get(size_ref, [i]))
    b.add(memref.StoreOp.get(_magic_quotient(b, n, *_magic_divisor(b, size)), out_ref, [i]))
    b.add(scf.YieldOp())
    body.add_ops(b.ops)
    e.add(scf.ForOp(e.const(0, INDEX), count, e.const(1, INDEX), [], body))
    e.add(func.ReturnOp())
    entry.add_ops(e.ops)
    module = ModuleOp([func.FuncOp("divide", ([i32, i32, i32, INDEX], []), Region(entry))])
    lower_to_llvm_dialect(module, "cpu")
    ref = llvm.parse_assembly(optimize_for_host(translate_to_llvm_ir(module, "cpu")))
    engine = llvm.create_mcjit_compiler(ref, host_target_machine())
    engine.finalize_object()
    _ENGINES.append(engine)
    proto = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 3), ctypes.c_int64)
    return proto(engine.get_function_address("divide"))


def quotients(n: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(n)
    divide()(n.data_ptr(), size.data_ptr(), out.data_ptr(), n.numel())
    return out


def check(n: list[int], size: list[int]) -> None:
    nt = torch.tensor(n, dtype=torch.int32)
    st = torch.tensor(size, dtype=torch.int32)
    want = torch.div(nt.long(), st.long(), rounding_mode="floor").int()
    got = quotients(nt, st)
    bad = (got != want).nonzero().flatten()[:5].tolist()
    assert not bad, [(n[k], size[k], int(got[k]), int(want[k])) for k in bad]


def edge_sizes() -> list[int]:
    sizes = {1, 2, 3, 5, 7, 255, 256, 257, 1000, 4096, 1 << 30}
    for k in range(1, 31):
        sizes |= {(1 << k) - 1, 1 << k, (1 << k) + 1}
    return sorted(s for s in sizes if 1 <= s <= 1 << 30)


def test_edge_sizes_against_edge_numerators() -> None:
    """Powers of two and their neighbours (where the bit length, hence the shift,
    changes), against numerators at multiples of the size and their neighbours
    and at the top of the range."""
    ns, ss = [], []
    top = (1 << 31) - 1
    for s in edge_sizes():
        for n in {0, 1, s - 1, s, s + 1, top, top - 1, top - top % s, top - top % s - 1}:
            if 0 <= n <= top:
                ns.append(n)
                ss.append(s)
    check(ns, ss)


def test_random_pairs() -> None:
    rng = random.Random(0)
    ns, ss = [], []
    for _ in range(200_000):
        s = rng.randint(1, 1 << rng.randint(0, 30))
        ns.append(rng.randint(0, (1 << 31) - 1))
        ss.append(min(s, 1 << 30))
    check(ns, ss)


def test_every_numerator_for_small_sizes() -> None:
    """Every n below 2^20 for the sizes a kernel's inner dims usually have."""
    n = torch.arange(1 << 20, dtype=torch.int32)
    for s in (3, 7, 10, 48, 129, 768, 1000, 3 * 1024 + 1):
        got = quotients(n, torch.full_like(n, s))
        assert torch.equal(got, torch.div(n, s, rounding_mode="floor")), s
