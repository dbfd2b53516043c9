"""A report for Google's Model Explorer (`pip install ai-edge-model-explorer`):
fusec's graph as a Model Explorer graph collection, fusion groups as
collapsible layers, and the profile as node data (an overlay of times):

    report = fusec.explain(model, x, profile=True)
    report.save_model_explorer("fusion.json", "profile.json")
    # `model-explorer`, open fusion.json in its page; add profile.json as
    # per-node data ("upload json file")

Nothing here imports Model Explorer: the files are JSON in the format of its
UI's uploads and its Python
`graph_builder` (a collection `{label, graphs: [{id, nodes}]}`, each node with
`id`, `label`, `namespace`, `attrs` and `incomingEdges`) and `node_data_builder`
(`{graph id: {results: {node id: {value}}, gradient}}`). An op in a group gets
the group's name as its namespace (`group_3`), which Model Explorer draws as a
layer the user expands or collapses; the group's kernel and key are the
layer's attributes (`groupNodeAttributes`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fusec.observability.explanation import GraphReport, Report


def graph_json(graph: GraphReport, index: int = 0) -> dict[str, Any]:
    """One graph: inputs, ops and outputs as nodes, tensors as incoming edges."""
    gid = _graph_id(graph, index)
    nodes: list[dict[str, Any]] = []
    for a in graph.args:
        nodes.append({"id": a, "label": a.removeprefix("arg:"), "namespace": "inputs"})
    for op in graph.ops:
        attrs = [{"key": "fx node", "value": op.node or ""}]
        if op.source is not None:
            attrs.append({"key": "source", "value": str(op.source)})
        if op.remark is not None:
            attrs.append({"key": "not fused", "value": f"{op.remark.kind}: {op.remark.detail}"})
        nodes.append(
            {
                "id": op.id,
                "label": op.name.removeprefix("aten."),
                "namespace": op.group or "",
                "attrs": attrs,
                "incomingEdges": _edges(op.inputs),
            }
        )
    for k, res in enumerate(graph.results):
        nodes.append({"id": f"result:{k}", "label": f"result {k}", "incomingEdges": _edges([res])})
    groups = {
        g.name: {
            "ops": str(len(g.ops)),
            "kernel": "none" if g.kernel is None else g.kernel.status,
            "key": g.key,
        }
        for g in graph.groups
    }
    return {"id": gid, "nodes": nodes, "groupNodeAttributes": groups}


def collection_json(report: Report, label: str = "fusec") -> dict[str, Any]:
    """Every graph of `report` as one graph collection (what Model Explorer's
    UI opens from a `.json` file)."""
    return {"label": label, "graphs": [graph_json(g, i) for i, g in enumerate(report.graphs)]}


def node_data_json(report: Report) -> dict[str, Any]:
    """The profile as node data, per graph id: each op run through PyTorch its
    own time, each op of a group its group's time (a layer shows its
    children's), in microseconds, shaded white to red."""
    out: dict[str, Any] = {}
    for i, graph in enumerate(report.graphs):
        prof = graph.profile
        if prof is None:
            continue
        by_id = {r.id: r.seconds * 1e6 for r in prof.rows}
        results: dict[str, Any] = {}
        for op in graph.ops:
            us = by_id.get(op.group or op.id)
            if us is not None:
                results[op.id] = {"value": round(us, 3)}
        top = max(by_id.values(), default=0.0)
        out[_graph_id(graph, i)] = {
            "name": "fusec profile (us per call)",
            "results": results,
            "gradient": [
                {"stop": 0, "bgColor": "#ffffff"},
                {"stop": 1, "bgColor": "#e0412a", "textColor": "#ffffff"},
            ]
            if top > 0
            else [],
        }
    return out


def save(report: Report, graph_path: Any, node_data_path: Any = None) -> None:
    """Write the graph collection (and, with a profile, its node data)."""
    with open(graph_path, "w", encoding="utf-8") as f:
        json.dump(collection_json(report), f, indent=1)
    if node_data_path is not None:
        data = node_data_json(report)
        if not data:
            raise ValueError(
                "no profile to write as node data: use fusec.explain(..., profile=True)"
            )
        with open(node_data_path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1)


def _edges(inputs: list[str]) -> list[dict[str, str]]:
    return [
        {"sourceNodeId": src, "sourceNodeOutputId": "0", "targetNodeInputId": str(i)}
        for i, src in enumerate(inputs)
    ]


def _graph_id(graph: GraphReport, index: int) -> str:
    return graph.name if index == 0 else f"{graph.name}_{index}"
