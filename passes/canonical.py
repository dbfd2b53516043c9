"""Canonical keys of fusion groups: alpha-equivalent groups share one kernel.

A key renames every value by position (`%a0..` for inputs, `%0..` for results),
drops value names, and keeps of each tensor type only its rank, dtype and which
dims are 1 (they broadcast); other sizes print as `?`, since one kernel serves
every shape of a broadcast pattern. Ops, properties, attributes and types are
printed in a fixed order. The seeds' `normalizeGraphForCache` (Canonicalize +
EraseShapeInformation) is the model. Where an op's lowering builds sizes of
its types into the kernel (a lookup's table rows and row length, a view's
target sizes: `SIZED_OPERANDS`, `SIZED_RESULTS`), those types keep every
size: kernels of other sizes must not share their entry.

    fusion.group (%x = %a) : (tensor<8x1xf32>) -> (tensor<8x1xf32>) {
      %0 = aten.neg %x : tensor<8x1xf32> -> tensor<8x1xf32>
      fusion.yield %0 : tensor<8x1xf32>
    }
    key text:
    (%a0: tensor<?x1xf32>) {
      %0 = aten.neg(%a0) : (tensor<?x1xf32>) -> (tensor<?x1xf32>)
      yield(%0)
    }
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from io import StringIO

from fusec.dialects.fusion import GroupOp
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.printer import Printer

KEY_ATTR = "fusion.key"
"""Group attribute the `print-canonical-keys` pass writes; never part of a key."""


@dataclass(frozen=True)
class CanonicalKey:
    """A group's canonical text and its sha256 (hex) digest."""

    text: str
    digest: str


SIZED_OPERANDS: dict[str, tuple[int, ...]] = {"aten.embedding": (0,)}
"""Per op, the operands whose sizes its kernel code depends on, not only on
which are 1: `aten.embedding` bakes its table's rows (the range check) and row
length (the row offset) into the loop (`fusec.passes.lowering.gather`). A
table of 100 x 32 and one of 1000 x 128 sharing one kernel read rows 32 apart
in the larger table."""

SIZED_RESULTS = frozenset({"aten.view", "aten.reshape", "aten.split"})
"""Ops whose result sizes their kernel code depends on: a view of a group
input bakes its target sizes into the operand's view chain
(`fusec.passes.lowering.kernel_args.view_step`)."""


def has_sized_kernels(module: Operation) -> bool:
    """Whether a group of `module` holds an op of `SIZED_OPERANDS` or
    `SIZED_RESULTS`: its program must not serve other sizes (its kernels' keys
    hold these sizes)."""
    return any(
        op.name in SIZED_OPERANDS or op.name in SIZED_RESULTS
        for group in module.walk()
        if isinstance(group, GroupOp)
        for op in group.body.walk()
    )


def canonical_type(t: Attribute, sized: bool = False) -> str:
    """`tensor<8x1x3xf32>` -> `tensor<?x1x?xf32>` (`tensor<8x1x3xf32>` when
    `sized`); other types print as they are."""
    if isinstance(t, TensorType):
        dims = [str(d) if sized or d == 1 else "?" for d in t.get_shape()]
        return "tensor<" + "".join(d + "x" for d in dims) + _attr(t.get_element_type()) + ">"
    return _attr(t)


def _attr(a: Attribute) -> str:
    out = StringIO()
    Printer(stream=out).print_attribute(a)
    return out.getvalue()


class _Namer:
    def __init__(self) -> None:
        self.names: dict[SSAValue, str] = {}
        self.n_results = 0

    def arg(self, v: SSAValue, i: int) -> str:
        self.names[v] = f"%a{i}"
        return self.names[v]

    def result(self, v: SSAValue) -> str:
        self.names[v] = f"%{self.n_results}"
        self.n_results += 1
        return self.names[v]


def _print_block(block: Block, namer: _Namer, out: list[str], indent: str) -> None:
    for op in block.ops:
        _print_op(op, namer, out, indent)


def _print_op(op: Operation, namer: _Namer, out: list[str], indent: str) -> None:
    operands = ", ".join(namer.names[v] for v in op.operands)
    results = ", ".join(namer.result(r) for r in op.results)
    props = {**op.properties, **{k: v for k, v in op.attributes.items() if k != KEY_ATTR}}
    attrs = ", ".join(f"{k} = {_attr(props[k])}" for k in sorted(props))
    sized = SIZED_OPERANDS.get(op.name, ())
    in_types = ", ".join(canonical_type(v.type, i in sized) for i, v in enumerate(op.operands))
    out_sized = op.name in SIZED_RESULTS
    out_types = ", ".join(canonical_type(r.type, out_sized) for r in op.results)
    head = f"{results} = " if results else ""
    out.append(f"{indent}{head}{op.name}({operands}) {{{attrs}}} : ({in_types}) -> ({out_types})")
    for region in op.regions:
        out.append(f"{indent}region {{")
        for block in region.blocks:
            args = ", ".join(f"{namer.result(a)}: {canonical_type(a.type)}" for a in block.args)
            out.append(f"{indent}  ^({args}):")
            _print_block(block, namer, out, indent + "    ")
        out.append(f"{indent}}}")


def canonical_text(group: GroupOp) -> str:
    """The group's body, renamed and stripped of sizes (see the module docstring)."""
    return canonical_text_and_names(group)[0]


def canonical_text_and_names(group: GroupOp) -> tuple[str, dict[SSAValue, str]]:
    """`canonical_text(group)` and the canonical name (`%a0`, `%3`) it gives each
    value of the body, so passes can relate the values of alpha-equivalent groups."""
    namer = _Namer()
    args = ", ".join(
        f"{namer.arg(a, i)}: {canonical_type(a.type)}" for i, a in enumerate(group.body.block.args)
    )
    out = [f"({args}) {{"]
    _print_block(group.body.block, namer, out, "  ")
    out.append("}")
    return "\n".join(out) + "\n", namer.names


def canonical_key(group: GroupOp) -> CanonicalKey:
    """The stable key of `group`: equal for groups that differ only in value names
    and non-1 sizes, different for any other difference."""
    text = canonical_text(group)
    return CanonicalKey(text, hashlib.sha256(text.encode()).hexdigest())
