"""Where the fusion graph's nodes, group boxes and edges go (`fusec.observability.graph_layout`
does the ordering and x placement):

    arg:x                      layers: inputs sit just above their first reader,
      |                        a group spans as many layers as its ops' longest
    +-group_0---------+        path, every other op one; each group is laid out
    | aten.sigmoid    |        first (its ops, plus dummies for the tensors that
    |   |        .    |        cross its rows, enter at its top or leave at its
    | aten.mul  .     |        bottom), then placed as one wide box, so no edge
    +-----|-----|-----+        crosses a group it does not enter and no node is
      aten.mm   |              inside a box it is not in. An edge longer than one
          |     |              layer runs through a dummy per layer, which the
        result 0  result 1     placement keeps out of every node.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fusec.observability.graph_layout import Box, Link, place

if TYPE_CHECKING:
    from fusec.observability.explanation import GraphReport

NODE_W, NODE_H, ARG_W, DUMMY_W = 176, 34, 130, 6
GAP_X, GAP_Y, PAD, TITLE, MARGIN = 20, 44, 8, 20, 16
TITLE_W = 284
"""The narrowest group box: room for its title line."""
PITCH = NODE_H + GAP_Y


@dataclass
class Drawing:
    """Absolute geometry: node centres by id (ops, `arg:*`, `result:<k>`), group
    boxes (x, y, w, h) by name, and one path per tensor edge."""

    nodes: dict[str, tuple[float, float]] = field(default_factory=dict)
    widths: dict[str, float] = field(default_factory=dict)
    groups: dict[str, tuple[float, float, float, float]] = field(default_factory=dict)
    edges: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    """(from, to, the group both ends are in or None, SVG path)."""
    width: float = 0.0
    height: float = 0.0


def layout(report: GraphReport) -> Drawing:
    """The whole graph's geometry (see the module doc)."""
    owner: dict[str, str] = {}
    depth: dict[str, int] = {}
    members: dict[str, list[str]] = {g.name: [] for g in report.groups}
    edges: list[tuple[str, str]] = []
    for op in report.ops:
        owner[op.id] = op.group or op.id
        if op.group is not None:
            inside = [i for i in op.inputs if owner.get(i) == op.group]
            depth[op.id] = 1 + max((depth[i] for i in inside), default=-1)
            members[op.group].append(op.id)
        else:
            depth[op.id] = 0
        edges += [(i, op.id) for i in op.inputs]
    results = [f"result:{k}" for k in range(len(report.results))]
    edges += list(zip(report.results, results, strict=True))
    for r in results:
        owner[r], depth[r] = r, 0
    span = {g: 1 + max((depth[m] for m in ms), default=0) for g, ms in members.items()}
    # Layers: entities by longest path (args are placed after, above their readers).
    level: dict[str, int] = {}
    entities = list(dict.fromkeys(owner[o.id] for o in report.ops))
    preds: dict[str, set[str]] = defaultdict(set)
    for src, dst in edges:
        if src in owner and owner[src] != owner[dst]:
            preds[owner[dst]].add(owner[src])
    for e in entities:
        level[e] = max((level[p] + span.get(p, 1) for p in preds[e]), default=1)
    last = max((level[e] + span.get(e, 1) for e in entities), default=1)
    for r in results:
        level[r] = last
    for a in report.args:
        readers = [level[owner[d]] for s, d in edges if s == a]
        level[a] = max(0, min(readers, default=1) - 1)
        owner[a], depth[a] = a, 0

    def bottom(entity: str) -> int:
        return level[entity] + span.get(entity, 1) - 1

    readers: dict[str, list[str]] = defaultdict(list)
    for src, dst in edges:
        readers[src].append(dst)
    inner = {g: _group_inside(g, ms, span[g], readers, owner, depth) for g, ms in members.items()}
    # The top level: entities, and a dummy per layer a tensor crosses between them.
    boxes: dict[str, Box] = {}
    for e in [*report.args, *entities, *results]:
        width = inner[e][1] if e in inner else (ARG_W if e.startswith("arg:") else NODE_W)
        boxes[e] = Box(e, level[e], width, span.get(e, 1))
    links: list[Link] = []

    def port(node: str, entity: str, row: int) -> tuple[str, float]:
        """The top-level box and x offset of `node` (or its dummy at `row`)."""
        if entity in inner:
            offsets = inner[entity][0]
            key = node if node in offsets and depth[node] == row else f"{entity}|{node}|{row}"
            return entity, offsets[key]
        return entity, boxes[entity].width / 2

    for src, dsts in readers.items():
        home = owner[src]
        outside = [d for d in dsts if owner[d] != home]
        if not outside:
            continue
        out_box, out_at = port(src, home, span.get(home, 1) - 1)
        tops = [level[owner[d]] for d in outside]
        prev, prev_at = out_box, out_at
        for layer in range(bottom(home) + 1, max(tops)):
            dummy = f"~{src}|{layer}"
            boxes[dummy] = Box(dummy, layer, DUMMY_W, dummy=True)
            links.append(Link(prev, dummy, prev_at, DUMMY_W / 2))
            prev, prev_at = dummy, DUMMY_W / 2
        entered: set[tuple[str, str]] = set()
        for d in outside:
            top = level[owner[d]]
            above = out_box if top == bottom(home) + 1 else f"~{src}|{top - 1}"
            above_at = out_at if above == out_box else DUMMY_W / 2
            box, at = port(d if depth[d] == 0 else src, owner[d], 0)
            if (above, f"{box}@{at}") not in entered:
                entered.add((above, f"{box}@{at}"))
                links.append(Link(above, box, above_at, at))
    place(list(boxes.values()), links, GAP_X)
    return _geometry(report, boxes, inner, owner, depth, level, span, edges)


def _group_inside(
    group: str,
    ops: list[str],
    rows: int,
    readers: dict[str, list[str]],
    owner: dict[str, str],
    depth: dict[str, int],
) -> tuple[dict[str, float], float]:
    """A group's own layout: each member's (and dummy's) centre offset from the
    box's left edge, and the box's width. Dummies `<group>|<source>|<row>` carry
    a tensor down the rows it crosses: from a member to a deeper reader, from
    the top to a reader below the first row, from a member to the bottom edge."""
    boxes = [Box(o, depth[o], NODE_W) for o in ops]
    links: list[Link] = []
    sources: dict[str, list[str]] = defaultdict(list)
    for src, dsts in readers.items():
        for d in dsts:
            if owner[d] == group:
                sources[src].append(d)
    for o in ops:
        if any(owner[d] != group for d in readers.get(o, [])):
            sources.setdefault(o, [])
    for src, dsts in sources.items():
        first = depth[src] + 1 if owner.get(src) == group else 0
        leaves = owner.get(src) == group and any(owner[d] != group for d in readers[src])
        end = max([depth[d] - 1 for d in dsts] + ([rows - 1] if leaves else []), default=-1)
        chain = {r: f"{group}|{src}|{r}" for r in range(first, end + 1)}
        boxes += [Box(name, r, DUMMY_W, dummy=True) for r, name in chain.items()]
        for r in range(first + 1, end + 1):
            links.append(Link(chain[r - 1], chain[r], DUMMY_W / 2, DUMMY_W / 2))
        if chain and owner.get(src) == group:
            links.append(Link(src, chain[first], NODE_W / 2, DUMMY_W / 2))
        for d in dsts:
            above = chain.get(depth[d] - 1, src)
            if above in chain.values() or owner.get(src) == group:
                width = DUMMY_W if above in chain.values() else NODE_W
                links.append(Link(above, d, width / 2, NODE_W / 2))
    place(boxes, links, GAP_X)
    width = max((b.x + b.width for b in boxes), default=NODE_W)
    shift = PAD + max(0.0, (TITLE_W - width) / 2)
    return {b.id: b.x + shift + b.width / 2 for b in boxes}, max(width, TITLE_W) + 2 * PAD


def _geometry(
    report: GraphReport,
    boxes: dict[str, Box],
    inner: dict[str, tuple[dict[str, float], float]],
    owner: dict[str, str],
    depth: dict[str, int],
    level: dict[str, int],
    span: dict[str, int],
    edges: list[tuple[str, str]],
) -> Drawing:
    """The boxes' places as page coordinates, and every edge's path."""
    drawing = Drawing()

    def y_of(layer: int) -> float:
        return MARGIN + TITLE + layer * PITCH + NODE_H / 2

    for name, (offsets, width) in inner.items():
        box = boxes[name]
        top, low = y_of(box.layer) - NODE_H / 2, y_of(box.bottom) + NODE_H / 2
        drawing.groups[name] = (
            box.x + MARGIN,
            top - PAD - TITLE,
            width,
            low - top + 2 * PAD + TITLE,
        )
        for key, at in offsets.items():
            row = depth[key] if key in depth and owner[key] == name else int(key.rsplit("|", 1)[1])
            drawing.nodes[key] = (box.x + MARGIN + at, y_of(box.layer + row))
    for key, box in boxes.items():
        if key not in inner:
            drawing.nodes[key] = (box.x + MARGIN + box.width / 2, y_of(box.layer))
            drawing.widths[key] = box.width
    for src, dst in edges:
        home, there = owner[src], owner[dst]
        points = [src]
        if home == there:
            points += [f"{home}|{src}|{r}" for r in range(depth[src] + 1, depth[dst])]
        else:
            if home in inner:
                points += [f"{home}|{src}|{r}" for r in range(depth[src] + 1, span[home])]
            start = level[home] + span.get(home, 1)
            points += [f"~{src}|{layer}" for layer in range(start, level[there])]
            if there in inner:
                points += [f"{there}|{src}|{r}" for r in range(0, depth[dst])]
        points.append(dst)
        path = _path([drawing.nodes[p] for p in points], points)
        drawing.edges.append((src, dst, home if home == there and home in inner else None, path))
    rights = [x + drawing.widths.get(k, NODE_W) / 2 for k, (x, _) in drawing.nodes.items()]
    rights += [x + w for x, _, w, _ in drawing.groups.values()]
    drawing.width = max(rights, default=0.0) + MARGIN
    drawing.height = max((y for _, y in drawing.nodes.values()), default=0) + NODE_H / 2 + MARGIN
    return drawing


def _path(centres: list[tuple[float, float]], names: list[str]) -> str:
    """Down from the first node's bottom through each dummy (a vertical run
    across its row) to the last node's top, with a curve between rows."""
    half = NODE_H / 2
    x, y = centres[0][0], centres[0][1] + half
    out = [f"M{x:.1f},{y:.1f}"]
    for (cx, cy), name in zip(centres[1:], names[1:], strict=False):
        top = cy - half
        mid = (y + top) / 2
        out.append(f"C{x:.1f},{mid:.1f} {cx:.1f},{mid:.1f} {cx:.1f},{top:.1f}")
        x, y = cx, cy + half
        if "|" in name:  # a dummy: straight down its row
            out.append(f"L{x:.1f},{y:.1f}")
    return " ".join(out)
