"""Which tensors may share memory: the alias facts `functionalize` and `fuse` need.

SSA values name tensors (buffers), and `aten.copy_` writes one in place, so a read
of `%x` sees every write to `%x` or to a tensor sharing its memory. A value's
*alias root* is the tensor its memory belongs to:

    %v = aten.narrow %x dim = 0 start = 0 length = 1 : ...   root(%v) = root(%x)
    %y = aten.exp %x : ...                                    root(%y) = %y (fresh)
    %o = aten.opaque "f"(%x) : ...                            root(%o) = UNKNOWN
    %c = aten.opaque "g"(%x) {fresh} : ...                    root(%c) = %c (fresh)
    func.func @f(%x: ...)                                     root(%x) = ARGUMENT

Views (`ShapeOp` ops) share their input's root; other aten ops return fresh tensors and are
their own root; function arguments share the `ARGUMENT` root (the caller may pass
one tensor twice, or views of one tensor), and opaque results (any view of
anything) have the `UNKNOWN` root, which may alias every other root, unless the
op is marked `fresh` (`OPAQUE_FRESH`: its ATen schema aliases nothing, as for
`aten.convolution`), when they are their own root like other aten ops' results.
"""

from __future__ import annotations

from collections.abc import Sequence

from fusec.dialects.aten import (
    OPAQUE_FRESH,
    CopyOp,
    ForeachAddOp,
    ForeachCopyOp,
    OpaqueOp,
    ShapeOp,
)
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, OpResult, SSAValue

ARGUMENT = object()
"""The alias root of function arguments (and block arguments in general)."""

UNKNOWN = object()
"""The alias root of opaque results."""


def is_view_op(op: Operation) -> bool:
    """Does `op` return (a view of) its first operand rather than a fresh tensor?
    (A same-dtype `aten.to` is a copy: the importer imports a no-op cast as the
    value itself and only emits one for a copy, `clone` or `contiguous()`.)"""
    return op.has_trait(ShapeOp)


def is_unknown_opaque(op: Operation) -> bool:
    """Is `op` an `aten.opaque` whose results may alias anything (not `fresh`)?"""
    return isinstance(op, OpaqueOp) and OPAQUE_FRESH not in op.attributes


def aliases_operands(op: Operation) -> bool:
    """May a result of `op` share memory with one of its operands?"""
    return is_view_op(op) or is_unknown_opaque(op)


def alias_root(value: SSAValue) -> object:
    """The tensor whose memory `value` is (see the module docstring)."""
    while isinstance(value, OpResult) and is_view_op(value.op) and value.op.operands:
        value = value.op.operands[0]
    if not isinstance(value, OpResult):
        return ARGUMENT
    return UNKNOWN if is_unknown_opaque(value.op) else value


def may_alias(a: object, b: object) -> bool:
    """May tensors with alias roots `a` and `b` share memory?"""
    return a is b or a is UNKNOWN or b is UNKNOWN


def tensor_roots(values: Sequence[SSAValue]) -> set[object]:
    """The alias roots of the tensors among `values`."""
    return {alias_root(v) for v in values if isinstance(v.type, TensorType)}


def written(op: Operation) -> Sequence[SSAValue]:
    """The tensors `op` writes in place: an `aten.copy_`'s destination, a
    `foreach` write's destinations."""
    if isinstance(op, CopyOp):
        return (op.dst,)
    if isinstance(op, ForeachCopyOp | ForeachAddOp):
        return tuple(op.dsts)
    return ()


def written_between(first: Operation, last: Operation, values: set[object]) -> bool:
    """Does a write (`written`) after `first` and before `last` (same block) write a
    tensor that may share memory with one of the alias roots `values`? A rewrite
    that moves work from one of them to the other would read the tensor on the
    wrong side of the write:

        %g = aten.gelu %x ; aten.copy_ %x, %n ; aten.chunk %g   (gelu must stay first)
    """
    op = first.next_op
    while op is not None and op is not last:
        if any(may_alias(alias_root(d), r) for d in written(op) for r in values):
            return True
        op = op.next_op
    return False
