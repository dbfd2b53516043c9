"""`report.save_model_explorer`: fusec's graph for Google's Model Explorer. Every
op is a node in its group's namespace (a collapsible layer), its incoming edges
are the tensors it reads, each group's kernel is its layer's attributes, and the
profile's times are the node data."""

from __future__ import annotations

import json

import fusec
import pytest
import torch
from gpt2_block import Block


def test_gpt_block_for_model_explorer(tmp_path):
    torch.manual_seed(0)
    with torch.no_grad():
        report = fusec.explain(Block().eval(), torch.randn(2, 16, 32), profile=True, runs=4)
    (graph,) = report.graphs
    report.save_model_explorer(tmp_path / "g.json", tmp_path / "d.json")
    collection = json.loads((tmp_path / "g.json").read_text())
    (me,) = collection["graphs"]
    nodes = {n["id"]: n for n in me["nodes"]}
    assert set(nodes) == {o.id for o in graph.ops} | set(graph.args) | {
        f"result:{k}" for k in range(len(graph.results))
    }
    for op in graph.ops:
        node = nodes[op.id]
        assert node["namespace"] == (op.group or "")
        assert [e["sourceNodeId"] for e in node["incomingEdges"]] == op.inputs
        assert all(e["sourceNodeId"] in nodes for e in node["incomingEdges"])
        if op.remark is not None:
            assert {"key": "not fused", "value": f"{op.remark.kind}: {op.remark.detail}"} in node[
                "attrs"
            ]
    assert set(me["groupNodeAttributes"]) == {g.name for g in graph.groups}
    for g in graph.groups:
        assert me["groupNodeAttributes"][g.name]["key"] == g.key
    data = json.loads((tmp_path / "d.json").read_text())[me["id"]]
    seconds = {r.id: r.seconds for r in graph.profile.rows}
    timed = [o for o in graph.ops if (o.group or o.id) in seconds]
    # A view made from its root's sizes and strides has no step, and no time.
    untimed = [o.name for o in graph.ops if o not in timed]
    assert untimed and set(untimed) <= {"aten.view", "aten.reshape", "aten.split", "aten.transpose"}
    assert set(data["results"]) == {o.id for o in timed}
    for op in timed:
        want = seconds[op.group or op.id] * 1e6
        assert data["results"][op.id]["value"] == pytest.approx(want, abs=1e-3)


def test_node_data_needs_a_profile(tmp_path):
    report = fusec.explain(lambda x: torch.sigmoid(x) * 2, torch.randn(4))
    report.save_model_explorer(tmp_path / "g.json")
    assert json.loads((tmp_path / "g.json").read_text())["graphs"][0]["nodes"]
    with pytest.raises(ValueError, match="profile=True"):
        report.save_model_explorer(tmp_path / "g.json", tmp_path / "d.json")
