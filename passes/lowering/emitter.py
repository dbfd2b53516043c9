"""`LoopEmitter`: the loop-level ops being built for one element of a kernel's
index space, with PyTorch's loads, stores and dtype conversions.

Every lowering builder appends through one (`e.add(op)` returns its result), so
the scalar semantics (`fusec.passes.lowering.scalar_ops`), the loop nests and the
reductions share one way to load, store and cast:

    e = LoopEmitter()
    x = e.load(ref, [offset], F16)       # memref.load + arith.extf to f32
    y = e.cast(x, F16)                   # rounded to f16 and back (eager's rounding)
    e.store(y, out, [offset], F16)       # arith.truncf + memref.store

Half types compute in f32, uint8 in i32 (`compute_type`); a uint8 tensor is
stored as i8 (`storage_type`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeGuard

from fusec.dialects import inference as inf
from fusec.dialects.inference import BF16, BOOL, F16, F32, F64
from xdsl.dialects import arith, builtin, memref
from xdsl.dialects.builtin import AnyFloat, FloatAttr, IndexType, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

INDEX = IndexType()
DYN = builtin.DYNAMIC_INDEX


def dtype_name(t: Attribute) -> str:
    """`f32`, `bf16`, `i1`, ... as written in the IR."""
    return str(t)


def compute_type(t: Attribute) -> Attribute:
    """Half types compute in f32 (as PyTorch's CPU kernels and Inductor do);
    uint8 in i32, zero-extended (arith's integers are signless, and every
    signed i32 op but a wrap gives the unsigned result on values 0..255), each
    result wrapped back to 0..255 as uint8 arithmetic wraps (`wrap_u8`)."""
    if t in (F16, BF16):
        return F32
    return inf.I32 if t == inf.U8 else t


def storage_type(t: Attribute) -> Attribute:
    """The element type of a kernel's memref for a tensor of element type `t`:
    uint8 is stored as (signless) i8, the others as they are."""
    return inf.I8 if t == inf.U8 else t


def is_floating(t: Attribute) -> TypeGuard[AnyFloat]:
    return t in (F16, BF16, F32, F64)


@dataclass
class LoopEmitter:
    """Appends loop-level ops for one element of the index space."""

    ops: list[Operation] = field(default_factory=list)
    zero_divisors: list[SSAValue] = field(default_factory=list)
    """i1 values, true where an integer divisor of this element is 0."""
    out_of_range: tuple[Operation, SSAValue] | None = None
    """The `scf.if` storing the out-of-range flag for this element's lookups, and
    its condition (`fusec.passes.lowering.gather`): one per element, however many
    lookups, so that LLVM can unswitch the loop on it and vectorize."""
    gpu: bool = False
    """Emitting a GPU kernel: pointwise ops take their scalar semantics from
    `NvptxScalarOps` (CUDA eager's signed zeros, no integer-division flag)
    rather than `CpuScalarOps` (`pointwise.scalar_ops_for`)."""

    def add(self, op: Operation) -> SSAValue:
        self.ops.append(op)
        return op.results[0] if op.results else None  # type: ignore[return-value]

    def const(self, value: float | int | bool, t: Attribute) -> SSAValue:
        if isinstance(t, IndexType) or isinstance(t, IntegerType):
            return self.add(arith.ConstantOp(IntegerAttr(int(value), t)))
        assert isinstance(t, AnyFloat), t
        return self.add(arith.ConstantOp(FloatAttr(float(value), t)))

    def wrap_u8(self, v: SSAValue) -> SSAValue:
        """An i32 computed for a uint8 result, wrapped to 0..255 (`v & 255`)."""
        return self.add(arith.AndIOp(v, self.const(255, inf.I32)))

    def load(self, ref: SSAValue, offsets: Sequence[SSAValue], et: Attribute) -> SSAValue:
        """An element of `ref` (a tensor of element type `et`) as a compute-typed
        value: halves widened to f32, uint8 zero-extended to i32."""
        loaded = self.add(memref.LoadOp.get(ref, offsets))
        if et in (F16, BF16):
            return self.add(arith.ExtFOp(loaded, F32))
        if et == inf.U8:
            return self.add(arith.ExtUIOp(loaded, inf.I32))
        return loaded

    def store(self, v: SSAValue, ref: SSAValue, offsets: Sequence[SSAValue], et: Attribute) -> None:
        """Stores a value as element type `et` (`load`'s inverse)."""
        v = self.cast(v, compute_type(et))
        if et in (F16, BF16):
            v = self.add(arith.TruncFOp(v, et))
        elif et == inf.U8:
            v = self.add(arith.TruncIOp(v, inf.I8))
        self.add(memref.StoreOp.get(v, ref, offsets))

    def to_bool(self, v: SSAValue) -> SSAValue:
        t = v.type
        if t == BOOL:
            return v
        zero = self.const(0, t)
        if is_floating(t):
            return self.add(arith.CmpfOp(v, zero, "une"))
        return self.add(arith.CmpiOp(v, zero, "ne"))

    def cast(self, v: SSAValue, to: Attribute) -> SSAValue:
        """PyTorch's `to(dtype)` between compute types (f16/bf16 are rounded by
        a trip through the storage type, uint8 wraps to 0..255 in i32)."""
        frm = v.type
        if to == inf.U8:
            return self.wrap_u8(self.cast(v, inf.I32))
        if to in (F16, BF16):
            narrow = self.cast(v, F32) if frm != F32 else v
            rounded = self.add(arith.TruncFOp(narrow, to))
            return self.add(arith.ExtFOp(rounded, F32))
        if frm == to:
            return v
        if to == BOOL:
            return self.to_bool(v)
        if is_floating(to):
            if is_floating(frm):
                wider = frm.bitwidth < to.bitwidth
                return self.add(arith.ExtFOp(v, to) if wider else arith.TruncFOp(v, to))
            if frm == BOOL:
                return self.add(arith.UIToFPOp(v, to))
            return self.add(arith.SIToFPOp(v, to))
        assert isinstance(to, IntegerType)
        if is_floating(frm):
            return self.add(arith.FPToSIOp(v, to))
        assert isinstance(frm, IntegerType)
        if frm == BOOL:
            return self.add(arith.ExtUIOp(v, to))
        if frm.width.data < to.width.data:
            return self.add(arith.ExtSIOp(v, to))
        return self.add(arith.TruncIOp(v, to))
