"""`share-group-kernels`: groups that are one kernel but for a boundary become that kernel.

The kernel cache already shares one kernel among alpha-equivalent groups (the
seeds' `normalizeGraphForCache`). An unrolled loop has steps that are *almost*
alpha-equivalent: the first and last steps see no neighbour on one side. In an
LSTM unrolled over T steps, the last forward step yields no cell state for a
next one, the last backward step gets no cell-state gradient from a later step,
and the first backward step returns no gradient for the initial cell state,
which needs none. Each such boundary would compile a kernel of its own. Two
rewrites, both exact, make the boundary groups the common kernel:

Unused outputs. Groups whose bodies are alpha-equivalent but yield different
values all yield the union of those values (in one order, the first group's
first); a group writes the outputs nobody reads to buffers that die at once:

    %a:2 = fusion.group (%x = %p) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
      %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
      fusion.yield %1, %0 : tensor<4xf32>, tensor<4xf32>
    }
    %b = fusion.group (%x = %q) : (tensor<4xf32>) -> (tensor<4xf32>) {
      %0 = aten.exp %x : tensor<4xf32> -> tensor<4xf32>
      %1 = aten.neg %0 : tensor<4xf32> -> tensor<4xf32>
      fusion.yield %1 : tensor<4xf32>
    }
    ->
    %b:2 = fusion.group (%x = %q) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
      ...
      fusion.yield %1, %0 : tensor<4xf32>, tensor<4xf32>
    }

Zero inputs. A group that equals another group with one input, or the two
operands of one `aten.mul`, set to zero (after folding `0 * 0 -> 0`, `-0 -> 0`,
`x + 0 -> x`, `0 + x -> x`, `x - 0 -> x` and dropping what died) becomes that
group, fed `fusion.zeros_like` for those inputs. The folds are identities on the
inputs the group is then given (only zeros are multiplied by zero), so results
are bit-for-bit what the folded group computes, up to the sign of a zero:

    %g = fusion.group (%d = %dh, %c = %c0) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
      %0 = aten.tanh %d : tensor<4xf32> -> tensor<4xf32>
      %1 = aten.mul %0, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      fusion.yield %1 : tensor<4xf32>
    }
    %h = fusion.group (%d = %dh2, %c = %c1, %n = %dc, %f = %gate) : (...) -> (tensor<4xf32>) {
      %0 = aten.tanh %d : tensor<4xf32> -> tensor<4xf32>
      %1 = aten.mul %n, %f : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %2 = aten.add %0, %1 : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %3 = aten.mul %2, %c : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      fusion.yield %3 : tensor<4xf32>
    }
    ->
    %z = fusion.zeros_like %dh : tensor<4xf32> -> tensor<4xf32>
    %g = fusion.group (%d = %dh, %c = %c0, %n = %z, %f = %z) : (...) -> (tensor<4xf32>) {
      ... %h's body ...
    }

Only groups of the same function are compared, a group is matched against the
most common kernel first, and a rewrite that would exceed `arg-limit` is not made.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from fusec.dialects.aten import AddOp, MulOp, NegOp, SubOp
from fusec.dialects.fusion import GroupOp, YieldOp, ZerosLikeOp
from fusec.passes.canonical import canonical_text, canonical_text_and_names
from fusec.passes.fusion_utils import DEFAULT_ARG_LIMIT
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, BlockArgument, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import is_side_effect_free

_MAX_ZERO_INPUTS = 2
"""Inputs set to zero at once: one (a missing addend) or a product's two operands
(a missing gradient times the gate it would have met)."""

_MAX_FOLDS = 256
"""Zero-input candidates folded per function at most."""


def _top_groups(fn: func.FuncOp) -> list[GroupOp]:
    """`fn`'s groups, in order (none nests in another after `fuse`)."""
    return [op for op in fn.walk() if isinstance(op, GroupOp)]


# --------------------------------------------------------------------- unused outputs


def _body_text(text: str) -> str:
    """A canonical text without its `fusion.yield` line (the outputs)."""
    return "".join(line for line in text.splitlines(True) if not line.startswith("  fusion.yield("))


def _yield_to(group: GroupOp, values: Sequence[SSAValue]) -> GroupOp:
    """`group` with its body yielding `values` (the results of the old outputs are
    replaced by the new results of the same values)."""
    old = list(group.yield_op.values)
    body = group.detach_region(group.body)
    old_yield = body.block.last_op
    assert isinstance(old_yield, YieldOp)
    Rewriter.replace_op(old_yield, YieldOp(*values))
    new = GroupOp(list(group.inputs), [v.type for v in values], body)
    new.attributes |= group.attributes
    Rewriter.insert_op(new, InsertPoint.before(group))
    for result, value in zip(group.outputs, old, strict=True):
        result.replace_all_uses_with(new.outputs[list(values).index(value)])
    Rewriter.erase_op(group)
    return new


def unify_outputs(groups: list[GroupOp], arg_limit: int) -> list[GroupOp]:
    """Alpha-equivalent bodies yield the union of what each yields; returns the
    groups as they now are."""
    classes: dict[str, list[int]] = {}
    texts = []
    for i, g in enumerate(groups):
        text, names = canonical_text_and_names(g)
        texts.append((names, [names[v] for v in g.yield_op.values]))
        classes.setdefault(_body_text(text), []).append(i)
    out = list(groups)
    for members in classes.values():
        yields = [texts[i][1] for i in members]
        if len(members) < 2 or all(y == yields[0] for y in yields):
            continue
        union = list(dict.fromkeys(itertools.chain.from_iterable(yields)))
        if any(len(groups[i].inputs) + len(union) > arg_limit for i in members):
            continue
        for i in members:
            if texts[i][1] == union:
                continue
            by_name = {n: v for v, n in texts[i][0].items()}
            out[i] = _yield_to(groups[i], [by_name[n] for n in union])
    return out


# --------------------------------------------------------------------- zero inputs


def _folded_text(group: GroupOp, zero_args: set[int]) -> str | None:
    """The canonical text of `group` with its arguments `zero_args` known to be
    zero, folded and with those arguments removed; None when one of them is still
    read. Works on a copy, which is erased (it must not keep uses of the values
    `group` reads)."""
    copy = group.clone()
    try:
        block = copy.body.block
        zero: set[SSAValue] = {block.args[i] for i in zero_args}
        for op in list(block.ops):
            if isinstance(op, MulOp) and op.lhs in zero and op.rhs in zero:
                zero.add(op.result)
            elif isinstance(op, NegOp) and op.operands[0] in zero:
                zero.add(op.results[0])
            elif isinstance(op, AddOp | SubOp) and op.rhs in zero and op.lhs.type == op.result.type:
                op.result.replace_all_uses_with(op.lhs)
                Rewriter.erase_op(op)
            elif (
                isinstance(op, AddOp)
                and op.alpha is None
                and op.lhs in zero
                and op.rhs.type == op.result.type
            ):
                op.result.replace_all_uses_with(op.rhs)
                Rewriter.erase_op(op)
        for op in reversed(list(block.ops)):
            if not isinstance(op, YieldOp) and not any(r.uses for r in op.results):
                if is_side_effect_free(op):
                    Rewriter.erase_op(op)
        if any(block.args[i].uses for i in zero_args):
            return None
        for i in sorted(zero_args, reverse=True):
            block.erase_arg(block.args[i])
        return canonical_text(copy)
    finally:
        copy.erase()


def _zero_candidates(group: GroupOp, drop: int) -> Iterable[set[int]]:
    """Sets of `drop` arguments worth trying as zeros: an argument read only by
    the ops that fold, or the two arguments of one `aten.mul`."""
    foldable = (MulOp, NegOp, AddOp, SubOp)
    args = group.body.block.args
    if drop == 1:
        for a in args:
            if a.uses and all(isinstance(u.operation, foldable) for u in a.uses):
                yield {a.index}
    elif drop == 2:
        seen: set[tuple[int, int]] = set()
        for op in group.body.block.ops:
            if isinstance(op, MulOp) and isinstance(op.lhs, BlockArgument):
                rhs = op.rhs
                if isinstance(rhs, BlockArgument) and rhs is not op.lhs:
                    pair = (min(op.lhs.index, rhs.index), max(op.lhs.index, rhs.index))
                    if pair not in seen:
                        seen.add(pair)
                        yield set(pair)


@dataclass(frozen=True)
class _ZeroMatch:
    kernel: GroupOp
    zero_args: frozenset[int]


def _as_kernel(group: GroupOp, match: _ZeroMatch) -> GroupOp | None:
    """`group` rewritten as `match.kernel` fed zeros, or None when the types of
    its inputs and outputs are not exactly the kernel's (only the canonical,
    size-free types were compared) or no input can model a zero tensor."""
    kernel = match.kernel
    if [r.type for r in kernel.outputs] != [r.type for r in group.outputs]:
        return None
    kept = [a for a in kernel.body.block.args if a.index not in match.zero_args]
    if [a.type for a in kept] != list(group.inputs.types):
        return None
    likes: dict[Attribute, SSAValue] = {}
    for v in group.inputs:
        likes.setdefault(v.type, v)
    if any(kernel.body.block.args[i].type not in likes for i in match.zero_args):
        return None
    zeros: dict[Attribute, SSAValue] = {}
    inputs: list[SSAValue] = []
    given = iter(group.inputs)
    for a in kernel.body.block.args:
        if a.index not in match.zero_args:
            inputs.append(next(given))
            continue
        if a.type not in zeros:
            z = ZerosLikeOp(likes[a.type])
            Rewriter.insert_op(z, InsertPoint.before(group))
            zeros[a.type] = z.result
        inputs.append(zeros[a.type])
    new = GroupOp(inputs, [r.type for r in kernel.outputs], kernel.body.clone())
    new.attributes |= group.attributes
    Rewriter.replace_op(group, new)
    return new


def _op_counts(group: GroupOp) -> Counter[str]:
    return Counter(op.name for op in group.body.block.ops)


def _find_zero_match(
    group: GroupOp, text: str, kernels: list[GroupOp], budget: list[int]
) -> _ZeroMatch | None:
    """The first of `kernels` that is `group` with some inputs zero. Folding only
    removes ops, so a kernel lacking one of `group`'s ops is not tried; `budget`
    bounds the folds tried in one function (the pass stays near-linear)."""
    ops = _op_counts(group)
    for kernel in kernels:
        drop = len(kernel.inputs) - len(group.inputs)
        if not 1 <= drop <= _MAX_ZERO_INPUTS:
            continue
        have = _op_counts(kernel)
        if have == ops or any(have[name] < n for name, n in ops.items()):
            continue
        for zero_args in _zero_candidates(kernel, drop):
            if budget[0] <= 0:
                return None
            budget[0] -= 1
            if _folded_text(kernel, zero_args) == text:
                return _ZeroMatch(kernel, frozenset(zero_args))
    return None


def share_zero_inputs(groups: list[GroupOp]) -> None:
    """Groups that are another group with some inputs zero become that group."""
    classes: dict[str, list[GroupOp]] = {}
    for g in groups:
        classes.setdefault(canonical_text(g), []).append(g)
    if len(classes) < 2:
        return
    # Most common kernel first: boundary steps join the loop body's kernel.
    order = sorted(classes.items(), key=lambda kv: -len(kv[1]))
    rewritten: set[str] = set()
    budget = [_MAX_FOLDS]
    for text, members in reversed(order):
        kernels = [m[0] for t, m in order if t != text and t not in rewritten]
        match = _find_zero_match(members[0], text, kernels, budget)
        if match is None:
            continue
        rewritten.add(text)
        for g in members:
            _as_kernel(g, match)


@dataclass(frozen=True)
class ShareGroupKernelsPass(ModulePass):
    """Make boundary groups of a repeated kernel that kernel (see the module docstring).

    fusec-opt -p 'fuse,share-group-kernels' model.mlir
    """

    name = "share-group-kernels"

    arg_limit: int = field(default=DEFAULT_ARG_LIMIT)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [f for f in op.walk() if isinstance(f, func.FuncOp)]:
            groups = _top_groups(fn)
            if len(groups) < 2:
                continue
            groups = unify_outputs(groups, self.arg_limit)
            share_zero_inputs(groups)
