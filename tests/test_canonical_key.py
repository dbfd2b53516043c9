"""Canonical keys: alpha-equivalent groups share a key, anything else does not
(the seeds' testRegisterFusionCachesKernel, both ways)."""

from __future__ import annotations

import pytest
from fusec.dialects.aten import Aten
from fusec.dialects.fusion import Fusion, GroupOp
from fusec.passes.canonical import CanonicalKey, canonical_key
from fusec.passes.fuse import FusePass
from xdsl.context import Context
from xdsl.dialects.arith import Arith
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.dialects.func import Func
from xdsl.parser import Parser


def _ctx() -> Context:
    ctx = Context()
    for d in (Builtin, Func, Arith, Aten, Fusion):
        ctx.load_dialect(d)
    return ctx


def _group(
    c: str, d: str, shape: str = "2x3x4", dtype: str = "f32", op: str = "mul", extra: str = ""
) -> GroupOp:
    t = f"tensor<{shape}x{dtype}>"
    src = f"""
    func.func @f(%a: {t}, %b: {t}) -> {t} {{
      %{c} = aten.mul %a, %b{extra} : {t}, {t} -> {t}
      %{d} = aten.{op} %{c}, %a : {t}, {t} -> {t}
      func.return %{d} : {t}
    }}"""
    module = Parser(_ctx(), src).parse_module()
    FusePass().apply(_ctx(), module)
    module.verify()
    groups = [g for g in module.walk() if isinstance(g, GroupOp)]
    assert len(groups) == 1, "FuseGraph should make one group"
    return groups[0]


def test_alpha_equivalent_groups_share_a_key() -> None:
    k1 = canonical_key(_group("c1", "d1"))
    k2 = canonical_key(_group("c2", "d2"))
    assert isinstance(k1, CanonicalKey)
    assert k1 == k2
    assert len(k1.digest) == 64 and int(k1.digest, 16) >= 0


def test_sizes_other_than_one_are_erased() -> None:
    assert canonical_key(_group("c", "d", "2x3x4")) == canonical_key(_group("x", "y", "7x5x9"))
    assert "tensor<?x?x?xf32>" in canonical_key(_group("c", "d")).text


@pytest.mark.parametrize(
    "change",
    [
        {"op": "add"},  # another op
        {"dtype": "f64"},  # another dtype
        {"shape": "2x3"},  # another rank
        {"shape": "2x1x4"},  # another broadcast pattern
    ],
)
def test_differences_give_different_keys(change: dict[str, str]) -> None:
    base = canonical_key(_group("c", "d"))
    other = canonical_key(_group("c", "d", **change))
    assert base != other
    assert base.digest != other.digest


def test_attributes_are_part_of_the_key() -> None:
    t = "tensor<4xf32>"
    src = f"""
    func.func @f(%a: {t}, %b: {t}) -> ({t}, {t}) {{
      %0 = aten.add %a, %b alpha = 2 : i64 : {t}, {t} -> {t}
      %1 = aten.neg %0 : {t} -> {t}
      %2 = aten.add %a, %b alpha = 3 : i64 : {t}, {t} -> {t}
      %3 = aten.neg %2 : {t} -> {t}
      func.return %1, %3 : {t}, {t}
    }}"""
    module: ModuleOp = Parser(_ctx(), src).parse_module()
    FusePass().apply(_ctx(), module)
    keys = [canonical_key(g) for g in module.walk() if isinstance(g, GroupOp)]
    assert len(keys) == 2
    assert keys[0] != keys[1]
