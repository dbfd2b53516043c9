"""What a reduction kernel computes at one kept index (`reduction_kernel`):
per reduction its accumulators (`init_accumulators`, `update_accumulators`,
`combine_accumulators` for partial ones, `finish_accumulators`), and the group's
other values on demand (`GroupValues`), once per kept index for row values or
once per element of a reduced-dims nest for full ones:

    %s = aten.sum %e dims = [1] keepdim = true
    -> acc = 0.0; acc = acc + e (per element); s = acc (f32 for halves, i64 for ints)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fusec.dialects import aten
from fusec.dialects.inference import BOOL
from fusec.passes.lowering.emitter import (
    LoopEmitter,
    compute_type,
    is_floating,
)
from fusec.passes.lowering.kernel_args import (
    VIEW_OPS,
)
from fusec.passes.lowering.operand_dtypes import round_result
from fusec.passes.lowering.pointwise import emit_pointwise, maximum
from fusec.passes.lowering.reduction_domain import Domain, is_reduction
from xdsl.dialects import arith, llvm
from xdsl.dialects import math as mathd
from xdsl.dialects.builtin import (
    IntegerType,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

REDUCTION_KINDS: dict[type[Operation], str] = {
    aten.SumOp: "sum",
    aten.MeanOp: "mean",
    aten.AmaxOp: "max",
    aten.AminOp: "min",
    aten.VarOp: "var",
    aten.StdOp: "std",
}
"""Reduction op class -> its accumulator kind."""


def acc_type(op: Operation) -> Attribute:
    t = op.results[0].type
    assert isinstance(t, TensorType)
    return compute_type(t.get_element_type())


def extremum_identity(e: LoopEmitter, t: Attribute, is_max: bool) -> SSAValue:
    """The identity of max (min): -inf (+inf), or the integer type's bound."""
    if is_floating(t):
        return e.const(-math.inf if is_max else math.inf, t)
    if t == BOOL:
        return e.const(0 if is_max else 1, t)
    assert isinstance(t, IntegerType)
    bits = t.width.data
    return e.const(-(2 ** (bits - 1)) if is_max else 2 ** (bits - 1) - 1, t)


def nan_flag(e: LoopEmitter, kind: str, t: Attribute) -> bool:
    """A CPU float max/min also or-reduces "x is NaN". `llvm.maximum` propagates
    NaN by itself, but the flag is a second use of x, and that keeps LLVM from
    rewriting `maximum(acc, select(c, -inf, v))` (a masked row: `masked_fill(m,
    -inf)` before a softmax) into `select(c, acc, maximum(acc, v))`, which it
    does not vectorize: the max of a masked softmax ran scalar, 6x slower."""
    return kind in ("max", "min") and is_floating(t) and not e.gpu


def init_accumulators(e: LoopEmitter, kind: str, t: Attribute) -> list[SSAValue]:
    if kind in ("max", "min"):
        extreme = extremum_identity(e, t, kind == "max")
        return [extreme, e.const(0, BOOL)] if nan_flag(e, kind, t) else [extreme]
    if kind in ("var", "std"):
        return [e.const(0.0, t), e.const(0.0, t), e.const(0.0, t)]  # count, mean, M2
    return [e.const(0, t)]


def update_accumulators(
    e: LoopEmitter, kind: str, accs: list[SSAValue], x: SSAValue
) -> list[SSAValue]:
    t = accs[0].type
    x = e.cast(x, t)
    if kind in ("max", "min") and is_floating(t):
        # `llvm.maximum`: NaN-propagating like `torch.amax`, and a reduction LLVM
        # vectorizes (the compare-and-select form of `arith.maximumf` is not).
        name = f"llvm.{'maximum' if kind == 'max' else 'minimum'}.{t}"
        acc = e.add(llvm.CallIntrinsicOp(name, [accs[0], x], [t]))
        if len(accs) == 1:
            return [acc]
        return [acc, e.add(arith.OrIOp(accs[1], e.add(arith.CmpfOp(x, x, "uno"))))]
    if kind in ("max", "min"):
        return [maximum(e, accs[0], x, kind == "max")]
    if kind in ("var", "std"):
        n, mean, m2 = accs
        n = e.add(arith.AddfOp(n, e.const(1.0, t)))
        delta = e.add(arith.SubfOp(x, mean))
        mean = e.add(arith.AddfOp(mean, e.add(arith.DivfOp(delta, n))))
        m2 = e.add(arith.AddfOp(m2, e.add(arith.MulfOp(delta, e.add(arith.SubfOp(x, mean))))))
        return [n, mean, m2]
    if t == BOOL:
        return [e.add(arith.OrIOp(accs[0], x))]
    if is_floating(t):
        # PyTorch's own sum kernels reassociate (vectorized partial sums), so may we.
        return [e.add(arith.AddfOp(accs[0], x, flags=arith.FastMathFlagsAttr([arith.FastMathFlag.REASSOC])))]
    return [e.add(arith.AddiOp(accs[0], x))]


def combine_accumulators(
    e: LoopEmitter, kind: str, a: list[SSAValue], b: list[SSAValue]
) -> list[SSAValue]:
    """Two partial accumulators of one reduction as one (the GPU's tree steps)."""
    if kind in ("max", "min"):
        flag = [e.add(arith.OrIOp(a[1], b[1]))] if len(a) == 2 else []
        return [maximum(e, a[0], b[0], kind == "max"), *flag]
    if kind in ("var", "std"):
        # Chan et al.'s parallel Welford step; an empty side (n = 0) leaves the other.
        (na, ma, qa), (nb, mb, qb) = a, b
        t = na.type
        n = e.add(arith.AddfOp(na, nb))
        zero = e.const(0.0, t)
        safe_n = e.add(arith.SelectOp(e.add(arith.CmpfOp(n, zero, "oeq")), e.const(1.0, t), n))
        delta = e.add(arith.SubfOp(mb, ma))
        wb = e.add(arith.DivfOp(nb, safe_n))
        mean = e.add(arith.AddfOp(ma, e.add(arith.MulfOp(delta, wb))))
        cross = e.add(arith.MulfOp(e.add(arith.MulfOp(delta, delta)), e.add(arith.MulfOp(na, wb))))
        m2 = e.add(arith.AddfOp(e.add(arith.AddfOp(qa, qb)), cross))
        return [n, mean, m2]
    t = a[0].type
    if t == BOOL:
        return [e.add(arith.OrIOp(a[0], b[0]))]
    return [e.add(arith.AddfOp(a[0], b[0]) if is_floating(t) else arith.AddiOp(a[0], b[0]))]


def finish_accumulators(
    e: LoopEmitter, op: Operation, accs: list[SSAValue], count: SSAValue
) -> SSAValue:
    """The reduction's value from its accumulators (`count`: reduced elements,
    index), rounded to a half-typed result as eager's kernel rounds it."""
    return round_result(e, op, reduced_value(e, op, accs, count))


def reduced_value(e: LoopEmitter, op: Operation, accs: list[SSAValue], count: SSAValue) -> SSAValue:
    kind = REDUCTION_KINDS[type(op)]
    t = accs[0].type
    if kind == "mean":
        assert is_floating(t), t
        n = e.add(arith.SIToFPOp(e.add(arith.IndexCastOp(count, IntegerType(64))), t))
        return e.add(arith.DivfOp(accs[0], n))
    if kind in ("var", "std"):
        n, _, m2 = accs
        correction = aten.number_value(op.properties.get("correction"), 1)
        var = e.add(arith.DivfOp(m2, e.add(arith.SubfOp(n, e.const(float(correction), t)))))
        if kind == "std":
            return e.add(mathd.SqrtOp(var))
        return var
    if kind in ("max", "min") and len(accs) == 2:
        return e.add(arith.SelectOp(accs[1], e.const(math.nan, t), accs[0]))
    return accs[0]


@dataclass
class GroupValues:
    """Computes group values on demand at one of two levels: once per kept index
    (`row`, kept across stages) or once per element of a reduced-dims nest."""

    body: Block
    domain: Domain
    load: Callable[[LoopEmitter, SSAValue, Sequence[SSAValue]], SSAValue]
    scalar_of: dict[SSAValue, SSAValue]
    row: dict[SSAValue, SSAValue]
    row_emitter: LoopEmitter
    row_offsets: list[SSAValue]

    def get(
        self,
        v: SSAValue,
        e: LoopEmitter,
        offsets: Sequence[SSAValue],
        cache: dict[SSAValue, SSAValue],
    ) -> SSAValue:
        if v in self.scalar_of:
            return self.scalar_of[v]
        if v in self.row:
            return self.row[v]
        if self.domain.is_row(v.type) and e is not self.row_emitter:
            return self.get(v, self.row_emitter, self.row_offsets, self.row)
        if v in cache:
            return cache[v]
        owner = v.owner
        if (
            isinstance(owner, Block)
            or owner.parent_block() is not self.body
            or is_view(owner)
            or isinstance(owner, aten.EmbeddingOp)  # a table read at an index (`load` gathers)
        ):
            res = self.load(e, v, offsets)
        elif isinstance(owner, arith.ConstantOp):
            res = e.add(arith.ConstantOp(owner.value, owner.result.type))
        elif is_reduction(owner):
            raise DiagnosticException(
                f"lower-group-to-loops: {owner.name} is read before its stage ran"
            )
        else:
            if not owner.has_trait(aten.Pointwise):
                raise DiagnosticException(f"lower-group-to-loops: {owner.name} is not pointwise")
            args = [self.get(o, e, offsets, cache) for o in owner.operands]
            res = emit_pointwise(e, owner, args)
        cache[v] = res
        return res


def is_view(op: Operation) -> bool:
    return isinstance(op, VIEW_OPS)
