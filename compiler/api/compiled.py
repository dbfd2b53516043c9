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

Calls behave as calls of the original: keyword arguments and defaults bind to
the traced graph's placeholders, and a call that does not fit them (extra
arguments, unknown keywords) runs the original, which raises as eager does. An
argument that is None gets a graph traced with it concrete (a symbolic trace
takes `y is not None` to be true), sparse and nested tensors run eagerly, every
fallback runs the original function (never a graph traced for other inputs), a
compiled program that fails lets eager report the error (PyTorch's
`RuntimeError` for a shape mismatch), and compiling draws no random numbers, so
seeded runs equal eager ones.

    f = fusec.compile(lstm_cell)
    hy, cy = f(x, hx, cx, w_ih, w_hh, b_ih, b_hh)
    f.launches_per_call   # 1: the whole pointwise tail is one kernel

Calls that autograd records (grad mode on, an input or parameter requiring grad)
specialize on exact shapes and run a `fusec.training.TrainingProgram`: AOTAutograd
over the traced graph with fusec compiling its forward and backward ATen graphs
(`f.compiled_graphs`); what AOTAutograd cannot trace runs eagerly with a warning.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import operator
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx
from fusec import logs
from fusec.api.fast_call import MISS, fast_path
from fusec.graph_values import Const, Ret
from fusec.runtime.program import HostProgram, UnsupportedProgram
from fusec.source_lines import warn_user
from fusec.tracing import UnsupportedGraph, trace

if TYPE_CHECKING:
    # The compiler (importer, passes, xDSL) is imported when a specialization
    # compiles, never on a warm start (`fusec.warm_start`).
    from fusec.frontend.importer import ImportedGraph
    from fusec.warm_start import GraphFacts
    from xdsl.context import Context
    from xdsl.dialects.builtin import ModuleOp

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
    strict: bool = False
    """Raise `FusionError`, naming the op and its source line, when an op that could
    have fused did not (argument limit, a write that may alias, a group without a
    kernel) or the graph would run eagerly or, past `max_specializations`, on a
    guarded program whose guards may fail; barriers do not count."""
    program_cache: bool = True
    """Reuse the whole compiled program from the on-disk warm-start cache
    (`fusec.runtime.program_cache`; `FUSEC_PROGRAM_CACHE=0` turns it off for all).
    Off under `strict` and in `fusec.explain`, which need the `fuse` pass's own
    reasons, and a cached program skips that pass."""


class FusionError(RuntimeError):
    """`strict=True`: an op that could have fused did not (see `CompileOptions.strict`)."""


def _context() -> Context:
    from fusec.dialects.aten import Aten
    from fusec.dialects.fusion import Fusion
    from xdsl.context import Context
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
        from xdsl.passes import PassPipeline

        PassPipeline.parse_spec(_available_passes(), pipeline).apply(_context(), module)
        module.verify()
    return module


# ---------------------------------------------------------------------- specialization


def _arg_spec(a: Any, grad: bool, exact: bool) -> Any:
    if _holds_tensor(a):
        # By structure, never by the tensors themselves: a key must not keep a
        # call's tensors alive, nor compare them (`==` on tensors is elementwise).
        return _container_spec(a, lambda x: _arg_spec(x, grad, exact))
    if isinstance(a, torch.Tensor):
        shape = a.shape
        return (
            a.dtype,
            a.device,
            tuple(shape) if exact else tuple([s == 1 for s in shape]),
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


def _training_spec(a: Any) -> Any:
    if _holds_tensor(a):
        return _container_spec(a, _training_spec)
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.device, tuple(a.shape), a.stride(), a.requires_grad)
    try:
        hash(a)
    except TypeError:
        return ("unhashable", id(a))
    return (type(a), a)


def _holds_tensor(a: Any) -> bool:
    """A tuple, list or dict with a tensor somewhere inside (`fn((x, y))`)."""
    if not isinstance(a, tuple | list | dict):
        return False
    items = a.values() if isinstance(a, dict) else a
    return any(isinstance(x, torch.Tensor) or _holds_tensor(x) for x in items)


def _container_spec(a: Any, spec: Callable[[Any], Any]) -> Any:
    """The key of a container argument: its type, keys and each item's `spec`."""
    if isinstance(a, dict):
        return ("container", type(a), tuple((_plain_key(k), spec(v)) for k, v in a.items()))
    return ("container", type(a), tuple(spec(x) for x in a))


def _plain_key(k: Any) -> Any:
    try:
        hash(k)
    except TypeError:
        return ("unhashable", id(k))
    return k


def _container_argument(args: Sequence[Any]) -> str | None:
    """Why a call runs eagerly when an argument is a container of tensors: the
    import would take it for a constant (its tensors' values baked into the
    program), so only tensors and scalars passed directly are compiled."""
    for i, a in enumerate(args):
        if _holds_tensor(a):
            return (
                f"argument {i} is a {type(a).__name__} holding tensors; fusec compiles "
                "tensors and scalars passed as arguments themselves"
            )
    return None


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
    why: str = ""
    """Why this specialization was made (first call, which input changed how)."""
    inputs: str = ""
    """The inputs it is for, e.g. "f32[n,1] cpu, f32[n] cpu"."""
    remarks: dict[Any, Any] = field(default_factory=dict)
    """The `fuse` pass's remark per op left outside a group (`fusion_remarks`)."""
    kernels: dict[Any, Any] = field(default_factory=dict)
    """Per group op, the `explanation.KernelRecord` of its kernel lookup."""
    unconfirmed: bool = False
    """Compiling failed unexpectedly: kept only once eager has run these inputs
    (if eager raises too, the inputs were bad, not the compiler)."""
    training: Any = None
    """For calls autograd records: the `fusec.training.TrainingProgram` (fused
    forward and backward through AOTAutograd) that runs instead of `program`."""
    verified: bool = False
    """The training program has run once (traced and compiled) without error."""
    facts: GraphFacts | None = None
    """What running `program` needs of its graph (set with `program`; `imported`
    is None when the program came from the warm-start cache)."""

    @property
    def launches(self) -> int:
        return 0 if self.program is None else self.program.launches

    def describe(self) -> str:
        what = "eager" if self.program is None else f"{self.launches} kernel(s)"
        reason = f" ({self.reason})" if self.program is None and self.reason else ""
        return f"({self.inputs}) -> {what}{reason}: {self.why}"

    @functools.cached_property
    def args_are_inputs(self) -> int:
        """How many arguments a call must have for them to be the program's inputs
        as they come (no parameters or buffers, none skipped), or -1: with that
        many, the getters can be skipped."""
        sources = [] if self.facts is None else self.facts.inputs
        direct = len(sources) == len(self.getters) and all(
            kind == "arg" and where == i for i, (kind, where) in enumerate(sources)
        )
        return len(sources) if direct else -1

    @functools.cached_property
    def fill(self) -> Callable[[Sequence[Any]], Any]:
        """`_fill(self.outputs, results)`, with the common templates (one result,
        a tuple of results) as one `itemgetter` call."""
        t = self.outputs
        if isinstance(t, Ret):
            return operator.itemgetter(t.index)
        if type(t) is tuple and len(t) > 1 and all(isinstance(x, Ret) for x in t):
            return operator.itemgetter(*(x.index for x in t))
        return lambda results: _fill(t, results)


def _no_fast_path(args: tuple[Any, ...]) -> Any:
    """The fast path of a `CompiledFunction` without one: every call takes the full path."""
    return MISS


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
        self.untraceable: str | None = None
        """Why torch.fx could not trace the function (it then runs eagerly)."""
        self._parameters = tuple(gm.parameters()) if gm is not None else ()
        self._fast: Callable[[tuple[Any, ...]], Any] = _no_fast_path
        """The fast path of the key the last full-path call ran (`fusec.api.fast_call`)."""
        self.guarded_by_dynamo = False
        """Dynamo's guards hold every call's dtypes, devices, tensor types,
        requires_grad and grad mode (a graph `fusec.backend` compiles): the fast
        path checks only the parts of the key that vary with sizes."""
        self._fast_paths: dict[Any, Callable[[tuple[Any, ...]], Any] | None] = {}
        """Per key, its fast path (None: the key has none), made once."""
        self.mode_modules: tuple[torch.nn.Module, ...] = ()
        """For an `nn.Module`: every module of its tree, whose `training` flags
        the program bakes in (batch norm's statistics, dropout: the trace
        inlines them, and the import reads a GraphModule's leaf modules);
        `modes` are those flags."""
        self.modes: tuple[bool, ...] = ()
        if gm is not None and isinstance(original, torch.nn.Module):
            self.mode_modules = tuple(original.modules())
            self.modes = tuple(m.training for m in self.mode_modules)
        self._mode_variants: dict[tuple[bool, ...], CompiledFunction] = {self.modes: self}
        self.default_dtype = torch.get_default_dtype()
        """torch's default dtype when compiled: the import gives factory calls
        without a dtype (`torch.ones(3)`, `torch.tensor(1.5)`) this dtype, so a
        call under another default dtype runs a variant compiled for it."""
        self._dtype_variants: dict[torch.dtype, CompiledFunction] = {self.default_dtype: self}

    # ------------------------------------------------------------------ calls

    def _key(self, args: Sequence[Any]) -> Any:
        grad = torch.is_grad_enabled()
        if grad and _needs_grad(args, [p for p in self._parameters if p.requires_grad]):
            # AOTAutograd traces static shapes and fixes non-tensor arguments.
            return ("autograd", *[_training_spec(a) for a in args])
        exact = self._exact_shapes
        key = (grad, *[_arg_spec(a, grad, exact) for a in args])
        if self._size_checks and not exact:
            key += (tuple(c.of(args) for c in self._size_checks),)
        return key

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            result = self._fast(args)
            if result is not MISS:
                return result
        return self._call(args, kwargs)

    def _call(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """A call through the full path: bind, key, look up (or compile) the
        specialization, run it; installs the fast path of the key it ran."""
        if self.mode_modules:
            modes = tuple(m.training for m in self.mode_modules)
            if modes != self.modes:
                return self._delegate(self._mode_variant(modes), args, kwargs)
        if not self.guarded_by_dynamo and torch.get_default_dtype() is not self.default_dtype:
            # (Dynamo guards the default dtype itself and compiles a new graph.)
            return self._delegate(self._dtype_variant(torch.get_default_dtype()), args, kwargs)
        bound = self._bind(args, kwargs)
        if bound is None:
            # Not the traced signature (extra or missing arguments, unknown
            # keywords): the original raises or runs exactly as eager does.
            self.launches_per_call = 0
            return self.original(*args, **kwargs)
        variant = self._variant_for(bound)
        if variant is not self:
            return self._delegate(variant, bound, {})
        args = tuple(bound)
        if not all(_dense(a) for a in args):
            self.launches_per_call = 0  # sparse, nested, ... tensors: eager's kernels
            return self._eager(args)
        key = self._key(args)
        spec = self.specializations.get(key)
        if spec is None:
            spec = self._specialize(key, args)
        self.last = spec
        if spec.training is not None:
            return self._run_training(spec, args)
        program = spec.program
        if program is None:
            self.launches_per_call = 0
            result = self._eager(args)
            if spec.unconfirmed:  # eager ran: the failure was fusec's
                warn_user(f"fusec: running eagerly: {spec.reason}")
                with self._lock:
                    spec.unconfirmed = False
                    self.specializations[key] = spec
            return result
        self.launches_per_call = program.launches
        inputs = args if spec.args_are_inputs == len(args) else [g(args) for g in spec.getters]
        try:
            if self.options.cuda_graphs:
                return _fill(spec.outputs, self._graph_runner(spec)(args, inputs))
            results = program(inputs)
        except Exception as e:  # noqa: BLE001 - eager decides what the right error is
            return self._program_failed(key, spec, args, e)
        self.launches_per_call = program.last_launches  # less the groups whose guard failed
        self._install_fast_path(key, spec, args)
        return spec.fill(results)

    def _install_fast_path(self, key: Any, spec: Specialization, args: Sequence[Any]) -> None:
        """Makes `fusec.api.fast_call`'s fast path of `key` the first thing calls try
        (generated once per key, while `key` still maps to `spec`)."""
        paths = self._fast_paths
        fast = paths.get(key, MISS)
        if fast is MISS:
            if self.specializations.get(key) is not spec:
                # Compiling this call changed what keys hold (size classes, exact shapes).
                key = self._key(args)
                if self.specializations.get(key) is not spec:
                    return
            fast = paths[key] = fast_path(self, key, spec, args)
        self._fast = fast or _no_fast_path

    def _forget_fast_paths(self) -> None:
        """Keys changed meaning or specializations were replaced: every fast path
        goes (they are made again from the full path)."""
        self._fast = _no_fast_path
        self._fast_paths = {}

    # ------------------------------------------------------------------ arguments

    def _bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any] | None:
        """The call's arguments in the traced graph's placeholder order, defaults
        filled in; None when they do not fit it (so the original must run)."""
        if self.gm is None:
            return None
        params = self._params()
        if params is None or len(args) > len(params):
            return None
        if not kwargs and len(args) == len(params):
            return list(args)  # the common case, on the per-call path
        bound: list[Any] = list(args)
        names = [name for name, _ in params]
        for name in kwargs:
            if name not in names or names.index(name) < len(args):
                return None
        for name, default in params[len(args) :]:
            if name in kwargs:
                bound.append(kwargs[name])
            elif default is not _NO_DEFAULT:
                bound.append(default)
            else:
                return None
        return bound

    def _params(self) -> list[tuple[str, Any]] | None:
        """(name, default) per placeholder of the traced graph; None when it has
        `*args`/`**kwargs` placeholders (calls then run the original)."""
        params = self.__dict__.get("_params_cache")
        if params is None:
            assert self.gm is not None
            params = []
            for node in self.gm.graph.nodes:
                if node.op != "placeholder":
                    continue
                name = str(node.target)
                if name.startswith("*"):
                    params = False
                    break
                params.append((name, node.args[0] if node.args else _NO_DEFAULT))
            self.__dict__["_params_cache"] = params
        return params or ([] if params == [] else None)

    def _delegate(
        self, variant: CompiledFunction, args: Sequence[Any], kwargs: dict[str, Any]
    ) -> Any:
        """`variant(*args, **kwargs)`, its launch counts reported as this function's."""
        result = variant(*args, **kwargs)
        self.launches_per_call, self.last = variant.launches_per_call, variant.last
        return result

    def _trace_again(self) -> tuple[torch.fx.GraphModule | None, str | None]:
        """(the original traced now, None), or (None, why it cannot be)."""
        try:
            return trace(self.original), None
        except UnsupportedGraph as e:
            warn_user(f"fusec: running eagerly: {e}")
            return None, str(e)

    def _mode_variant(self, modes: tuple[bool, ...]) -> CompiledFunction:
        """The compiled function of the module traced again in `modes` (its
        modules' `training` flags now: `model.eval()` after compiling)."""
        variant = self._mode_variants.get(modes)
        if variant is None:
            gm, why = self._trace_again()
            variant = CompiledFunction(gm, self.original, self.options)
            if gm is not None and variant.modes != modes:  # flipped while tracing
                variant.mode_modules, variant.gm = (), None
                why = "the module's modes changed while it was traced"
            variant.untraceable = why
            variant._mode_variants = self._mode_variants
            self._mode_variants[modes] = variant
        return variant

    def _dtype_variant(self, dtype: torch.dtype) -> CompiledFunction:
        """The compiled function for calls under another default dtype
        (`torch.set_default_dtype` after compiling), traced and compiled afresh
        so that its factory calls make `dtype` tensors."""
        variant = self._dtype_variants.get(dtype)
        if variant is None:
            # Traced again: the trace ran `torch.ones(3)` itself and keeps its
            # result, a tensor of the old default dtype, as a constant.
            gm, why = self._trace_again() if self.gm is not None else (None, self.untraceable)
            variant = CompiledFunction(gm, self.original, self.options)
            variant.untraceable = why
            variant._dtype_variants = self._dtype_variants
            self._dtype_variants[dtype] = variant
        return variant

    def _variant_for(self, bound: Sequence[Any]) -> CompiledFunction:
        """The compiled function for a call whose arguments include None: the
        original traced again with those arguments concrete, since a symbolic trace
        took `x is None` to be False (`fn(x, y=None)` branching on `y`)."""
        if not any(a is None for a in bound):
            return self
        nones = frozenset(
            name for (name, _), a in zip(self._params() or [], bound, strict=True) if a is None
        )
        if (
            not nones
            or self.__dict__.get("_variant_names")
            or isinstance(self.original, torch.fx.GraphModule)
        ):
            return self
        variants: dict[frozenset[str], CompiledFunction] = self.__dict__.setdefault("_variants", {})
        variant = variants.get(nones)
        if variant is None:
            try:
                gm: torch.fx.GraphModule | None = torch.fx.symbolic_trace(
                    self.original, concrete_args=dict.fromkeys(nones)
                )
            except Exception as e:  # noqa: BLE001 - an untraceable variant runs eagerly
                log.info("fusec: cannot trace with %s=None (%s); running eagerly", sorted(nones), e)
                gm = None
            variant = variants[nones] = CompiledFunction(gm, self.original, self.options)
            variant._variant_names = tuple(name for name, _ in self._params() or [])
        return variant

    def _run_training(self, spec: Specialization, args: Sequence[Any]) -> Any:
        if spec.verified:
            result = spec.training(args)
        else:
            try:  # the first call traces and compiles the forward graph
                result = spec.training(args)
            except Exception as e:  # noqa: BLE001 - whatever AOTAutograd cannot trace runs eagerly
                warn_user(f"fusec: running eagerly: AOTAutograd failed: {e}")
                spec.training, spec.reason = None, f"AOTAutograd failed: {e}"
                self.launches_per_call = 0
                return self._eager(args)
            spec.verified = True
        forward = spec.training.forward
        self.launches_per_call = 0 if forward is None else forward.launches_per_call
        return result

    @property
    def compiled_graphs(self) -> list[Any]:
        """The forward/backward `fusec.training.CompiledGraph`s of every training
        specialization, in the order AOTAutograd compiled them."""
        return [
            g
            for s in self.specializations.values()
            if s.training
            for g in s.training.compilers.graphs
        ]

    def _program_failed(
        self, key: Any, spec: Specialization, args: Sequence[Any], error: Exception
    ) -> Any:
        """A compiled program raised: the call runs eagerly, and so does its
        specialization from now on. If eager raises too, that is the caller's
        error and it propagates; a program that writes its inputs in place may
        have written some already, so its error propagates instead."""
        if spec.facts is not None and spec.facts.writes_inputs():
            raise error
        result = self._eager(args)
        reason = f"the compiled program failed: {type(error).__name__}: {error}"
        log.warning("fusec: running eagerly: %s", reason)
        with self._lock:
            self.specializations[key] = Specialization(None, reason=reason)
            self._forget_fast_paths()
        self.launches_per_call = 0
        return result

    def _graph_runner(self, spec: Specialization) -> Any:
        """The CUDA graph runner of a compiled specialization (made on first use)."""
        runners: dict[int, Any] = self.__dict__.setdefault("_cuda_graph_runners", {})
        runner = runners.get(id(spec))
        if runner is None or runner.program is not spec.program:  # ids are reused
            from fusec.runtime.cudagraphs import CudaGraphRunner, input_names, mutated_inputs

            assert self.gm is not None and spec.facts is not None and spec.program
            sources = [s for s in spec.facts.inputs if s[0] != "skip"]
            runner = runners[id(spec)] = CudaGraphRunner(
                spec.program,
                [where if kind == "arg" else None for kind, where in sources],
                input_names(self.gm),
                mutated_inputs(self.gm),
            )
        return runner

    def _eager(self, args: Sequence[Any]) -> Any:
        # Always the original: a graph traced for other inputs may have taken
        # another branch of its Python control flow.
        names = self.__dict__.get("_variant_names")
        if names:  # a variant's arguments are all of the original's, by name
            return self.original(**dict(zip(names, args, strict=True)))
        return self.original(*args)

    # ------------------------------------------------------------------ compile

    def _specialize(self, key: Any, args: Sequence[Any]) -> Specialization:
        with self._lock:
            key = self._key(args)
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
                    None, reason=reason, why=reason, inputs=_describe_inputs(args)
                )
            else:
                why = _why_new(key, list(self.specializations))
                spec = self._compile(args, key)
                spec.why, spec.inputs = why, _describe_inputs(args, spec.facts)
                if logs.recompiles.isEnabledFor(logging.INFO):
                    logs.recompiles.info(
                        "%s: compiled specialization #%d for (%s) in %.3fs: %s",
                        self._name(),
                        len(self.specializations) + 1,
                        spec.inputs,
                        spec.compile_seconds,
                        why,
                    )
                if spec.facts is not None and spec.facts.shape_dependent and not self._exact_shapes:
                    self._exact_shapes = True
                    self.specializations.clear()
                    self._forget_fast_paths()
                    key = self._key(args)
                    spec.why += "; the graph reads sizes, so it specializes on exact shapes"
                checks = () if spec.facts is None else spec.facts.size_checks
                if any(c not in self._size_checks for c in checks):
                    # Keys made without these classes may hold other cuts.
                    self._size_checks += tuple(c for c in checks if c not in self._size_checks)
                    self.specializations.clear()
                    self._forget_fast_paths()
                    key = self._key(args)
            if not spec.unconfirmed:
                self.specializations[key] = spec
            return spec

    def _guarded_program_for(self, key: Any, args: Sequence[Any]) -> Specialization | None:
        """The first compiled specialization whose program is right for `args`
        through its guards: arguments of the same kinds (tensor or scalar type),
        no autograd, and nothing unguarded that depends on the example inputs."""
        if self._exact_shapes or key[0] == "autograd" or self._eager_reason(args) is not None:
            return None
        kinds = [_arg_kind(a) for a in key[1:]]
        for k, spec in self.specializations.items():
            facts = spec.facts
            if spec.program is None or facts is None or facts.shape_dependent:
                continue
            if facts.size_checks:  # guards do not check how sizes cut
                continue
            if [_arg_kind(a) for a in k[1:]] != kinds:
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
            from fusec.training import TrainingProgram

            assert self.gm is not None
            spec = Specialization(None, training=TrainingProgram(self.gm, args, self.options))
            spec.compile_seconds = time.perf_counter() - start
            return spec
        if reason is None:
            try:
                assert self.gm is not None
                with _gc_paused(len(self.gm.graph.nodes)):
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
        return _container_argument(args)

    def _build(self, args: Sequence[Any]) -> Specialization:
        assert self.gm is not None
        name = self._name()
        pipeline = self.options.pipeline or _compile_pipeline(args)
        warm = self.options.program_cache and not self.options.strict
        host_key = self._host_key(args, pipeline) if warm else None
        if host_key is not None:
            spec = self._warm_start(host_key, args)
            if spec is not None:
                return spec
        from fusec.frontend.importer import import_fx
        from fusec.passes.fusion_remarks import collect_remarks

        # The import runs the graph on `args`; the first call's results must draw
        # the same random numbers eager would, so the import's draws are undone.
        # Its opaque ops run on the module's own buffers (a BatchNorm in training
        # mode updates its running statistics): they are put back, so the first
        # call updates them once, as eager does.
        with _rng_preserved(args), _buffers_preserved(self.gm):
            imported = import_fx(self.gm, args, name)
        module = imported.module
        with collect_remarks() as remarks:
            cached = _cached_program(self.gm, args, pipeline, name, imported) if warm else None
            if cached is not None:
                module = imported.module = cached
            else:
                run_pipeline(module, pipeline)
        from fusec.runtime import program_cache

        # The module's text is printed once for both warm-start entries.
        store_ir = warm and cached is None and program_cache.enabled()
        from fusec.ir_text import generic_text

        text = generic_text(module) if host_key is not None or store_ir else ""
        if store_ir:
            _store_program(self.gm, args, pipeline, name, text)
        # CPU kernels for all-CPU inputs, GPU kernels for inputs on one CUDA device;
        # mixed devices run their groups through PyTorch.
        records: dict[Any, Any] = {}
        kernel_keys: dict[Any, str] = {}
        kernels = _recording(self._kernel_provider(args, kernel_keys), records, self._cache())
        root = self.gm

        def opaque(op: Any) -> Callable[..., tuple[Any, ...]]:
            return imported.opaque[op.node.data].bind(root)

        from fusec.runtime.program import build_program
        from fusec.warm_start import facts_of

        program = build_program(imported.func, kernels, opaque)
        for name_ in program.fallback_groups:
            log.info("fusec: a %s runs through PyTorch", name_)
        getters = tuple(_getter(src, root) for src in imported.inputs if src[0] != "skip")
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
            from fusec.warm_start import store

            assert spec.facts is not None
            store(host_key, args, program, spec.facts, text, kernel_keys.get)
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
        from fusec.warm_start import host_key

        assert self.gm is not None
        return host_key(self.gm, args, pipeline, target, self._name())

    def _warm_start(self, key: str, args: Sequence[Any]) -> Specialization | None:
        """The specialization of `key` from the warm-start cache, or None."""
        from fusec.warm_start import load

        cache = self._cache()
        target = self._cpu_target(args)
        loaded = load(key, args, lambda k: cache.kernel_by_key(k, target))
        if loaded is None:
            return None
        assert self.gm is not None
        root, facts, text = self.gm, loaded.facts, loaded.module_text
        if log.isEnabledFor(logging.DEBUG):  # describing the program is not free
            log.debug("fusec: warm start from the cache\n%s", loaded.program.describe())
        return Specialization(
            loaded.program,
            tuple(_getter(src, root) for src in facts.inputs if src[0] != "skip"),
            facts.outputs,
            module_text=lambda: text,
            facts=facts,
        )

    def _reports_wanted(self) -> bool:
        """Strict mode or the fusion, kernels or guards logs: each reads the IR."""
        return (
            self.options.strict
            or logs.fusion.isEnabledFor(logging.INFO)
            or logs.kernels.isEnabledFor(logging.INFO)
            or logs.guards.isEnabledFor(logging.INFO)
        )

    def _name_guards(self, spec: Specialization, report: Any) -> None:
        """Let the guards log name each guard's group by the user's lines."""
        from fusec.dialects.fusion import GuardOp
        from fusec.explanation import guard_names

        assert spec.program is not None and spec.imported is not None
        guards = [op for op in spec.imported.func.body.block.ops if isinstance(op, GuardOp)]
        spec.program.guard_names.update(guard_names(report, guards))

    def _report_new(self, spec: Specialization) -> None:
        """Log a new specialization's fusion and kernels; in strict mode, raise if
        an op that could have fused did not."""
        if not self._reports_wanted():
            return
        from fusec.explanation import graph_report, log_graph, strict_violations

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
        return getattr(self.original, "__name__", None) or type(self.original).__name__

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
        from fusec.runtime.cuda import gpu_kernel_provider

        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        return gpu_kernel_provider(cache, tensors)

    # ------------------------------------------------------------------ inspection

    def ir(self) -> str:
        """The IR of the last specialization that ran (after the pipeline). One
        served by a warm-start entry made for other sizes of the same pattern
        starts with a comment naming the sizes its text was compiled for."""
        return "" if self.last is None else self.last.module_text()

    def explain(self) -> Any:
        """`fusec.explain` of this function as it stands (no call is made)."""
        from fusec.explanation import Report, graph_report

        return Report([graph_report(self)])


def _recording(
    provider: Callable[[Any], Any], records: dict[Any, Any], cache: Any
) -> Callable[[Any], Any]:
    """`provider`, noting per group whether its kernel was built, found in the cache
    (memory or disk), or could not be had (`explanation.KernelRecord`)."""
    from fusec.explanation import KernelRecord

    stats = getattr(cache, "stats", None)

    def counters() -> tuple[int, int, int]:
        if stats is None:
            return (0, 0, 0)
        return (stats.kernels_compiled, stats.memory_hits, stats.disk_hits)

    def kernel_for(group: Any) -> Any:
        before = counters()
        start = time.perf_counter()
        kernel = provider(group)
        seconds = time.perf_counter() - start
        built, memory, disk = (a - b for a, b in zip(counters(), before, strict=True))
        target = getattr(kernel, "target", "") or ("cpu" if kernel is not None else "")
        if kernel is None:
            failure = getattr(cache, "failure", None)
            why = None
            try:
                why = failure(group) if failure is not None else None
            except Exception:  # noqa: BLE001 - only a better message is at stake
                why = None
            reason = why or "no kernel provider for these inputs (use_kernels, device or toolchain)"
            record = KernelRecord("none", reason, target, seconds)
        else:
            status = "compiled" if built else "disk cache hit" if disk else "memory cache hit"
            if not (built or memory or disk):
                status = "provided"
            record = KernelRecord(status, "", target, seconds)
        records[group] = record
        if logs.cache.isEnabledFor(logging.INFO):
            logs.cache.info(
                "kernel lookup: %s in %.3fs (cache: %s)", record.status, seconds, _stats_line(cache)
            )
        return kernel

    return kernel_for


def _stats_line(cache: Any) -> str:
    stats = getattr(cache, "stats", None)
    if stats is None:
        return "no counters"
    return (
        f"{stats.kernels_compiled} compiled, {stats.memory_hits} memory hits, "
        f"{stats.disk_hits} disk hits"
    )


def action_of(reused: Any) -> str:
    return "running eagerly" if reused is None else "reusing a guarded program"


def _describe_inputs(args: Sequence[Any], facts: GraphFacts | None = None) -> str:
    """`f32[4,1] cpu, int` - what a specialization is for; a size the program
    takes at run time (a `?` dim of a graph with symbolic sizes) is `?`:
    `f32[?,16] cpu`."""
    dynamic = {} if facts is None else facts.dynamic
    out = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            dt = str(a.dtype).removeprefix("torch.")
            grad = " grad" if a.requires_grad else ""
            layout = "" if a.is_contiguous() else " strided"
            dims = dynamic.get(i, ())
            sizes = [
                "?" if len(dims) == a.dim() and dims[d] else str(n) for d, n in enumerate(a.shape)
            ]
            out.append(f"{dt}[{','.join(sizes)}] {a.device}{layout}{grad}")
        else:
            out.append(type(a).__name__)
    return ", ".join(out)


_FIELDS = ("dtype", "device", "size-1 dims", "contiguity", "requires_grad")


def _why_new(key: Any, known: Sequence[Any]) -> str:
    """Why `key` is a new specialization: the first, or what differs from the
    nearest known one (per input: dtype, device, size-1 dims, contiguity, grad)."""
    if not known:
        return "first call"
    best: list[str] | None = None
    for other in known:
        if len(other) != len(key):
            diffs = [f"{len(key) - 1} inputs instead of {len(other) - 1}"]
        else:
            diffs = []
            if other[0] != key[0]:
                diffs.append("grad mode " + ("on" if key[0] else "off"))
            for i, (a, b) in enumerate(zip(key[1:], other[1:], strict=True)):
                if _same(a, b):
                    continue
                if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b) == 5:
                    for name, x, y in zip(_FIELDS, a, b, strict=True):
                        if x != y:
                            diffs.append(f"input {i} {name} {_show(x)} (was {_show(y)})")
                else:
                    diffs.append(f"input {i} is {_show(a)} (was {_show(b)})")
        if best is None or len(diffs) < len(best):
            best = diffs
    return "new inputs: " + "; ".join(best or ["a different specialization"])


def _same(a: Any, b: Any) -> bool:
    """`a == b` for two key entries; entries whose `==` raises or is not a bool
    (a user's hashable object) count as different."""
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - only the message of a new specialization is at stake
        return False


def _show(x: Any) -> str:
    if isinstance(x, tuple) and all(isinstance(v, bool) for v in x):
        return "[" + ",".join("1" if v else "n" for v in x) + "]"
    if isinstance(x, type):
        return x.__name__
    return str(x).removeprefix("torch.")


def _cached_program(
    gm: torch.fx.GraphModule, args: Sequence[Any], pipeline: str, name: str, imported: Any
) -> ModuleOp | None:
    """The module after `pipeline` from the warm-start cache (a previous process
    compiled this graph for these exact inputs), with `imported.func` pointed at
    its function; None on a miss."""
    from fusec.runtime import program_cache
    from xdsl.dialects import func

    key = program_cache.program_key(gm, args, pipeline, name) if program_cache.enabled() else None
    module = None if key is None else program_cache.load_program(key, _context())
    if module is None:
        return None
    sym = imported.func.sym_name.data
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == sym:
            if len(op.args) != len(imported.func.args):
                return None
            imported.func = op
            return module
    return None


def _store_program(
    gm: torch.fx.GraphModule, args: Sequence[Any], pipeline: str, name: str, text: str
) -> None:
    from fusec.runtime import program_cache

    key = program_cache.program_key(gm, args, pipeline, name) if program_cache.enabled() else None
    if key is not None:
        program_cache.store_program(key, text)


def _compile_pipeline(args: Sequence[Any]) -> str:
    """`COMPILE_PIPELINE` with guards for the device the inputs are on (a CUDA
    device by index: its kernels are loaded for that device)."""
    from fusec.pipelines import compile_pipeline

    devices = [a.device for a in args if isinstance(a, torch.Tensor)]
    device = devices[0] if devices else torch.device("cpu")
    return compile_pipeline("cpu" if device.type == "cpu" else str(device))


_NO_DEFAULT = object()


def _dense(a: Any) -> bool:
    """Not a tensor, or a strided, non-nested one (what kernels and keys handle)."""
    return not isinstance(a, torch.Tensor) or (a.layout == torch.strided and not a.is_nested)


@contextlib.contextmanager
def _rng_preserved(args: Sequence[Any]) -> Iterator[None]:
    """Restores the CPU generator and those of the CUDA devices in `args` after
    the block, so work done for compiling draws no random numbers."""
    devices = sorted(
        {a.device.index or 0 for a in args if isinstance(a, torch.Tensor) and a.is_cuda}
    )
    with torch.random.fork_rng(devices=devices):
        yield


@contextlib.contextmanager
def _buffers_preserved(gm: torch.nn.Module) -> Iterator[None]:
    """Restores the buffers of `gm`'s modules in training mode after the block
    (a module in eval mode writes none of its buffers; in-place writes the graph
    itself makes run on clones in the import). The import runs the graph once to
    know its values, and a training-mode BatchNorm run as an opaque op updates
    `running_mean`, `running_var` and `num_batches_tracked`."""
    saved = [
        (b, b.clone())
        for m in gm.modules()
        if m.training
        for b in m.buffers(recurse=False)
        if b is not None and b.layout == torch.strided
    ]
    try:
        yield
    finally:
        with torch.no_grad():
            for b, old in saved:
                b.copy_(old)


GC_PAUSE_MAX_NODES = 256
"""Graphs of at most this many fx nodes compile with Python's cyclic GC paused
(`_gc_paused`)."""


@contextlib.contextmanager
def _gc_paused(nodes: int) -> Iterator[None]:
    """Python's automatic cyclic GC off while a graph of at most
    `GC_PAUSE_MAX_NODES` nodes compiles, then one collection of the young
    generations. Compiling allocates enough IR objects to set off a full
    collection, which walks everything the process holds (torch's modules and
    tensors: about a quarter of a small graph's cold compile); the compile's own
    garbage is young, so collecting generations 0 and 1 afterwards frees it
    without that walk. Larger graphs compile with the GC as it is: the garbage
    their compile leaves between collections grows with them."""
    if nodes > GC_PAUSE_MAX_NODES or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(1)


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


def compile(graph: Any, example_inputs: Sequence[Any] | None = None, **options: Any) -> Any:
    """`fusec.compile(fn_or_module_or_graph_module, example_inputs=None, **options)`.

    A `torch.export.ExportedProgram` runs through `fusec.exported` (its lifted
    parameters read from the program's module). Returns a callable with the
    signature of the graph's inputs. `example_inputs`,
    when given, compiles their specialization right away; otherwise the first call
    compiles. Options are the fields of `CompileOptions`.
    """
    opts = CompileOptions(**options)
    from fusec.exported import compile_exported, is_exported_program

    if is_exported_program(graph):
        return compile_exported(graph, example_inputs, **options)
    try:
        gm: torch.fx.GraphModule | None = trace(graph)
    except UnsupportedGraph as e:
        if opts.strict:
            raise FusionError(f"fusec (strict): would run eagerly: {e}") from e
        warn_user(f"fusec: running eagerly: {e}")
        gm = None
        why = str(e)
    fn = CompiledFunction(gm, graph, opts)
    if gm is None:
        fn.untraceable = why
    if example_inputs is not None and gm is not None and all_real(example_inputs):
        fn._specialize(None, list(example_inputs))
    return fn


def all_real(inputs: Sequence[Any]) -> bool:
    """Whether `inputs` are real values (no fake tensors, symbolic sizes or meta
    tensors), so a specialization can compile for them before the first call."""
    from torch._subclasses.fake_tensor import FakeTensor

    # Dynamo's symbolic sizes (SymInt) are known only at the first real call.
    return all(
        not isinstance(a, FakeTensor | torch.SymInt | torch.SymFloat | torch.SymBool)
        and (not isinstance(a, torch.Tensor) or a.device.type != "meta")
        for a in inputs
    )
