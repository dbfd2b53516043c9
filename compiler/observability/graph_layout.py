"""A layered (Sugiyama-style) placement, with no library: the fusion graph's layout.

The caller has already put every box in a layer (longest path) and broken every
edge longer than one layer into a chain of dummy boxes, one per layer crossed,
so every link joins a box to one in the next layer. `place` then orders each
layer and gives each box its x:

    layer 0:   [x]        [w]                 boxes, in layers; a cluster
    layer 1:   [ cluster ][.]                 spans several layers, a dummy
    layer 2:   [ cluster ][.]   [mm]          (.) carries a long edge
    layer 3:        [add]

- order: each box's key is the barycentre of where its links end (at the
  linked boxes' port offsets, not their centres), each layer is sorted by key,
  and the ordering with the fewest crossings over the iterations is kept. A
  multi-layer box has one key for all its layers, so two clusters are in the
  same order in every layer they share and left-of constraints form a DAG;
- x: boxes are packed left to right (each at least `gap` right of its left
  neighbour in every layer it occupies), then pulled towards their links'
  ends, within those constraints: dummy chains straighten, nodes sit over their
  inputs.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from collections import defaultdict
from dataclasses import dataclass


@dataclass
class Box:
    """A node, a dummy or a cluster: `span` layers from `layer`, `width` wide."""

    id: str
    layer: int
    width: float
    span: int = 1
    x: float = 0.0
    """Its left edge, once placed."""
    dummy: bool = False
    """A long edge's box in one layer (chains of them are drawn straight)."""

    @property
    def bottom(self) -> int:
        return self.layer + self.span - 1


@dataclass(frozen=True)
class Link:
    """An edge segment from `upper` (its bottom layer) to `lower` (the next
    layer), ending `upper_at` / `lower_at` from each box's left edge."""

    upper: str
    lower: str
    upper_at: float
    lower_at: float


def place(boxes: list[Box], links: list[Link], gap: float, iterations: int = 14) -> None:
    """Order each layer and set every box's `x` (see the module doc)."""
    by_id = {b.id: b for b in boxes}
    layers: dict[int, list[Box]] = defaultdict(list)
    for b in boxes:  # creation order is the first ordering
        for layer in range(b.layer, b.bottom + 1):
            layers[layer].append(b)
    ends: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for link in links:
        ends[link.upper].append((link.lower, link.upper_at, link.lower_at))
        ends[link.lower].append((link.upper, link.lower_at, link.upper_at))
    orders = {k: list(v) for k, v in layers.items()}
    _pack(orders, by_id, gap)
    _balance(orders, by_id, ends, gap)
    best = (_crossings(links, by_id), {b.id: b.x for b in boxes}, orders)
    for _ in range(iterations):
        key = {}
        for b in boxes:
            mine = ends.get(b.id)
            centre = b.x + b.width / 2
            if mine:
                pull = sum(by_id[o].x + o_at - at for o, at, o_at in mine) / len(mine)
                key[b.id] = pull + b.width / 2
            else:
                key[b.id] = centre
        orders = {k: sorted(v, key=lambda b: key[b.id]) for k, v in orders.items()}
        _pack(orders, by_id, gap)
        _balance(orders, by_id, ends, gap)
        crossings = _crossings(links, by_id)
        if crossings < best[0]:
            best = (crossings, {b.id: b.x for b in boxes}, orders)
        if crossings == 0:
            break
    for b in boxes:
        b.x = best[1][b.id]
    _straighten(best[2], by_id, links, gap)
    left = min((b.x for b in boxes), default=0.0)
    for b in boxes:
        b.x -= left


def _neighbours(
    orders: dict[int, list[Box]],
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Each box's left and right neighbours over the layers it occupies."""
    lefts: dict[str, set[str]] = defaultdict(set)
    rights: dict[str, set[str]] = defaultdict(set)
    for row in orders.values():
        for a, b in zip(row, row[1:], strict=False):
            if a.id != b.id:
                lefts[b.id].add(a.id)
                rights[a.id].add(b.id)
    return lefts, rights


def _left_to_right(orders: dict[int, list[Box]], by_id: dict[str, Box]) -> list[Box]:
    """Every box after its left neighbours (Kahn's order on the left-of DAG; a
    box left in a cycle, which consistent keys do not make, goes last)."""
    lefts, rights = _neighbours(orders)
    waiting = {i: len(lefts[i]) for i in by_id}
    ready = [i for i, n in waiting.items() if n == 0]
    out: list[Box] = []
    while ready:
        i = ready.pop()
        out.append(by_id[i])
        for r in rights[i]:
            waiting[r] -= 1
            if waiting[r] == 0:
                ready.append(r)
    seen = {b.id for b in out}
    return out + [b for i, b in by_id.items() if i not in seen]


def _pack(orders: dict[int, list[Box]], by_id: dict[str, Box], gap: float) -> None:
    lefts, _ = _neighbours(orders)
    for b in _left_to_right(orders, by_id):
        b.x = max((by_id[a].x + by_id[a].width + gap for a in lefts[b.id]), default=0.0)


def _balance(
    orders: dict[int, list[Box]],
    by_id: dict[str, Box],
    ends: dict[str, list[tuple[str, float, float]]],
    gap: float,
    passes: int = 8,
) -> None:
    lefts, rights = _neighbours(orders)
    sequence = _left_to_right(orders, by_id)
    for p in range(passes):
        for b in sequence if p % 2 else reversed(sequence):
            mine = ends.get(b.id)
            if not mine:
                continue
            want = sum(by_id[o].x + o_at - at for o, at, o_at in mine) / len(mine)
            lo = max((by_id[a].x + by_id[a].width + gap for a in lefts[b.id]), default=-1e9)
            hi = min((by_id[c].x - gap - b.width for c in rights[b.id]), default=1e9)
            b.x = min(max(want, lo), hi) if lo <= hi else lo


def _straighten(
    orders: dict[int, list[Box]], by_id: dict[str, Box], links: list[Link], gap: float
) -> None:
    """Each chain of dummies at one x where its neighbours leave room: a long
    edge is then a straight line, not a wave."""
    lefts, rights = _neighbours(orders)
    below = {k.upper: k.lower for k in links if by_id[k.upper].dummy and by_id[k.lower].dummy}
    heads = set(below) - set(below.values())
    for head in heads:
        chain = [by_id[head]]
        while chain[-1].id in below:
            chain.append(by_id[below[chain[-1].id]])
        # Runs as long as the room left in each layer allows: a straight line,
        # bent only where it must pass another chain.
        runs: list[tuple[list[Box], float, float]] = []
        for b in chain:
            lo = max((by_id[a].x + by_id[a].width + gap for a in lefts[b.id]), default=-1e9)
            hi = min((by_id[c].x - gap - b.width for c in rights[b.id]), default=1e9)
            if runs and max(lo, runs[-1][1]) <= min(hi, runs[-1][2]):
                run, rlo, rhi = runs[-1]
                runs[-1] = (run + [b], max(lo, rlo), min(hi, rhi))
            else:
                runs.append(([b], lo, hi))
        for run, lo, hi in runs:
            xs = sorted(b.x for b in run)
            x = min(max(xs[len(xs) // 2], lo), hi)
            for b in run:
                b.x = x


def _crossings(links: list[Link], by_id: dict[str, Box]) -> int:
    """Pairs of links between the same two layers that cross."""
    between: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for link in links:
        up, low = by_id[link.upper], by_id[link.lower]
        between[up.bottom].append((up.x + link.upper_at, low.x + link.lower_at))
    total = 0
    for segments in between.values():
        segments.sort()
        seen: list[float] = []
        for i, (_, lx) in enumerate(segments):
            total += i - bisect_right(seen, lx)
            insort(seen, lx)
    return total
