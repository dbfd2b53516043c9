"""Broadcasting of shapes in plain Python, shared by the runtime (a kernel's
index space, per call) and the `aten` dialect's verifiers (result types, with
dynamic sizes); it imports neither torch nor xDSL, so a warm start stays
without the compiler:

    broadcast_shapes([(4, 1), (3,)])                # (4, 3)
    broadcast_shapes([(-1, 1), (1, 4)], unknown=-1)  # (-1, 4): `?` broadcasts like a size not 1
    broadcast_shapes([(4,), (3,)])                  # ShapesDoNotBroadcast: dimension 0 is 4 and 3
"""

from __future__ import annotations

from collections.abc import Sequence


class ShapesDoNotBroadcast(ValueError):
    """Two sizes of one dimension differ and neither is 1 (nor unknown)."""

    def __init__(self, shapes: Sequence[Sequence[int]], dim: int, size: int, other: int):
        self.shapes = [tuple(s) for s in shapes]
        self.dim, self.size, self.other = dim, size, other
        super().__init__(
            f"shapes {self.shapes} cannot be broadcast (dimension {dim} is {size} and {other})"
        )


def broadcast_shapes(
    shapes: Sequence[Sequence[int]], unknown: int | None = None
) -> tuple[int, ...]:
    """`torch.broadcast_shapes` (several times cheaper here, where the runtime
    calls it per kernel call). A size equal to `unknown` (the IR's dynamic size)
    is one that is not known to be 1: a known size beside it is the result's,
    and two unknown sizes give an unknown one."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int] = []
    for i in range(rank):
        size = 1
        for s in shapes:
            j = i - (rank - len(s))
            if j < 0:
                continue
            d = s[j]
            if d == 1:
                continue
            if size == 1 or size == unknown:
                size = d
            elif d != size and d != unknown:
                raise ShapesDoNotBroadcast(shapes, i, size, d)
        out.append(size)
    return tuple(out)
