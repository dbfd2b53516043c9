"""The scalar semantics of every pointwise `aten` op: one method per op, one
class per target (as Inductor's `OpsHandler` and `CppOverrides`).

`CpuScalarOps` computes what PyTorch's CPU kernels compute; `NvptxScalarOps`
(`scalar_ops_nvptx`) subclasses it and overrides only where CUDA eager differs.
A method is named after its op (`aten.leaky_relu` -> `leaky_relu`) and takes the
emitter, the op (for its properties and types) and its operands as values of
their compute types (`emitter.compute_type`); it returns the result's value,
which `emit` then wraps (uint8) or rounds (half types) as eager does:

    %r = aten.relu %x : tensor<4xf32> -> tensor<4xf32>
    CPU_SCALAR_OPS.emit(e, op, [x])        # or `pointwise.emit_pointwise(e, op, [x])`
    ->
    %c0 = arith.constant 0.0 : f32
    %neg = arith.cmpf olt, %x, %c0 : f32      // nvptx: ole (fmaxf(-0.0, 0) is +0.0)
    %r = arith.select %neg, %c0, %x : f32

`POINTWISE_METHODS` is the registry, keyed by op class and built from the
dialect's op list (every op with the `Pointwise` trait), so a pointwise op
without a method here fails `tests/test_op_homes.py`, not a user's kernel.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.inference import BF16, BOOL, F16
from fusec.dialects.opmath import is_step
from fusec.passes.lowering.emitter import LoopEmitter, compute_type, is_floating
from fusec.passes.lowering.math_polynomials import EXP_RANGE
from fusec.passes.lowering.operand_dtypes import (
    operand_type,
    opmath_operands,
    prop_number,
    round_result,
    to_common_dtype,
)
from fusec.passes.lowering.scalar_math import (
    floor_div_float,
    floor_div_int,
    int_pow,
    pow_scalar_exponent,
)
from xdsl.dialects import arith
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import IntegerType, StringAttr, TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

Args = Sequence[SSAValue]

POINTWISE_METHODS: dict[type[Operation], str] = {
    cls: cls.name.removeprefix("aten.")
    for cls in aten.ATEN_OPS
    if cls.has_trait(aten.Pointwise)
}
"""Pointwise op class -> the name of its method in `CpuScalarOps`."""


def _result_dtype(op: Operation) -> Attribute:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return t.get_element_type()


class CpuScalarOps:
    """Scalar semantics on the CPU: what PyTorch's CPU kernels compute."""

    target = "cpu"

    def emit(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        """The value of pointwise `op` on compute-typed `args`, wrapped to 0..255
        for a uint8 result and rounded to a half result type, as eager does."""
        method = POINTWISE_METHODS.get(type(op))
        if method is None:
            raise DiagnosticException(f"lower-group-to-loops: no lowering for {op.name}")
        res = getattr(self, method)(e, op, args)
        if isinstance(op, aten.ToOp):  # `cast` has rounded and wrapped
            return res
        if _result_dtype(op) == inf.U8:
            return e.wrap_u8(res)
        return round_result(e, op, res)

    # ------------------------------------------------------------ shared steps

    def operands(self, e: LoopEmitter, op: Operation, args: Args) -> list[SSAValue]:
        """An arithmetic op's operands as eager converts them: to the common
        dtype (rounded to a half type, `to_common_dtype`), then to the type it
        computes in (`operand_type`)."""
        dtype = _result_dtype(op)
        et = operand_type(dtype)
        # (a float pow takes its scalar exponent at full precision, a half one rounded)
        return [e.cast(v, et) for v in to_common_dtype(e, op, args, dtype)]

    def extremum(self, e: LoopEmitter, a: SSAValue, b: SSAValue, is_max: bool) -> SSAValue:
        """PyTorch's max/min (and clamp, relu of integers, max/min reductions):
        NaN propagates, and on a tie (0.0 vs -0.0) the first operand wins on the
        CPU (std::max); `signed_zero_tie` is where a target breaks it otherwise."""
        t = a.type
        if is_floating(t):
            other_wins = e.add(arith.CmpfOp(a, b, "olt") if is_max else arith.CmpfOp(b, a, "olt"))
            tie = self.signed_zero_tie(e, a, b, is_max)
            if tie is not None:
                other_wins = e.add(arith.OrIOp(other_wins, tie))
            r = e.add(arith.SelectOp(other_wins, b, a))
            nan = e.add(arith.CmpfOp(a, b, "uno"))
            return e.add(arith.SelectOp(nan, e.add(arith.AddfOp(a, b)), r))
        if t == BOOL:
            return e.add(arith.OrIOp(a, b) if is_max else arith.AndIOp(a, b))
        return e.add(arith.MaxSIOp(a, b) if is_max else arith.MinSIOp(a, b))

    def signed_zero_tie(
        self, e: LoopEmitter, a: SSAValue, b: SSAValue, is_max: bool
    ) -> SSAValue | None:
        """Where equal operands (+0.0 and -0.0) make max/min take `b`: never on
        the CPU, whose std::max/std::min keep the first."""
        return None

    def relu_takes_zero(self, e: LoopEmitter, x: SSAValue, zero: SSAValue) -> SSAValue:
        """Where float relu gives 0: the CPU's `x < 0 ? 0 : x` keeps -0.0."""
        return e.add(arith.CmpfOp(x, zero, "olt"))

    def safe_divisor(self, e: LoopEmitter, a: SSAValue, b: SSAValue) -> SSAValue:
        """An integer divisor that cannot trap: `x / 0 -> x / 1` (flagged by
        `flag_zero_divisor`) and `MIN / -1 -> MIN / 1` (the wrapped quotient, as
        eager computes it without trapping)."""
        t = a.type
        assert isinstance(t, IntegerType)
        if t == BOOL:
            raise DiagnosticException("lower-group-to-loops: integer division of bools")
        zero = e.add(arith.CmpiOp(b, e.const(0, t), "eq"))
        self.flag_zero_divisor(e, zero)
        width = t.width.data
        overflow = e.add(arith.AndIOp(e.add(arith.CmpiOp(b, e.const(-1, t), "eq")),
                                      e.add(arith.CmpiOp(a, e.const(-(1 << (width - 1)), t), "eq"))))  # fmt: skip
        return e.add(arith.SelectOp(e.add(arith.OrIOp(zero, overflow)), e.const(1, t), b))

    def flag_zero_divisor(self, e: LoopEmitter, zero: SSAValue) -> None:
        """Records an i1 that is true where an integer divisor is 0: the CPU
        kernel sets its zero-division byte, and the host raises eager's error."""
        e.zero_divisors.append(zero)

    def sigmoid_of(self, e: LoopEmitter, x: SSAValue) -> SSAValue:
        """1 / (1 + exp(-x)), its exp marked for normal results only (`EXP_RANGE`:
        where exp(-x) is below 2^-124, 1 + it rounds to 1 anyway; the CPU
        expansion saves a scaling multiply and its range selects; libdevice's
        exp ignores the mark)."""
        one = e.const(1.0, x.type)
        exp = mathd.ExpOp(e.add(arith.NegfOp(x)))
        exp.attributes[EXP_RANGE] = StringAttr("normal")
        ex = e.add(exp)
        return e.add(arith.DivfOp(one, e.add(arith.AddfOp(one, ex))))

    # ------------------------------------------------------------ comparisons

    def compare(
        self, e: LoopEmitter, op: Operation, args: Args, pred: tuple[str, str, str]
    ) -> SSAValue:
        """`pred` = (cmpf predicate, signed cmpi predicate, unsigned one for bools)."""
        dtype = inf.result_dtype([o.type for o in op.operands])
        common = compute_type(dtype)
        a, b = (e.cast(v, operand_type(dtype)) for v in to_common_dtype(e, op, args, dtype))
        if is_floating(common):
            return e.add(arith.CmpfOp(a, b, pred[0]))
        return e.add(arith.CmpiOp(a, b, pred[2] if common == BOOL else pred[1]))

    def eq(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self.compare(e, op, args, ("oeq", "eq", "eq"))

    def ne(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self.compare(e, op, args, ("une", "ne", "ne"))

    def lt(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self.compare(e, op, args, ("olt", "slt", "ult"))

    def le(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self.compare(e, op, args, ("ole", "sle", "ule"))

    def gt(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self.compare(e, op, args, ("ogt", "sgt", "ugt"))

    def ge(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self.compare(e, op, args, ("oge", "sge", "uge"))

    # ------------------------------------------------------------ logical ops

    def logical_and(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        a, b = (e.to_bool(v) for v in args)
        return e.add(arith.AndIOp(a, b))

    def logical_or(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        a, b = (e.to_bool(v) for v in args)
        return e.add(arith.OrIOp(a, b))

    def logical_xor(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        a, b = (e.to_bool(v) for v in args)
        return e.add(arith.XOrIOp(a, b))

    def logical_not(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return e.add(arith.XOrIOp(e.to_bool(args[0]), e.const(1, BOOL)))

    # ------------------------------------------------------------ selection, dtypes

    def where(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        et = operand_type(_result_dtype(op))
        cond = e.to_bool(args[0])
        return e.add(arith.SelectOp(cond, e.cast(args[1], et), e.cast(args[2], et)))

    def to(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return e.cast(args[0], _result_dtype(op))

    def full_like(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        ct = compute_type(_result_dtype(op))
        value = prop_number(op, "value")
        assert value is not None
        return e.const(bool(value) if ct == BOOL else value, ct)

    # ------------------------------------------------------------ unary

    def neg(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        if is_floating(x.type):
            return e.add(arith.NegfOp(x))
        return e.add(arith.SubiOp(e.const(0, x.type), x))

    def abs(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        if is_floating(x.type):
            return e.add(mathd.AbsFOp(x))
        neg = e.add(arith.SubiOp(e.const(0, x.type), x))
        return e.add(arith.SelectOp(e.add(arith.CmpiOp(x, e.const(0, x.type), "slt")), neg, x))

    def relu(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        if not is_floating(x.type):
            return self.extremum(e, x, e.const(0, x.type), True)
        zero = e.const(0.0, x.type)
        return e.add(arith.SelectOp(self.relu_takes_zero(e, x, zero), zero, x))

    def _math(
        self, e: LoopEmitter, op: Operation, args: Args, cls: Callable[[SSAValue], Operation]
    ) -> SSAValue:
        (x,) = self.operands(e, op, args)
        return e.add(cls(x))

    def exp(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.ExpOp)

    def expm1(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.ExpM1Op)

    def log(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.LogOp)

    def log1p(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.Log1pOp)

    def sqrt(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.SqrtOp)

    def rsqrt(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.RsqrtOp)

    def tanh(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.TanhOp)

    def erf(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.ErfOp)

    def sin(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.SinOp)

    def cos(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._math(e, op, args, mathd.CosOp)

    def reciprocal(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        return e.add(arith.DivfOp(e.const(1.0, x.type), x))

    def sigmoid(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        return self.sigmoid_of(e, x)

    def silu(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        return e.add(arith.MulfOp(x, self.sigmoid_of(e, x)))

    def leaky_relu(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        ct = x.type
        slope_value = prop_number(op, "negative_slope")
        slope = e.const(0.01 if slope_value is None else slope_value, ct)
        pos = e.add(arith.CmpfOp(x, e.const(0.0, ct), "ogt"))
        return e.add(arith.SelectOp(pos, x, e.add(arith.MulfOp(x, slope))))

    def gelu(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        ct = x.type
        half, one = e.const(0.5, ct), e.const(1.0, ct)
        approx = op.properties.get("approximate")
        if approx is not None and approx.data == "tanh":  # type: ignore[attr-defined]
            k0 = e.const(math.sqrt(2.0 / math.pi), ct)
            k1 = e.const(0.044715, ct)
            cube = e.add(arith.MulfOp(x, e.add(arith.MulfOp(x, x))))
            inner = e.add(arith.MulfOp(k0, e.add(arith.AddfOp(x, e.add(arith.MulfOp(k1, cube))))))
            t = e.add(mathd.TanhOp(inner))
        else:
            t = e.add(mathd.ErfOp(e.add(arith.MulfOp(x, e.const(math.sqrt(0.5), ct)))))
        return e.add(arith.MulfOp(e.add(arith.MulfOp(half, x)), e.add(arith.AddfOp(one, t))))

    def clamp(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        (x,) = self.operands(e, op, args)
        ct, et = x.type, _result_dtype(op)
        lo, hi = prop_number(op, "min"), prop_number(op, "max")
        if lo is not None:
            x = self.extremum(e, x, e.cast(e.const(lo, ct), et), True)
        if hi is not None:
            x = self.extremum(e, x, e.cast(e.const(hi, ct), et), False)
        return x

    # ------------------------------------------------------------ binary arithmetic

    def _add_or_sub(self, e: LoopEmitter, op: Operation, args: Args, add: bool) -> SSAValue:
        x, b = self.operands(e, op, args)
        ct = x.type
        fl = is_floating(ct)
        alpha = prop_number(op, "alpha")
        if alpha is not None and alpha != 1:
            # alpha is converted to the op's dtype, as the other operands are:
            # add(inf, x, alpha=1e-8) in f16 is inf + x * 0 = NaN, as in eager.
            scale = e.const(alpha, ct)
            if not is_step(op):
                scale = e.cast(scale, _result_dtype(op))
            b = e.add((arith.MulfOp if fl else arith.MuliOp)(b, scale))
        if ct == BOOL:
            return e.add(arith.OrIOp(x, b))
        if add:
            return e.add(arith.AddfOp(x, b) if fl else arith.AddiOp(x, b))
        return e.add(arith.SubfOp(x, b) if fl else arith.SubiOp(x, b))

    def add(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._add_or_sub(e, op, args, True)

    def sub(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        return self._add_or_sub(e, op, args, False)

    def mul(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        x, y = self.operands(e, op, args)
        if x.type == BOOL:
            return e.add(arith.AndIOp(x, y))
        return e.add(arith.MulfOp(x, y) if is_floating(x.type) else arith.MuliOp(x, y))

    def div(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        x, y = self.operands(e, op, args)
        dt = _result_dtype(op)
        mode = op.properties.get("rounding_mode")
        mode_s = None if mode is None else mode.data  # type: ignore[attr-defined]
        if mode_s == "floor":
            in_half = dt in (F16, BF16) and 1 not in opmath_operands(op)
            if is_floating(x.type):
                return floor_div_float(e, x, y, dt if in_half else None)
            return floor_div_int(e, x, self.safe_divisor(e, x, y))
        if is_floating(x.type):
            q = e.add(arith.DivfOp(x, y))
            if mode_s != "trunc":
                return q
            # Half types round the quotient before truncating, as PyTorch does,
            # but for a scalar divisor, which its kernel divides by in op math.
            if 1 not in opmath_operands(op):
                q = e.cast(q, dt)
            return e.add(mathd.TruncOp(q))
        return e.add(arith.DivSIOp(x, self.safe_divisor(e, x, y)))

    def pow(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        x, y = self.operands(e, op, args)
        if not is_floating(x.type):
            return int_pow(e, x, y)
        if isinstance(op.operands[1].type, TensorType):
            return e.add(mathd.PowFOp(x, y))
        return pow_scalar_exponent(e, x, y, _result_dtype(op))

    def maximum(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        x, y = self.operands(e, op, args)
        return self.extremum(e, x, y, True)

    def minimum(self, e: LoopEmitter, op: Operation, args: Args) -> SSAValue:
        x, y = self.operands(e, op, args)
        return self.extremum(e, x, y, False)


CPU_SCALAR_OPS = CpuScalarOps()
