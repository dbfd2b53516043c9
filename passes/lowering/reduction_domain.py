"""Where reductions may join a `fusion.group`: the *domain* of a reduction is the
shape of its input and the dims it reduces. A group's kernel loops over one domain
(kept dims outside, reduced dims inside), so `fuse` keeps each group to at most one
domain, and every value of the group must fit it (broadcast to its shape):

    %m = aten.amax %x dims = [1] keepdim = true : tensor<4x8xf32> -> tensor<4x1xf32>
    %d = aten.sub %x, %m : tensor<4x8xf32>, tensor<4x1xf32> -> tensor<4x8xf32>
    // one group: domain (4x8, dims [1]); %m is a *row* value, %d a full one
"""

from __future__ import annotations

from dataclasses import dataclass

from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.fusion import GroupOp
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType
from xdsl.ir import Attribute, Block, Operation
from xdsl.traits import is_side_effect_free


def is_reduction(op: Operation) -> bool:
    return op.has_trait(aten.Reduction)


def reduced_dims(op: Operation) -> tuple[int, ...]:
    """The dims `op` reduces, normalized and sorted (all dims when none are listed)."""
    t = op.operands[0].type
    assert isinstance(t, TensorType)
    rank = t.get_num_dims()
    attr = op.properties.get("dims")
    given = list(attr.get_values()) if isinstance(attr, DenseArrayBase) else []
    if not given:
        return tuple(range(rank))
    return tuple(sorted({inf.normalize_dim(d, rank) for d in given}))


def keeps_dims(op: Operation) -> bool:
    attr = op.properties.get("keepdim")
    return isinstance(attr, IntegerAttr) and bool(attr.value.data)


def is_fusible_reduction(op: Operation) -> bool:
    """A reduction a group can hold: dims kept (so its result broadcasts back over the
    domain; `decompose-reductions` rewrites the others) over a tensor of rank >= 1."""
    if not is_reduction(op) or not keeps_dims(op) or not is_side_effect_free(op):
        return False
    t = op.operands[0].type
    return isinstance(t, TensorType) and t.get_num_dims() >= 1


@dataclass(frozen=True)
class Domain:
    """The index space a reduction group loops over and the dims it reduces."""

    shape: tuple[int, ...]
    dims: tuple[int, ...]

    def is_row(self, t: Attribute) -> bool:
        """A value of type `t` is the same at every index of the reduced dims."""
        if not isinstance(t, TensorType):
            return True
        shape = tuple(t.get_shape())
        lead = len(self.shape) - len(shape)
        return all(d < lead or shape[d - lead] == 1 for d in self.dims)

    def fits(self, shape: tuple[int, ...]) -> bool:
        """`shape` broadcasts to the domain's shape without growing it."""
        lead = len(self.shape) - len(shape)
        return lead >= 0 and all(s in (1, self.shape[lead + i]) for i, s in enumerate(shape))


def domain_of(op: Operation) -> Domain:
    t = op.operands[0].type
    assert isinstance(t, TensorType)
    return Domain(tuple(t.get_shape()), reduced_dims(op))


@dataclass(frozen=True)
class FusionShape:
    """What `fuse` needs to know of an op or group: its reduction domain (if any) and
    the broadcast of the shapes of the values it computes."""

    domain: Domain | None
    space: tuple[int, ...] | None

    def join(self, other: FusionShape) -> FusionShape | None:
        """The shape of both in one group, or None where they cannot share a kernel."""
        if self.domain and other.domain and self.domain != other.domain:
            return None
        domain = self.domain or other.domain
        try:
            space = (
                None
                if self.space is None or other.space is None
                else inf.broadcast_shapes(self.space, other.space)
            )
        except Exception:  # noqa: BLE001 - shapes that do not broadcast: no common space
            space = None
        if domain is None:
            return FusionShape(None, space)
        if space is None or not domain.fits(tuple(space)):
            return None
        return FusionShape(domain, domain.shape)


def _op_shape(op: Operation) -> FusionShape:
    shapes = [tuple(r.type.get_shape()) for r in op.results if isinstance(r.type, TensorType)]
    domain = domain_of(op) if is_fusible_reduction(op) else None
    if domain is not None:
        shapes.append(domain.shape)
    try:
        space = inf.broadcast_shapes(*shapes) if shapes else ()
    except Exception:  # noqa: BLE001 - a shape op's results need not broadcast
        return FusionShape(domain, None)
    return FusionShape(domain, tuple(space))


def fusion_shape(op: Operation, cache: dict[Operation, FusionShape]) -> FusionShape | None:
    """`op`'s `FusionShape`, groups scanned once and then kept up to date by `fuse`."""
    if not isinstance(op, GroupOp):
        return _op_shape(op)
    shape = cache.get(op)
    if shape is None:
        shape = FusionShape(None, ())
        for inner in op.body.block.ops:
            if isinstance(inner, GroupOp):
                continue
            joined = shape.join(_op_shape(inner))
            if joined is None:
                return None
            shape = joined
        cache[op] = shape
    return shape


def body_domain(body: Block) -> Domain | None:
    """The one domain of the reductions in a group body (None: no reductions)."""
    domains = {domain_of(op) for op in body.ops if is_reduction(op)}
    if not domains:
        return None
    if len(domains) > 1:
        from xdsl.utils.exceptions import DiagnosticException

        raise DiagnosticException(
            "lower-group-to-loops: the reductions of one group must reduce the same dims "
            "of the same shape"
        )
    return domains.pop()
