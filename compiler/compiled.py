"""`fusec.compile`: a callable that specializes, compiles and runs a torch graph.

Each call computes the specialization of its inputs: per tensor its dtype,
device, rank, which dims are 1 (they broadcast), contiguity and whether autograd
needs it; per Python scalar its type. A new specialization runs

    import (fx -> aten, with these inputs) -> FUSE_PIPELINE -> kernels (cache) -> host program

and later calls with the same specialization only launch. After
`max_specializations` different ones, new specializations run eagerly with a
warning. Graphs whose import folds sizes (`x.view(x.size(0), -1)`) specialize on
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
    """Pass pipeline to run after import; None is `FUSE_PIPELINE`."""
    target: str = "cpu"
    use_kernels: bool = True
    """False runs every fused group through PyTorch (for tests and debugging)."""
    cache: Any = None
    """A `KernelCache`; None is the process-wide one."""


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
    """Apply `pipeline` (default `FUSE_PIPELINE`) to `module` in place."""
    if pipeline is None:
        from fusec.pipelines import FUSE_PIPELINE

        pipeline = FUSE_PIPELINE
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
        self._lock = threading.Lock()
        self._warned = False
        self.last: Specialization | None = None

    # ------------------------------------------------------------------ calls

    def _key(self, args: Sequence[Any]) -> Any:
        grad = torch.is_grad_enabled()
        exact = self._exact_shapes
        return (grad, *[_arg_spec(a, grad, exact) for a in args])

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
        return _fill(spec.outputs, program(inputs))

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
            compiled = [s for s in self.specializations.values() if s.program is not None]
            if len(compiled) >= self.options.max_specializations:
                reason = (
                    f"more than max_specializations={self.options.max_specializations} "
                    "input specializations (dtype, rank, broadcast pattern, contiguity, "
                    "device, autograd)"
                )
                if not self._warned:
                    warnings.warn(f"fusec: running eagerly: {reason}", stacklevel=3)
                    self._warned = True
                spec = Specialization(None, reason=reason)
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
            self.specializations[key] = spec
            return spec

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
        run_pipeline(module, self.options.pipeline)
        on_cpu = all(a.device.type == "cpu" for a in args if isinstance(a, torch.Tensor))
        # Only CPU kernels are wired in: groups over other devices run through PyTorch.
        kernels = self._kernel_provider() if on_cpu else (lambda group: None)
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

    def _kernel_provider(self) -> Callable[[Any], Any]:
        from fusec.runtime import cache as cache_mod

        if not self.options.use_kernels or not cache_mod.codegen_available():
            return lambda group: None
        cache = self.options.cache or cache_mod.default_cache()
        target = self.options.target
        return lambda group: cache.kernel_for(group, target)

    # ------------------------------------------------------------------ inspection

    def ir(self) -> str:
        """The IR of the last specialization that ran (after the pipeline)."""
        return "" if self.last is None else self.last.module_text()


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
