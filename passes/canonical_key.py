"""`print-canonical-keys`: annotate each `fusion.group` with its canonical key.

The key (`fusec.passes.canonical.canonical_key`) is the sha256 of the group renamed and
stripped of sizes, so alpha-equivalent groups get the same `fusion.key`:

    %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) { ... }
    ->
    %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>)
        attributes {fusion.key = "3f2a..."} { ... }

With `text=true` the canonical text goes into `fusion.key_text` as well.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fusec.dialects.fusion import GroupOp
from fusec.passes.canonical import KEY_ATTR, canonical_key
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

KEY_TEXT_ATTR = "fusion.key_text"


@dataclass
class AnnotateGroupWithKey(RewritePattern):
    """`fusion.group ... { }` -> `fusion.group ... attributes {fusion.key = "<sha256>"} { }`."""

    with_text: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: GroupOp, rewriter: PatternRewriter) -> None:
        key = canonical_key(op)
        if op.attributes.get(KEY_ATTR) == StringAttr(key.digest):
            return
        op.attributes[KEY_ATTR] = StringAttr(key.digest)
        if self.with_text:
            op.attributes[KEY_TEXT_ATTR] = StringAttr(key.text)
        rewriter.notify_op_modified(op)


@dataclass(frozen=True)
class PrintCanonicalKeysPass(ModulePass):
    """Annotate every group with `fusion.key` (and `fusion.key_text` with `text=true`).

    fusec-opt -p 'fuse,print-canonical-keys' model.mlir
    """

    name = "print-canonical-keys"

    text: bool = field(default=False)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            AnnotateGroupWithKey(self.text), apply_recursively=False
        ).rewrite_module(op)
