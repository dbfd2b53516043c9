"""`fusec.explain`'s reports: what fused, what did not and why, and which kernels ran.

    report = fusec.explain(model, x, h)                  # fusec.compile, one call
    report = fusec.explain(model, x, h, backend="torch.compile")   # every Dynamo graph
    print(report)                                        # text
    report.save_html("fusion.html")                      # the fusion graph (fusec.observability.fusion_graph)

A report holds one `GraphReport` per compiled graph (one for `fusec.compile`, one
per graph Dynamo handed over), each with its specializations and why each was
made, and for the one that ran: its groups (ops, the user's lines, the kernel's
canonical key and whether it was built, found in the cache or could not be built),
and each op left outside a group with the remark the `fuse` pass recorded
(`fusec.passes.fusion_remarks`): a barrier and its kind, the argument limit, a
write that may alias, an unsupported dtype or op, a guard that failed on the
example inputs, a fallback to PyTorch.

The same data feeds the `FUSEC_LOGS` lines (`log_graph`) and the strict check
(`strict_violations`). `fusec.explain` itself, which compiles and runs the
function, is the API's (`fusec.api.explain`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fusec.dialects.fusion import GroupOp, GuardOp, YieldOp
from fusec.frontend.source_lines import SourceLine, user_line
from fusec.frontend.tracing import graph_name
from fusec.passes.fusion_remarks import FIXABLE, KINDS, FusionRemark, barrier_kind
from xdsl.dialects import arith, func, scf
from xdsl.ir import Operation

if TYPE_CHECKING:
    from fusec.api.compiled import CompiledFunction, Specialization
    from fusec.observability.profiling import GraphProfile


@dataclass(frozen=True)
class KernelRecord:
    """What the kernel provider did for one group during compilation."""

    status: str
    """"compiled", "memory cache hit", "disk cache hit", or "none"."""
    reason: str = ""
    """Why there is no kernel (status "none")."""
    target: str = ""
    seconds: float = 0.0


@dataclass
class OpReport:
    """One op of the final IR: in a group, or outside with its remark."""

    id: str
    name: str
    node: str | None
    """The fx node it came from (None for ops passes made)."""
    source: SourceLine | None
    remark: FusionRemark | None = None
    group: str | None = None
    inputs: list[str] = field(default_factory=list)
    """Ids of the ops (or `arg:<name>`) whose results it reads."""
    at: int = -1
    """For an op of the function's own block, its index there (as the host
    program's `Step.at`)."""

    def label(self) -> str:
        where = f" ({self.source})" if self.source is not None else ""
        node = f" %{self.node}" if self.node else ""
        return f"{self.name}{node}{where}"


@dataclass
class GroupReport:
    name: str
    ops: list[OpReport]
    key: str
    """The canonical key's digest (alpha-equivalent groups share it, and a kernel)."""
    kernel: KernelRecord | None
    guarded: bool
    guard_failure: str | None = None
    """Why its guard failed on the example inputs (its ops then ran unfused)."""

    @property
    def runs_as_kernel(self) -> bool:
        return self.kernel is not None and self.kernel.status != "none"


@dataclass
class GraphReport:
    """One compiled graph (a `CompiledFunction`) and the specialization that ran."""

    name: str
    specializations: list[str]
    """One line per specialization: its inputs and why it was made."""
    groups: list[GroupReport] = field(default_factory=list)
    unfused: list[OpReport] = field(default_factory=list)
    eager_reason: str | None = None
    launches_per_call: int = 0
    ops: list[OpReport] = field(default_factory=list)
    """Every op, in order (the fusion graph's nodes)."""
    args: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    unexplained: str | None = None
    """Why the specialization that ran cannot be explained (it has no IR)."""
    profile: GraphProfile | None = None
    """Time per kernel and per PyTorch op (`fusec.explain(..., profile=True)`)."""
    unprofiled: str | None = None
    """Why a profile was asked for and not made (the call ran eagerly)."""

    def lines(self) -> list[str]:
        out = [
            f"graph {self.name}: {len(self.groups)} group(s), "
            f"{self.launches_per_call} kernel launch(es) per call"
        ]
        out.append("  specializations:")
        out += [f"    {s}" for s in self.specializations] or ["    (none yet)"]
        if self.unprofiled is not None:
            out.append(f"  not profiled: {self.unprofiled}")
        if self.eager_reason is not None:
            out.append(f"  runs eagerly: {self.eager_reason}")
            return out
        if self.unexplained is not None:
            out.append(f"  not explained: {self.unexplained}")
            return out
        for g in self.groups:
            if g.kernel is None:
                status = "no kernel"
            elif g.kernel.status == "none":
                status = f"no kernel ({g.kernel.reason}); runs through PyTorch"
            else:
                status = f"kernel {g.kernel.status} for {g.kernel.target}"
            out.append(f"  {g.name}: {len(g.ops)} op(s), key {g.key[:16]}, {status}")
            if g.guard_failure is not None:
                out.append(f"    guard failed on these inputs: {g.guard_failure}")
            out += [f"    {op.label()}" for op in g.ops]
        if self.unfused:
            out.append("  not fused:")
            out += [f"    {op.label()}: {op.remark}" for op in self.unfused]
        if self.profile is not None:
            out += self.profile.lines()
        return out


@dataclass
class Report:
    """What `fusec.explain` returns; `str(report)` is the text form."""

    graphs: list[GraphReport]

    @property
    def groups(self) -> list[GroupReport]:
        return [g for graph in self.graphs for g in graph.groups]

    @property
    def unfused(self) -> list[OpReport]:
        return [op for graph in self.graphs for op in graph.unfused]

    @property
    def profiles(self) -> list[GraphProfile]:
        """The graphs' profiles (`fusec.explain(..., profile=True)`)."""
        return [g.profile for g in self.graphs if g.profile is not None]

    @property
    def kernels(self) -> int:
        """Kernel launches per call over all graphs."""
        return sum(g.launches_per_call for g in self.graphs)

    def __str__(self) -> str:
        if not self.graphs:
            return "fusec: no graph was compiled"
        return "\n".join(line for g in self.graphs for line in g.lines())

    def to_html(self) -> str:
        from fusec.observability.fusion_graph import render_html

        return render_html(self.graphs, title="fusec.explain")

    def save_html(self, path: Any) -> None:
        """Write the fusion graph as one self-contained HTML file (inline SVG)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_html())

    def save_model_explorer(self, graph_path: Any, node_data_path: Any = None) -> None:
        """Write the graphs for Google's Model Explorer (groups as collapsible
        layers) and, with a profile, its times as node data (`fusec.observability.model_explorer`)."""
        from fusec.observability.model_explorer import save

        save(self, graph_path, node_data_path)

    def _repr_html_(self) -> str:  # notebooks
        return self.to_html()


# ---------------------------------------------------------------------- building


def module_report(
    module: Operation,
    name: str,
    remarks: dict[Operation, FusionRemark] | None = None,
    origins: dict[Operation, Any] | None = None,
    kernels: dict[Operation, KernelRecord] | None = None,
    guard_failures: dict[Operation, str] | None = None,
) -> GraphReport:
    """The report of the first function in `module` after the pipeline (what
    `fusec-opt --view-fusion-graph` shows, and the core of `graph_report`)."""
    remarks = remarks or {}
    origins = origins or {}
    fn = next((o for o in module.walk() if isinstance(o, func.FuncOp)), None)
    report = GraphReport(name, [])
    if fn is None:
        return report
    ids: dict[Any, str] = {}
    for arg in fn.body.block.args:
        ids[arg] = f"arg:{arg.name_hint or arg.index}"
        report.args.append(ids[arg])

    def op_report(op: Operation, group: str | None) -> OpReport:
        node = origins.get(op)
        rep = OpReport(
            f"op{len(report.ops)}",
            op.name if op.name != "aten.opaque" else f"aten.opaque {op.target.data}",  # type: ignore[attr-defined]
            getattr(node, "name", None) or _hint(op),
            user_line(node),
            group=group,
        )
        for v in op.operands:
            src = ids.get(v)
            if src is not None and src not in rep.inputs:
                rep.inputs.append(src)
        for r in op.results:
            ids[r] = rep.id
        report.ops.append(rep)
        return rep

    def group_report(group: GroupOp, guard: GuardOp | None) -> None:
        from fusec.passes.canonical import canonical_key

        gname = f"group_{len(report.groups)}"
        for arg, outer in zip(group.body.block.args, group.operands, strict=False):
            if outer in ids:
                ids[arg] = ids[outer]
        ops = [
            op_report(o, gname)
            for o in group.body.block.ops
            if not isinstance(o, YieldOp | arith.ConstantOp)
        ]
        # Values yielded by the group are produced by the op that made them.
        for res, val in zip(group.results, group.yield_op.values, strict=False):
            if val in ids:
                ids[res] = ids[val]
        failure = (guard_failures or {}).get(guard) if guard is not None else None
        record = (kernels or {}).get(group)
        report.groups.append(
            GroupReport(gname, ops, canonical_key(group).digest, record, guard is not None, failure)
        )

    for at, op in enumerate(fn.body.block.ops):
        if isinstance(op, arith.ConstantOp | GuardOp):
            continue
        if isinstance(op, func.ReturnOp):
            report.results = [ids[v] for v in op.operands if v in ids]
            continue
        if isinstance(op, GroupOp):
            group_report(op, None)
            continue
        if isinstance(op, scf.IfOp) and isinstance(op.cond.owner, GuardOp):
            inner = [o for o in op.true_region.block.ops if isinstance(o, GroupOp)]
            for g in inner:
                group_report(g, op.cond.owner)
            then_yield = op.true_region.block.last_op
            assert then_yield is not None
            # The if's results are the group's: edges run from the ops inside.
            for res, val in zip(op.results, then_yield.operands, strict=False):
                if val in ids:
                    ids[res] = ids[val]
            continue
        rep = op_report(op, None)
        rep.at = at
        rep.remark = remarks.get(op) or _remark_without_fuse(op)
        report.unfused.append(rep)
    # A group that could not get a kernel, or whose guard failed, ran its ops unfused.
    for g in report.groups:
        if g.kernel is not None and g.kernel.status == "none":
            for o in g.ops:
                o.remark = FusionRemark("fallback", f"{g.name} has no kernel: {g.kernel.reason}")
        elif g.guard_failure is not None:
            for o in g.ops:
                o.remark = FusionRemark("guard-failed", f"{g.name}: {g.guard_failure}")
    return report


def _hint(op: Operation) -> str | None:
    for r in op.results:
        if r.name_hint:
            return r.name_hint
    return None


def _remark_without_fuse(op: Operation) -> FusionRemark:
    """Ops no `fuse` run saw (made by a later pass, or a pipeline without `fuse`)."""
    kind = barrier_kind(op)
    if kind is not None:
        return FusionRemark("barrier", kind)
    return FusionRemark("no-partner", "outside every group (no fuse pass saw it)")


def graph_report(fn: CompiledFunction, spec: Specialization | None = None) -> GraphReport:
    """The report of `fn`'s specialization `spec` (default: the last that ran)."""
    spec = spec if spec is not None else fn.last
    name = graph_name(fn.original)
    specs = [s.describe() for s in {id(s): s for s in fn.specializations.values()}.values()]
    if spec is None:
        return GraphReport(name, specs, eager_reason=fn.untraceable or "never called")
    imported = spec.imported
    if spec.program is not None and imported is None:
        return GraphReport(
            name,
            specs,
            launches_per_call=spec.launches,
            unexplained="it was loaded from the warm-start cache, without its IR "
            "(`fusec.explain` compiles with program_cache=False)",
        )
    if spec.program is None or imported is None:
        return GraphReport(name, specs, eager_reason=spec.reason or "no program")
    opaque = {op: why for op in imported.func.walk() if (why := _opaque_reason(op, imported))}
    remarks = {**spec.remarks}
    for op, why in opaque.items():
        if op in remarks or op.parent_op() is imported.func:
            kind = "unsupported-dtype" if why.startswith("unsupported dtype") else "barrier"
            remarks[op] = FusionRemark(kind, f"{_opaque_target(op)}: {why}")
    # Ops a pass built stand for the op they replace; guard's unfused copies and
    # others keep their value names, which find their node when the name is unique.
    origins = dict(imported.origins)
    derived = getattr(spec.remarks, "derived", {})
    for new, old in derived.items():
        if old in origins:
            origins[new] = origins[old]
    if fn.gm is not None:
        from xdsl.ir import SSAValue

        # xDSL drops `_<n>` suffixes from names: only a name one node has is trusted.
        by_name: dict[str | None, list[Any]] = {}
        for n in fn.gm.graph.nodes:
            by_name.setdefault(SSAValue.extract_valid_name(n.name), []).append(n)
        for op in imported.func.walk():
            found = by_name.get(_hint(op), [])
            if op not in origins and len(found) == 1:
                origins[op] = found[0]
    report = module_report(
        imported.module,
        name,
        remarks,
        origins,
        spec.kernels,
        dict(spec.program.failed_guards) if hasattr(spec.program, "failed_guards") else None,
    )
    report.specializations = specs
    report.launches_per_call = fn.launches_per_call if fn.last is spec else spec.launches
    return report


def _opaque_target(op: Operation) -> str:
    return f"op fusec does not model ({op.target.data})"  # type: ignore[attr-defined]


def _opaque_reason(op: Operation, imported: Any) -> str | None:
    if op.name != "aten.opaque":
        return None
    node = op.node.data if op.node is not None else None  # type: ignore[attr-defined]
    return imported.opaque_reasons.get(node) if node is not None else None


def guard_names(report: GraphReport, guards: Sequence[Operation]) -> dict[Operation, str]:
    """`group[sigmoid,mul] (model.py:3, model.py:4)` for each guard of `report`'s
    guarded groups, in order: what the guards log calls them."""
    guarded = [g for g in report.groups if g.guarded]
    names: dict[Operation, str] = {}
    for guard, group in zip(guards, guarded, strict=False):
        ops = ",".join(o.name.removeprefix("aten.") for o in group.ops)
        lines = ", ".join(dict.fromkeys(str(o.source) for o in group.ops if o.source))
        names[guard] = f"{group.name} [{ops}]" + (f" ({lines})" if lines else "")
    return names


def strict_violations(report: GraphReport) -> list[OpReport]:
    """Ops that could have fused and did not (`FIXABLE` remark kinds)."""
    ops = list(report.unfused) + [o for g in report.groups for o in g.ops]
    return [o for o in ops if o.remark is not None and o.remark.kind in FIXABLE]


def log_graph(report: GraphReport) -> None:
    """The `fusion` and `kernels` log lines of a freshly compiled graph."""
    from fusec.observability import logs

    if logs.fusion.isEnabledFor(20):
        for g in report.groups:
            logs.fusion.info(
                "%s fuses %d op(s): %s", g.name, len(g.ops), ", ".join(o.label() for o in g.ops)
            )
        for op in report.unfused:
            logs.fusion.info("%s not fused: %s", op.label(), op.remark)
    if logs.kernels.isEnabledFor(20):
        for g in report.groups:
            k = g.kernel
            if k is None:
                continue
            if k.status == "none":
                logs.kernels.info("%s (key %s): no kernel: %s", g.name, g.key[:16], k.reason)
            else:
                logs.kernels.info(
                    "%s (key %s): kernel %s for %s in %.3fs",
                    g.name,
                    g.key[:16],
                    k.status,
                    k.target,
                    k.seconds,
                )
        logs.kernels.info(
            "graph %s launches %d kernel(s) per call",
            report.name,
            sum(1 for g in report.groups if g.runs_as_kernel),
        )


__all__ = ["KINDS", "Report", "GraphReport", "GroupReport", "OpReport"]
