"""The forward/backward partition fusec hands AOTAutograd: min-cut, minus the
recomputations that only make a backward kernel read more.

`min_cut_rematerialization_partition` recomputes a forward value in the backward
whenever the tensors its recomputation reads are saved anyway: saving them is
already paid for, so recomputing looks free. It judges what the forward
materializes by a node's direct users only (a value whose users are all
pointwise "stays inside a fusion"). That misses values the forward must write
out because a fusion cannot hold both ends: in the unrolled LSTM

    cx_0 = f_0 * cx_init + i_0 * g_0     # step 0's kernel writes it: its other
    h_0  = o_0 * tanh(cx_0)              #   end (step 1's f_1 * cx_0) runs after
    mm(h_0, w_hh)  ...  f_1 * cx_0       #   the matmul that reads h_0

min-cut recomputes `cx_0` from four saved tensors inside step 1's backward
kernel, which then reads four tensors for one and differs from every other
step's kernel. `fusec_partition` partitions once, finds each recomputed value
the forward materializes anyway whose recomputation reads two or more forward
tensors, marks it `CheckpointPolicy.MUST_SAVE` in the joint graph (min-cut
honours the mark) and partitions again:

    bw before: mul = f_0 * cx_init ; mul_1 = i_0 * g_0 ; cx_0 = mul + mul_1 ; df_1 = dcy_1 * cx_0
    bw after:  df_1 = dcy_1 * cx_0                     # cx_0 saved by the forward

Recomputed views and single-input chains (a transpose, `relu` of a saved
tensor) are left to min-cut: recomputing them reads no more than saving would.
"""

from __future__ import annotations

import json
from typing import Any

import torch.fx
import torch.utils._pytree as pytree
from fusec.runtime import program_cache
from torch._functorch.partitioners import (
    get_default_op_list,
    min_cut_rematerialization_partition,
)
from torch.utils.checkpoint import CheckpointPolicy


def fusec_partition(
    joint_module: torch.fx.GraphModule, joint_inputs: Any, **kwargs: Any
) -> tuple[torch.fx.GraphModule, torch.fx.GraphModule]:
    """AOTAutograd's `partition_fn`: min-cut, then min-cut again with the
    recomputations `wasteful_recomputations` finds saved instead. The marks are
    kept in the warm-start cache (kind "partition"), keyed by the joint graph's
    nodes and inputs: a process that partitions that graph again marks them first
    and runs min-cut once (a tenth of an unrolled LSTM's warm first call)."""
    _recompute_constant_factories(joint_module)
    key = _marks_key(joint_module, joint_inputs, kwargs)
    known = _load_marks(key) if key is not None else None
    if known is not None:
        nodes = {n.name: n for n in joint_module.graph.nodes}
        if all(name in nodes for name in known):
            for name in known:
                nodes[name].meta["recompute"] = CheckpointPolicy.MUST_SAVE
            return min_cut_rematerialization_partition(joint_module, joint_inputs, **kwargs)
    fw, bw = min_cut_rematerialization_partition(joint_module, joint_inputs, **kwargs)
    # min-cut runs CSE and replaces `joint_module.graph`: the names of the
    # partitioned graphs' nodes are those of the graph it leaves behind. CSE
    # keeps the first of equal nodes, names and all, so the same names mark the
    # graph a later process hands over, before its CSE.
    joint = {n.name: n for n in joint_module.graph.nodes}
    marks = [joint[name] for name in wasteful_recomputations(fw, bw) if name in joint]
    if key is not None:
        _store_marks(key, [n.name for n in marks])
    if not marks:
        return fw, bw
    for node in marks:
        node.meta["recompute"] = CheckpointPolicy.MUST_SAVE
    return min_cut_rematerialization_partition(joint_module, joint_inputs, **kwargs)


_CONSTANT_FACTORIES = (
    torch.ops.aten.arange.default,
    torch.ops.aten.arange.start,
    torch.ops.aten.arange.start_step,
)
_OF_CONSTANTS = (
    torch.ops.aten.add.Tensor,  # GPT-2's `arange + past_length`
    torch.ops.aten.sub.Tensor,
    torch.ops.aten.mul.Tensor,
    torch.ops.aten.unsqueeze.default,
    torch.ops.aten.view.default,
    torch.ops.aten._unsafe_view.default,
    torch.ops.aten.reshape.default,
    torch.ops.aten.expand.default,
    torch.ops.aten.slice.Tensor,
    torch.ops.aten.squeeze.dim,
)


def _recompute_constant_factories(joint_module: torch.fx.GraphModule) -> None:
    """An `arange` of constant bounds (GPT-2's position ids), views of it and
    arithmetic with constants on it are made again in the backward rather than
    saved: each program holds one such tensor for every call
    (`fusec.codegen.torch_ops.reusable`), so remaking it costs nothing, where a
    saved one is an output the forward must make afresh each call. (The targets
    are those of `fusec.frontend.position_embeddings`' aranges, named here so
    that partitioning, which a warm start also runs, imports no xDSL.)"""
    marked: set[torch.fx.Node] = set()
    for node in joint_module.graph.nodes:
        if node.op != "call_function":
            continue
        inputs = [a for a in pytree.tree_leaves((node.args, node.kwargs)) if isinstance(a, torch.fx.Node)]
        if node.target in _CONSTANT_FACTORIES and not inputs:
            marked.add(node)
        elif node.target in _OF_CONSTANTS and inputs and all(a in marked for a in inputs):
            marked.add(node)
    for node in marked:
        node.meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE


def _marks_key(joint_module: torch.fx.GraphModule, joint_inputs: Any, kwargs: Any) -> str | None:
    """The cache key of a partition: the compiler's fingerprint, the joint
    graph's nodes, its inputs' dtypes, sizes and strides (symbolic ones by name)
    and min-cut's options; None with the cache off."""
    if not program_cache.enabled():
        return None
    inputs = [
        f"{t.dtype}{tuple(map(str, t.shape))}{tuple(map(str, t.stride()))}"
        if isinstance(t, torch.Tensor)
        else repr(t)
        for t in pytree.tree_leaves(joint_inputs)
    ]
    options = repr(sorted((k, v) for k, v in kwargs.items() if isinstance(v, int | str | list)))
    graph = _graph_text(joint_module.graph)
    return program_cache.digest(
        program_cache.fingerprint(), "partition", graph, "\n".join(inputs), options
    )


def _graph_text(graph: torch.fx.Graph) -> str:
    """Each node's op, name, target and arguments (other nodes by name): the
    graph's structure, without the Python code a lazy module would generate."""

    def name(n: torch.fx.Node) -> _Ref:
        return _Ref(n.name)

    return "\n".join(
        f"{n.op} {n.name} {program_cache.describe_target(n.target)} "
        f"{torch.fx.node.map_arg(n.args, name)!r} {torch.fx.node.map_arg(n.kwargs, name)!r}"
        for n in graph.nodes
    )


class _Ref(str):
    """A node among a node's arguments: `%name`, not a string constant's `'name'`."""

    def __repr__(self) -> str:
        return f"%{self}"


def _load_marks(key: str) -> list[str] | None:
    entry = program_cache.load("partition", key)
    try:
        names = json.loads(entry[1]) if entry is not None else None
    except ValueError:
        return None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return names


def _store_marks(key: str, names: list[str]) -> None:
    program_cache.store("partition", key, json.dumps(names).encode())


def wasteful_recomputations(fw: torch.fx.GraphModule, bw: torch.fx.GraphModule) -> list[str]:
    """Names of the values `bw` recomputes (computed in both graphs) and reads
    directly, which `fw` materializes anyway and whose recomputation reads two or
    more of the backward's inputs (saved forward tensors)."""
    fw_nodes = {n.name: n for n in fw.graph.nodes if n.op == "call_function"}
    recomputed = {n for n in bw.graph.nodes if n.op == "call_function" and n.name in fw_nodes}
    found = []
    for node in sorted(recomputed, key=lambda n: n.name):
        # Only the frontier: a value a real backward op reads.
        if all(user in recomputed for user in node.users):
            continue
        if len(_cone_inputs(node, recomputed)) < 2:
            continue
        if materialized(fw_nodes[node.name]):
            found.append(node.name)
    return found


def _cone_inputs(node: torch.fx.Node, recomputed: set[torch.fx.Node]) -> set[torch.fx.Node]:
    """The backward's placeholders a recomputed value is computed from."""
    inputs: set[torch.fx.Node] = set()
    stack, seen = [node], {node}
    while stack:
        for arg in stack.pop().all_input_nodes:
            if arg in seen:
                continue
            seen.add(arg)
            if arg.op == "placeholder":
                inputs.add(arg)
            elif arg in recomputed:
                stack.append(arg)
    return inputs


def materialized(node: torch.fx.Node) -> bool:
    """Must any fusion of the forward write `node` to memory? Yes when it is an
    output, when a user cannot fuse with it, or when a user also depends on it
    through an op that cannot fuse (a matmul): one fusion holding `node` and that
    user would be a cycle through the matmul."""
    ops = get_default_op_list()
    users = set(node.users)
    if any(u.op == "output" or not ops.is_fusible(u) for u in users):
        return True
    # The unfusible ops `node` reaches through fusible ones, then everything
    # downstream of them: what depends on `node` through an unfusible op.
    stack: list[torch.fx.Node] = []
    frontier = list(users)
    seen: set[torch.fx.Node] = set(frontier)
    while frontier:
        current = frontier.pop()
        for user in current.users:
            if user in seen:
                continue
            seen.add(user)
            (stack if not ops.is_fusible(user) else frontier).append(user)
    past_unfusible: set[torch.fx.Node] = set(stack)
    while stack:
        for user in stack.pop().users:
            if user not in past_unfusible:
                past_unfusible.add(user)
                stack.append(user)
    return bool(users & past_unfusible)
