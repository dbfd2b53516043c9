"""`fusec.compile`: a callable that specializes, compiles and runs a torch graph.

Each call computes the specialization of its inputs: per tensor its dtype,
device, rank, which dims are 1 (they broadcast), contiguity and whether autograd
needs it; per Python scalar its type. A new specialization runs

    import (fx -> aten, with these inputs) -> COMPILE_PIPELINE -> kernels (cache) -> host program

and later calls with the same specialization only launch. After
`max_specializations` different ones, a new specialization runs the first
compiled program that is right for any input through its guards (groups whose
guard fails run their unfused ops), or eagerly when there is none; a warning says
which. Graphs whose import folds sizes (`x.view(x.size(0), -1)`) specialize on
exact shapes instead of broadcast patterns.

    f = fusec.compile(lstm_cell)
    hy, cy = f(x, hx, cx, w_ih, w_hh, b_ih, b_hh)
    f.launches_per_call   # 1: the whole pointwise tail is one kernel
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from fusec.importer import Const, ImportedGraph, Ret, UnsupportedGraph, import_fx, trace
from fusec.runtime.program import HostProgram, UnsupportedProgram, build_program
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

log = logging.getLogger("fusec")


@dataclass(frozen=True)
class CompileOptions:
    """Options of `fusec.compile` (keyword arguments of the same names)."""

    max_specializations: int = 8
    pipeline: str | None = None
    """Pass pipeline to run after import; None is `COMPILE_PIPELINE` with guards
    for the inputs' device."""
    target: str = "cpu"
    use_kernels: bool = True
    """False runs every fused group through PyTorch (for tests and debugging)."""
    cache: Any = None
    """A `KernelCache`; None is the process-wide one."""
    cuda_graphs: bool = False
    """Capture each specialization's launches in a CUDA graph and replay it
    (`fusec.runtime.cudagraphs`); ineligible calls run without one."""


def _context() -> Context:
    from fusec.dialects.aten import Aten
    from fusec.dialects.fusion import Fusion
    from xdsl.dialects import get_all_dialects

    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
    for dialect in (Aten, Fusion):
        if dialect.name not in ctx.registered_dialect_names:
            ctx.register_dialect(dialect.name, lambda d=dialect: d)
    return ctx


def _available_passes() -> dict[str, Any]:
    from fusec.passes import FUSEC_PASSES
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **FUSEC_PASSES}


def run_pipeline(module: ModuleOp, pipeline: str | None = None) -> ModuleOp:
    """Apply `pipeline` (default `COMPILE_PIPELINE`: fuse, then guard for CPU
    kernels) to `module` in place."""
    if pipeline is None:
        from fusec.pipelines import COMPILE_PIPELINE

        pipeline = COMPILE_PIPELINE
    if pipeline:
        PassPipeline.parse_spec(_available_passes(), pipeline).apply(_context(), module)
        module.verify()
    return module


# ---------------------------------------------------------------------- specialization


def _arg_spec(a: Any, grad: bool, exact: bool) -> Any:
    if isinstance(a, torch.Tensor):
        shape = a.shape
        return (
            a.dtype,
            a.device,
            tuple(shape) if exact else tuple(s == 1 for s in shape),
            a.is_contiguous(),
            grad and a.requires_grad,
        )
    if isinstance(a, bool | int | float):
        return type(a)
    try:
        hash(a)
    except TypeError:
        return ("unhashable", id(a))
    return ("value", a)


def _fill(template: Any, outs: Sequence[Any]) -> Any:
    if isinstance(template, Ret):
        return outs[template.index]
    if isinstance(template, Const):
        return template.value
    if isinstance(template, tuple | list):
        return type(template)(_fill(t, outs) for t in template)
    if isinstance(template, dict):
        return {k: _fill(v, outs) for k, v in template.items()}
    return template


@dataclass
class Specialization:
    """One compiled specialization: how to gather inputs, run, and rebuild outputs."""

    program: HostProgram | None
    """None runs the graph eagerly."""
    getters: tuple[Callable[[Sequence[Any]], Any], ...] = ()
    outputs: Any = None
    imported: ImportedGraph | None = None
    reason: str = ""
    compile_seconds: float = 0.0
    module_text: Callable[[], str] = field(default=lambda: "")

    @property
    def launches(self) -> int:
        return 0 if self.program is None else self.program.launches


class CompiledFunction:
    """The callable `fusec.compile` returns."""

    def __init__(self, gm: torch.fx.GraphModule | None, original: Any, options: CompileOptions):
        self.gm = gm
        self.original = original
        self.options = options
        self.launches_per_call = 0
        self.specializations: dict[Any, Specialization] = {}
        self._exact_shapes = False
        self._size_checks: tuple[Any, ...] = ()
        """`fusec.size_checks.SizeCheck`s of the compiled imports: their classes
        of argument sizes are part of the key."""
        self._lock = threading.Lock()
        self._warned = False
        self.last: Specialization | None = None

    # ------------------------------------------------------------------ calls

    def _key(self, args: Sequence[Any]) -> Any:
        grad = torch.is_grad_enabled()
        exact = self._exact_shapes
        key = (grad, *[_arg_spec(a, grad, exact) for a in args])
        if self._size_checks and not exact:
            key += (tuple(c.of(args) for c in self._size_checks),)
        return key

    def __call__(self, *args: Any) -> Any:
        key = self._key(args)
        spec = self.specializations.get(key)
        if spec is None:
            spec = self._specialize(key, args)
        self.last = spec
        program = spec.program
        if program is None:
            self.launches_per_call = 0
            return self._eager(args)
        self.launches_per_call = program.launches
        inputs = [g(args) for g in spec.getters]
        if self.options.cuda_graphs:
            return _fill(spec.outputs, self._graph_runner(spec)(args, inputs))
        results = program(inputs)
        self.launches_per_call = program.last_launches  # less the groups whose guard failed
        return _fill(spec.outputs, results)

    def _graph_runner(self, spec: Specialization) -> Any:
        """The CUDA graph runner of a compiled specialization (made on first use)."""
        runners: dict[int, Any] = self.__dict__.setdefault("_cuda_graph_runners", {})
        runner = runners.get(id(spec))
        if runner is None or runner.program is not spec.program:  # ids are reused
            from fusec.runtime.cudagraphs import CudaGraphRunner, input_names, mutated_inputs

            assert self.gm is not None and spec.imported is not None and spec.program
            sources = [s for s in spec.imported.inputs if s[0] != "skip"]
            runner = runners[id(spec)] = CudaGraphRunner(
                spec.program,
                [where if kind == "arg" else None for kind, where in sources],
                input_names(self.gm),
                mutated_inputs(self.gm),
            )
        return runner

    def _eager(self, args: Sequence[Any]) -> Any:
        fn = self.gm if self.gm is not None else self.original
        return fn(*args)

    # ------------------------------------------------------------------ compile

    def _specialize(self, key: Any, args: Sequence[Any]) -> Specialization:
        with self._lock:
            key = self._key(args)
            spec = self.specializations.get(key)
            if spec is not None:
                return spec
            compiled = {id(s): s for s in self.specializations.values() if s.program is not None}
            if len(compiled) >= self.options.max_specializations:
                reason = (
                    f"more than max_specializations={self.options.max_specializations} "
                    "input specializations (dtype, rank, broadcast pattern, contiguity, "
                    "device, autograd)"
                )
                # The program's guards make any input safe for its groups: those
                # that do not match run their unfused ops.
                reused = self._guarded_program_for(key, args)
                if not self._warned:
                    action = "running eagerly" if reused is None else "reusing a guarded program"
                    warnings.warn(f"fusec: {action}: {reason}", stacklevel=3)
                    self._warned = True
                spec = reused or Specialization(None, reason=reason)
            else:
                spec = self._compile(args, key)
                if (
                    spec.imported is not None
                    and spec.imported.shape_dependent
                    and not self._exact_shapes
                ):
                    self._exact_shapes = True
                    self.specializations.clear()
                    key = self._key(args)
                checks = () if spec.imported is None else spec.imported.size_checks
                if any(c not in self._size_checks for c in checks):
                    # Keys made without these classes may hold other cuts.
                    self._size_checks += tuple(c for c in checks if c not in self._size_checks)
                    self.specializations.clear()
                    key = self._key(args)
            self.specializations[key] = spec
            return spec

    def _guarded_program_for(self, key: Any, args: Sequence[Any]) -> Specialization | None:
        """The first compiled specialization whose program is right for `args`
        through its guards: arguments of the same kinds (tensor or scalar type),
        no autograd, and nothing unguarded that depends on the example inputs."""
        from fusec.passes.guard import why_not_input_generic

        if self._exact_shapes or self._eager_reason(args) is not None:
            return None
        kinds = [_arg_kind(a) for a in key[1:]]
        for k, spec in self.specializations.items():
            imported = spec.imported
            if spec.program is None or imported is None or imported.shape_dependent:
                continue
            if imported.size_checks:  # guards do not check how sizes cut
                continue
            if [_arg_kind(a) for a in k[1:]] != kinds:
                continue
            why = why_not_input_generic(imported.func)
            if why is None:
                return spec
            log.info("fusec: a compiled program cannot serve other inputs: %s", why)
        return None

    def _compile(self, args: Sequence[Any], key: Any) -> Specialization:
        start = time.perf_counter()
        reason = self._eager_reason(args)
        if reason is None:
            try:
                spec = self._build(args)
                spec.compile_seconds = time.perf_counter() - start
                return spec
            except (UnsupportedGraph, UnsupportedProgram) as e:
                reason = str(e)
        if self.gm is not None:  # an untraceable function was reported by `compile`
            warnings.warn(f"fusec: running eagerly: {reason}", stacklevel=4)
        return Specialization(None, reason=reason, compile_seconds=time.perf_counter() - start)

    def _eager_reason(self, args: Sequence[Any]) -> str | None:
        if self.gm is None:
            return "the function cannot be traced with torch.fx"
        if torch.is_grad_enabled():
            params = [p for p in self.gm.parameters() if p.requires_grad]
            if _needs_grad(args, params):
                return (
                    "autograd is recording and inputs or parameters require grad "
                    "(fused kernels have no backward; use torch.no_grad())"
                )
        return None

    def _build(self, args: Sequence[Any]) -> Specialization:
        assert self.gm is not None
        name = getattr(self.original, "__name__", None) or type(self.original).__name__
        imported = import_fx(self.gm, args, name)
        module = imported.module
        run_pipeline(module, self.options.pipeline or _compile_pipeline(args))
        # CPU kernels for all-CPU inputs, GPU kernels for inputs on one CUDA device;
        # mixed devices run their groups through PyTorch.
        kernels = self._kernel_provider(args)
        root = self.gm

        def opaque(op: Any) -> Callable[..., tuple[Any, ...]]:
            return imported.opaque[op.node.data].bind(root)

        program = build_program(imported.func, kernels, opaque)
        for name_ in program.fallback_groups:
            log.info("fusec: a %s runs through PyTorch", name_)
        getters = tuple(_getter(src, root) for src in imported.inputs if src[0] != "skip")
        log.debug("fusec: compiled\n%s\n%s", module, program.describe())
        return Specialization(
            program, getters, imported.outputs, imported, module_text=lambda: str(module)
        )

    def _kernel_provider(self, args: Sequence[Any]) -> Callable[[Any], Any]:
        from fusec.runtime import cache as cache_mod

        if not self.options.use_kernels or not cache_mod.codegen_available():
            return lambda group: None
        cache = self.options.cache or cache_mod.default_cache()
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if all(t.device.type == "cpu" for t in tensors):
            # An "sm_XX" target means GPU kernels for CUDA inputs; CPU inputs get CPU ones.
            target = "cpu" if self.options.target.startswith("sm_") else self.options.target
            return lambda group: cache.kernel_for(group, target)
        from fusec.runtime.cuda import gpu_kernel_provider

        return gpu_kernel_provider(cache, tensors)

    # ------------------------------------------------------------------ inspection

    def ir(self) -> str:
        """The IR of the last specialization that ran (after the pipeline)."""
        return "" if self.last is None else self.last.module_text()


def _compile_pipeline(args: Sequence[Any]) -> str:
    """`COMPILE_PIPELINE` with guards for the device the inputs are on (a CUDA
    device by index: its kernels are loaded for that device)."""
    from fusec.pipelines import compile_pipeline

    devices = [a.device for a in args if isinstance(a, torch.Tensor)]
    device = devices[0] if devices else torch.device("cpu")
    return compile_pipeline("cpu" if device.type == "cpu" else str(device))


def _arg_kind(spec: Any) -> Any:
    """A specialization entry less what guards check: "tensor", or the scalar type."""
    if isinstance(spec, tuple) and spec and isinstance(spec[0], torch.dtype):
        return "tensor"
    return spec


def _needs_grad(args: Sequence[Any], params: Sequence[torch.Tensor]) -> bool:
    return bool(params) or any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)


def _getter(source: tuple[str, Any], root: torch.nn.Module) -> Callable[[Sequence[Any]], Any]:
    kind, where = source
    if kind == "arg":
        return lambda args, i=where: args[i]
    parts = where.split(".")

    def fetch(args: Sequence[Any]) -> Any:
        obj: Any = root
        for p in parts:
            obj = getattr(obj, p)
        return obj

    return fetch


def compile(
    graph: Any, example_inputs: Sequence[Any] | None = None, **options: Any
) -> CompiledFunction:
    """`fusec.compile(fn_or_module_or_graph_module, example_inputs=None, **options)`.

    Returns a callable with the signature of the graph's inputs. `example_inputs`,
    when given, compiles their specialization right away; otherwise the first call
    compiles. Options are the fields of `CompileOptions`.
    """
    opts = CompileOptions(**options)
    try:
        gm: torch.fx.GraphModule | None = trace(graph)
    except UnsupportedGraph as e:
        warnings.warn(f"fusec: running eagerly: {e}", stacklevel=2)
        gm = None
    fn = CompiledFunction(gm, graph, opts)
    if example_inputs is not None and gm is not None and _all_real(example_inputs):
        fn._specialize(None, list(example_inputs))
    return fn


def _all_real(inputs: Sequence[Any]) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return all(
        not isinstance(a, FakeTensor)
        and (not isinstance(a, torch.Tensor) or a.device.type != "meta")
        for a in inputs
    )
