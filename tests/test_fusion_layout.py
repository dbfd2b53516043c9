"""The fusion graph's layered layout (`fusec.observability.fusion_layout`): on the README
example, a GPT-style block and a stack of blocks past 200 ops, no two nodes
overlap, every op sits inside its own group's box and outside every other,
groups do not overlap, and an edge only runs through a group it enters or
leaves (its dummies, the straight runs across rows, are never inside a node or
a foreign group)."""

from __future__ import annotations

import re

import fusec
import torch
from fusec.observability.fusion_layout import NODE_H, layout
from gpt2_block import Block
from test_explain import readme_cell
from torch import nn

Rect = tuple[float, float, float, float]


def node_rects(report, d) -> dict[str, Rect]:
    return {
        k: (x - d.widths.get(k, 176) / 2, y - NODE_H / 2, d.widths.get(k, 176), NODE_H)
        for k, (x, y) in d.nodes.items()
        if "|" not in k  # dummies are edge waypoints, not nodes
    }


def overlap(a: Rect, b: Rect) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def inside(a: Rect, b: Rect) -> bool:
    return (
        b[0] <= a[0] and a[0] + a[2] <= b[0] + b[2] and b[1] <= a[1] and a[1] + a[3] <= b[1] + b[3]
    )


def check_layout(report) -> None:
    (graph,) = report.graphs
    d = layout(graph)
    nodes = node_rects(graph, d)
    group_of = {o.id: o.group for o in graph.ops}
    assert set(nodes) == {o.id for o in graph.ops} | set(graph.args) | {
        f"result:{k}" for k in range(len(graph.results))
    }
    names = sorted(nodes)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not overlap(nodes[a], nodes[b]), (a, b)
    groups = list(d.groups.items())
    for i, (ga, ra) in enumerate(groups):
        for gb, rb in groups[i + 1 :]:
            assert not overlap(ra, rb), (ga, gb)
    for name, rect in nodes.items():
        for g, box in d.groups.items():
            if group_of.get(name) == g:
                assert inside(rect, box), (name, g)
            else:
                assert not overlap(rect, box), (name, g)
    # Every edge is drawn; the vertical runs through its dummies keep out of
    # every node, and out of every group but the ones it enters or leaves.
    assert len(d.edges) == sum(len(o.inputs) for o in graph.ops) + len(graph.results)
    for src, dst, _, path in d.edges:
        runs = re.findall(r"L([\d.]+),([\d.]+)", path)
        mine = {group_of.get(src), group_of.get(dst)}
        for x, y in runs:
            seg = (float(x) - 0.5, float(y) - NODE_H, 1.0, NODE_H)
            for name, rect in nodes.items():
                assert not overlap(seg, rect), (src, dst, name)
            for g, box in d.groups.items():
                if g not in mine:
                    assert not overlap(seg, box), (src, dst, g)


def test_readme_example_layout():
    check_layout(fusec.explain(readme_cell, torch.randn(8, 64), torch.randn(8, 16)))


def test_gpt_block_layout():
    torch.manual_seed(0)
    with torch.no_grad():
        check_layout(fusec.explain(Block().eval(), torch.randn(2, 16, 32)))


def test_two_hundred_op_graph_layout():
    torch.manual_seed(0)
    model = nn.Sequential(*[Block() for _ in range(5)]).eval()
    with torch.no_grad():
        report = fusec.explain(model, torch.randn(2, 16, 32))
    (graph,) = report.graphs
    assert len(graph.ops) >= 200
    check_layout(report)


def test_random_graphs_layout():
    """Graphs of every shape the random generator makes: views, several groups,
    inputs read at many depths, results that are inputs."""
    from random_graphs import generate

    for seed in range(20):
        g = generate(seed)
        check_layout(fusec.explain(g.fn, *g.inputs(0), use_kernels=False))
