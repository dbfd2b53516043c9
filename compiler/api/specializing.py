"""The compile path of a `CompiledFunction` (`Specializing`, which it
inherits): a call with a new key gets a `Specialization` here.

    _specialize(key, args)            # under the lock; at most max_specializations
      -> _compile(args, key)          # eager reasons, AOTAutograd for training calls
         -> _build(args)              # warm start, or import -> pipeline -> kernels
              -> Specialization(program, getters, outputs, ...)

Past `max_specializations` a call reuses the first compiled program whose
guards make it right for any input (`_guarded_program_for`), or runs eagerly.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from fusec.api.compile_steps import (
    buffers_preserved,
    cached_program,
    compile_pipeline_for,
    gc_paused,
    getter,
    group_key,
    recording,
    rng_preserved,
    run_pipeline,
    store_program,
)
from fusec.api.options import CompileOptions, FusionError
from fusec.api.specialization import Specialization, action_of
from fusec.api.specialization_key import arg_kind, container_argument, describe_inputs, why_new
from fusec.frontend.source_lines import warn_user
from fusec.frontend.tracing import UnsupportedGraph, graph_name
from fusec.observability import logs
from fusec.runtime.program import UnsupportedProgram

log = logging.getLogger("fusec")


class Specializing:
    """The compile path of `fusec.api.compiled.CompiledFunction`."""

    gm: torch.fx.GraphModule | None
    original: Any
    options: CompileOptions
    specializations: dict[Any, Specialization]
    exact_shapes: bool
    static_graph: bool
    """An AOTAutograd graph: called only at the sizes it was traced at (where
    they are not symbolic), so its programs are specialized on exact shapes."""
    size_checks: tuple[Any, ...]
    untraceable: str | None
    compile_id: Any
    _lock: threading.Lock
    _warned: bool

    if TYPE_CHECKING:

        def key(self, args: Sequence[Any]) -> Any: ...
        def _forget_fast_paths(self) -> None: ...

    def _specialize(self, key: Any, args: Sequence[Any]) -> Specialization:
        with self._lock:
            key = self.key(args)
            spec = self.specializations.get(key)
            if spec is not None:
                return spec
            compiled = {
                id(s): s
                for s in self.specializations.values()
                if s.program is not None or s.training is not None
            }
            if len(compiled) >= self.options.max_specializations:
                reason = (
                    f"more than max_specializations={self.options.max_specializations} "
                    "input specializations (dtype, rank, broadcast pattern, contiguity, "
                    "device, autograd)"
                )
                # The program's guards make any input safe for its groups: those
                # that do not match run their unfused ops.
                reused = self._guarded_program_for(key, args)
                if self.options.strict:
                    # A reused program's groups run unfused wherever their guards fail.
                    action = action_of(reused)
                    raise FusionError(f"fusec (strict): {self._name()}: {action}: {reason}")
                if not self._warned:
                    action = "running eagerly" if reused is None else "reusing a guarded program"
                    warn_user(f"fusec: {action}: {reason}")
                    self._warned = True
                logs.recompiles.info("%s: %s: %s", self._name(), action_of(reused), reason)
                spec = reused or Specialization(
                    None, reason=reason, why=reason, inputs=describe_inputs(args)
                )
            else:
                why = why_new(key, list(self.specializations))
                spec = self._compile(args, key)
                spec.why, spec.inputs = why, describe_inputs(args, spec.facts)
                if logs.recompiles.isEnabledFor(logging.INFO):
                    logs.recompiles.info(
                        "%s: compiled specialization #%d for (%s) in %.3fs: %s",
                        self._name(),
                        len(self.specializations) + 1,
                        spec.inputs,
                        spec.compile_seconds,
                        why,
                    )
                if spec.facts is not None and spec.facts.shape_dependent and not self.exact_shapes:
                    self.exact_shapes = True
                    self.specializations.clear()
                    self._forget_fast_paths()
                    key = self.key(args)
                    spec.why += "; the graph reads sizes, so it specializes on exact shapes"
                checks = () if spec.facts is None else spec.facts.size_checks
                if any(c not in self.size_checks for c in checks):
                    # Keys made without these classes may hold other cuts.
                    self.size_checks += tuple(c for c in checks if c not in self.size_checks)
                    self.specializations.clear()
                    self._forget_fast_paths()
                    key = self.key(args)
            if not spec.unconfirmed:
                self.specializations[key] = spec
            return spec

    def _guarded_program_for(self, key: Any, args: Sequence[Any]) -> Specialization | None:
        """The first compiled specialization whose program is right for `args`
        through its guards: arguments of the same kinds (tensor or scalar type),
        no autograd, and nothing unguarded that depends on the example inputs."""
        if self.exact_shapes or key[0] == "autograd" or self._eager_reason(args) is not None:
            return None
        kinds = [arg_kind(a) for a in key[1:]]
        for k, spec in self.specializations.items():
            facts = spec.facts
            if spec.program is None or facts is None or facts.shape_dependent:
                continue
            if facts.size_checks:  # guards do not check how sizes cut
                continue
            if [arg_kind(a) for a in k[1:]] != kinds:
                continue
            why = facts.generic_why()
            if why is None:
                return spec
            log.info("fusec: a compiled program cannot serve other inputs: %s", why)
        return None

    def _compile(self, args: Sequence[Any], key: Any) -> Specialization:
        start = time.perf_counter()
        reason = self._eager_reason(args)
        if reason is None and key[0] == "autograd":
            from fusec.api.training import TrainingProgram

            assert self.gm is not None
            # Each ATen graph AOTAutograd hands over is a function of this kind
            # (`fusec.api.compiled.graph_function`).
            graphs = functools.partial(_graph_function, type(self), options=self.options)
            program = TrainingProgram(self.gm, args, graphs)
            spec = Specialization(None, training=program)
            spec.compile_seconds = time.perf_counter() - start
            return spec
        if reason is None:
            try:
                assert self.gm is not None
                with gc_paused(len(self.gm.graph.nodes)):
                    spec = self._build(args)
                spec.compile_seconds = time.perf_counter() - start
                return spec
            except (UnsupportedGraph, UnsupportedProgram) as e:
                reason = str(e)
            except FusionError:
                raise  # strict mode: the user asked for this error
            except Exception as e:  # noqa: BLE001 - e.g. a verifier rejecting the inputs
                # This call runs eagerly, so eager reports its own error (PyTorch's
                # RuntimeError for a shape mismatch); kept only if eager runs.
                log.info("fusec: compiling failed, running eagerly", exc_info=True)
                reason = f"fusec failed to compile ({type(e).__name__}: {e})"
                return Specialization(
                    None,
                    reason=reason,
                    compile_seconds=time.perf_counter() - start,
                    unconfirmed=True,
                )
        if self.options.strict:
            raise FusionError(f"fusec (strict): {self._name()} would run eagerly: {reason}")
        if self.gm is not None:  # an untraceable function was reported by `compile`
            warn_user(f"fusec: running eagerly: {reason}")
        return Specialization(None, reason=reason, compile_seconds=time.perf_counter() - start)

    def _eager_reason(self, args: Sequence[Any]) -> str | None:
        if self.gm is None:
            return self.untraceable or "the function cannot be traced with torch.fx"
        return container_argument(args)

    def _build(self, args: Sequence[Any]) -> Specialization:
        assert self.gm is not None
        name = self._name()
        # AOTAutograd's graphs: a step pays each PyTorch call, copies included.
        pipeline = self.options.pipeline or compile_pipeline_for(args, self.static_graph)
        warm = self.options.program_cache and not self.options.strict
        host_key = self._host_key(args, pipeline) if warm else None
        if host_key is not None:
            spec = self._warm_start(host_key, args)
            if spec is not None:
                return spec
        from fusec.frontend.importer import import_fx
        from fusec.frontend.value_types import has_symbolic_sizes
        from fusec.passes.fusion_remarks import collect_remarks

        # The import runs the graph on `args`; the first call's results must draw
        # the same random numbers eager would, so the import's draws are undone.
        # Its opaque ops run on the module's own buffers (a BatchNorm in training
        # mode updates its running statistics): they are put back, so the first
        # call updates them once, as eager does.
        with rng_preserved(args), buffers_preserved(self.gm):
            imported = import_fx(self.gm, args, name)
        symbolic = has_symbolic_sizes(self.gm)
        if self.static_graph and not symbolic:
            # Its views' sizes are the trace's, and so are its calls' (exact keys
            # from here on): the program may bake strides (`view_layouts`).
            imported.shape_dependent = True
        module = imported.module
        from fusec.observability import structured_trace

        tracing = structured_trace.enabled()
        if tracing:
            imported_ir = str(module)  # the pipeline rewrites the module in place
            structured_trace.artifact("fusec_imported_ir", lambda: imported_ir, self.compile_id)
        with collect_remarks() as remarks:
            cached = cached_program(self.gm, args, pipeline, name, imported) if warm else None
            if cached is not None:
                module = imported.module = cached
            else:
                run_pipeline(module, pipeline)
        from fusec.passes.canonical import has_sized_kernels

        if not imported.shape_dependent and not symbolic and has_sized_kernels(module):
            # Kernels that bake sizes (`fusec.passes.canonical`) serve these
            # sizes only. (In a graph with symbolic sizes, a size still static
            # is one Dynamo guards itself.)
            imported.shape_dependent = True
        from fusec.runtime import program_cache

        # The module's text is printed once for both warm-start entries.
        store_ir = warm and cached is None and program_cache.enabled()
        from fusec.codegen.ir_text import generic_text

        text = generic_text(module) if host_key is not None or store_ir else ""
        if store_ir:
            store_program(self.gm, args, pipeline, name, text)
        # CPU kernels for all-CPU inputs, GPU kernels for inputs on one CUDA device;
        # mixed devices run their groups through PyTorch.
        records: dict[Any, Any] = {}
        kernel_keys: dict[Any, str] = {}
        kernels = recording(self._kernel_provider(args, kernel_keys), records, self._cache())
        root = self.gm

        def opaque(op: Any) -> Callable[..., tuple[Any, ...]]:
            return imported.opaque[op.node.data].bind(root)

        from fusec.api.warm_start import facts_of
        from fusec.codegen.host_program import build_program

        # Exact shapes and the arguments' contiguity are in this specialization's
        # key: the program may bake views' strides (`fusec.codegen.view_layouts`).
        contiguous = [
            src[0] == "arg"
            and isinstance(args[src[1]], torch.Tensor)
            and args[src[1]].is_contiguous()
            for src in imported.inputs
            if src[0] != "skip"
        ]
        program = build_program(
            imported.func, kernels, opaque, imported.shape_dependent, contiguous, self.static_graph
        )
        program.group_key = group_key
        if tracing:
            structured_trace.artifact("fusec_fused_ir", lambda: str(module), self.compile_id)
            kernel_list = structured_trace.kernel_list(program, records)
            structured_trace.artifact("fusec_kernels", lambda: kernel_list, self.compile_id)
        for name_ in program.fallback_groups:
            log.info("fusec: a %s runs through PyTorch", name_)
        getters = tuple(getter(src, root) for src in imported.inputs if src[0] != "skip")
        if log.isEnabledFor(logging.DEBUG):
            log.debug("fusec: compiled\n%s\n%s", module, program.describe())
        spec = Specialization(
            program,
            getters,
            imported.outputs,
            imported,
            module_text=lambda: str(module),
            remarks=remarks,
            kernels=records,
            facts=facts_of(imported),
        )
        self._report_new(spec)
        if host_key is not None:
            from fusec.api.warm_start import store

            assert spec.facts is not None
            store(host_key, args, program, spec.facts, text, kernel_keys.get, imported.opaque)
        return spec

    def _host_key(self, args: Sequence[Any], pipeline: str) -> str | None:
        """The warm-start key of this call's specialization, or None where a
        warm start cannot serve it: GPU or mixed devices, kernels off, a custom
        kernel cache, or logs and strict mode, which need the IR."""
        from fusec.runtime import program_cache

        target = self._cpu_target(args)
        if (
            target is None
            or self.options.cache is not None
            or not program_cache.enabled()
            or self._reports_wanted()
        ):
            return None
        from fusec.api.warm_start import host_key

        assert self.gm is not None
        return host_key(self.gm, args, pipeline, target, self._name())

    def _warm_start(self, key: str, args: Sequence[Any]) -> Specialization | None:
        """The specialization of `key` from the warm-start cache, or None."""
        from fusec.api.warm_start import load

        cache = self._cache()
        target = self._cpu_target(args)
        assert self.gm is not None
        loaded = load(key, args, lambda k: cache.kernel_by_key(k, target), self.gm)
        if loaded is None:
            return None
        root, facts, text = self.gm, loaded.facts, loaded.module_text
        if log.isEnabledFor(logging.DEBUG):  # describing the program is not free
            log.debug("fusec: warm start from the cache\n%s", loaded.program.describe())
        return Specialization(
            loaded.program,
            tuple(getter(src, root) for src in facts.inputs if src[0] != "skip"),
            facts.outputs,
            module_text=lambda: text,
            facts=facts,
        )

    def _reports_wanted(self) -> bool:
        """Strict mode, the fusion, kernels or guards logs, or a structured trace
        (`TORCH_TRACE`): each reads the IR."""
        from fusec.observability import structured_trace

        return (
            self.options.strict
            or structured_trace.enabled()
            or logs.fusion.isEnabledFor(logging.INFO)
            or logs.kernels.isEnabledFor(logging.INFO)
            or logs.guards.isEnabledFor(logging.INFO)
        )

    def _name_guards(self, spec: Specialization, report: Any) -> None:
        """Let the guards log name each guard's group by the user's lines."""
        from fusec.dialects.fusion import GuardOp
        from fusec.observability.explanation import guard_names

        assert spec.program is not None and spec.imported is not None
        guards = [op for op in spec.imported.func.body.block.ops if isinstance(op, GuardOp)]
        spec.program.guard_names.update(guard_names(report, guards))

    def _report_new(self, spec: Specialization) -> None:
        """Log a new specialization's fusion and kernels; in strict mode, raise if
        an op that could have fused did not."""
        if not self._reports_wanted():
            return
        from fusec.observability.explanation import graph_report, log_graph, strict_violations

        report = graph_report(self, spec)
        log_graph(report)
        if logs.guards.isEnabledFor(logging.INFO):
            self._name_guards(spec, report)
        bad = strict_violations(report) if self.options.strict else []
        if bad:
            lines = "\n".join(f"  {op.label()}: {op.remark}" for op in bad)
            raise FusionError(
                f"fusec (strict): {len(bad)} op(s) could have fused and did not:\n{lines}"
            )

    def _cache(self) -> Any:
        from fusec.runtime import cache as cache_mod

        return self.options.cache or cache_mod.default_cache()

    def _name(self) -> str:
        return graph_name(self.original)

    def _cpu_target(self, args: Sequence[Any]) -> str | None:
        """The CPU target of this call's kernels, None when it gets none (kernels
        off, no code generator, or a tensor not on the CPU)."""
        from fusec.runtime import cache as cache_mod

        if not self.options.use_kernels or not cache_mod.codegen_available():
            return None
        if any(isinstance(a, torch.Tensor) and a.device.type != "cpu" for a in args):
            return None
        # An "sm_XX" target means GPU kernels for CUDA inputs; CPU inputs get CPU ones.
        return "cpu" if self.options.target.startswith("sm_") else self.options.target

    def _kernel_provider(
        self, args: Sequence[Any], keys: dict[Any, str] | None = None
    ) -> Callable[[Any], Any]:
        """The groups' kernels for this call's inputs; `keys` collects each CPU
        kernel's cache key by group (for the warm-start entry)."""
        from fusec.runtime import cache as cache_mod

        if not self.options.use_kernels or not cache_mod.codegen_available():
            return lambda group: None
        cache = self._cache()
        target = self._cpu_target(args)
        if target is not None:
            keyed = getattr(cache, "keyed_kernel_for", None)
            if keys is None or keyed is None:
                return lambda group: cache.kernel_for(group, target)

            def provide(group: Any) -> Any:
                keys[group], kernel = keyed(group, target)
                return kernel

            return provide
        from fusec.codegen.host_program import gpu_kernel_provider

        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        return gpu_kernel_provider(cache, tensors)


def _graph_function(cls: type, gm: torch.fx.GraphModule, options: CompileOptions) -> Any:
    """`cls(gm, gm, options)`: the compiled function of one AOTAutograd graph."""
    return cls(gm, gm, options)
