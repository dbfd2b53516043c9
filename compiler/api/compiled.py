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
takes `y is not None` to be true; where that trace fails, Dynamo captures the
original: `fusec.api.captured`), sparse and nested tensors run eagerly, every
fallback runs the original function (never a graph traced for other inputs), a
compiled program that fails lets eager report the error (PyTorch's
`RuntimeError` for a shape mismatch), and compiling draws no random numbers, so
seeded runs equal eager ones.

    f = fusec.compile(lstm_cell)
    hy, cy = f(x, hx, cx, w_ih, w_hh, b_ih, b_hh)
    f.launches_per_call   # 1: the whole pointwise tail is one kernel

Calls that autograd records (grad mode on, an input or parameter requiring grad)
specialize on exact shapes and run a `fusec.api.training.TrainingProgram`: AOTAutograd
over the traced graph with fusec compiling its forward and backward ATen graphs
(`f.compiled_graphs`); what AOTAutograd cannot trace runs eagerly with a warning.

This module is the call path (`CompiledFunction`: bind, key, look up, run,
variants for other modes, default dtypes and None arguments). The rest is
apart: the options (`fusec.api.options`), the typed key
(`fusec.api.specialization_key`), a compiled specialization
(`fusec.api.specialization`), the compile path (`fusec.api.specializing`,
which `CompiledFunction` inherits, and `fusec.api.compile_steps`), and the
generated per-key fast path (`fusec.api.fast_call`, through its
`FastPathOwner` protocol).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from fusec.api.compile_steps import run_pipeline
from fusec.api.fast_call import MISS, fast_path
from fusec.api.options import CompileOptions, FusionError
from fusec.api.specialization import Specialization, fill_outputs
from fusec.api.specialization_key import call_key, describe_inputs, specialization_key
from fusec.api.specializing import Specializing
from fusec.codegen import kernel_builder  # noqa: F401 - the kernel cache's builder, even on a warm start
from fusec.frontend.source_lines import warn_user
from fusec.frontend.tracing import UnsupportedGraph, trace

__all__ = [
    "CompileOptions", "CompiledFunction", "FusionError", "Specialization", "all_real",
    "compile_traced", "run_pipeline",
]  # fmt: skip

Capture = Callable[[Any, CompileOptions, str, Sequence[str]], Any]
"""Makes the Dynamo capture of a function torch.fx cannot trace with some
arguments None: (original, options, why, argument names) -> a callable with
`launches_per_call` and `last` (`fusec.api.captured.CapturedFunction`). Passed
in by `fusec.api.entry`, which sits above both modules."""

log = logging.getLogger("fusec")


def _no_fast_path(args: tuple[Any, ...]) -> Any:
    """The fast path of a `CompiledFunction` without one: every call takes the full path."""
    return MISS


class CompiledFunction(Specializing):
    """The callable `fusec.compile` returns."""

    capture: Capture | None = None
    """Captures the original through Dynamo where a trace with None arguments
    fails (`compile_traced`); None: such calls run eagerly."""

    def __init__(self, gm: torch.fx.GraphModule | None, original: Any, options: CompileOptions):
        self.gm = gm
        self.original = original
        self.options = options
        self.launches_per_call = 0
        self.specializations: dict[Any, Specialization] = {}
        self.exact_shapes = False
        self.static_graph = False
        self.size_checks: tuple[Any, ...] = ()
        """`fusec.frontend.size_checks.SizeCheck`s of the compiled imports: their classes
        of argument sizes are part of the key."""
        self._lock = threading.Lock()
        self._warned = False
        self.last: Specialization | None = None
        self.untraceable: str | None = None
        """Why torch.fx could not trace the function (it then runs eagerly)."""
        self.module_parameters = tuple(gm.parameters()) if gm is not None else ()
        self.failed_calls: dict[Any, Specialization] = {}
        """Per `call_key` (exact shapes and integer values) of a call whose
        program raised, the eager specialization it runs from then on. Only that
        call: a call at another shape compiles again, since a program whose sizes
        are symbolic may fail at one size only (`program_failed`)."""
        self._fast: Callable[[tuple[Any, ...]], Any] = _no_fast_path
        """The fast path of the key the last full-path call ran (`fusec.api.fast_call`)."""
        self.guarded_by_dynamo = False
        """Dynamo's guards hold every call's dtypes, devices, tensor types,
        requires_grad and grad mode (a graph `fusec.api.backend` compiles): the fast
        path checks only the parts of the key that vary with sizes."""
        self._fast_paths: dict[Any, Callable[[tuple[Any, ...]], Any] | None] = {}
        """Per key, its fast path (None: the key has none), made once."""
        self.compile_id: Any = None
        """Dynamo's compile id of the graph `fusec.backend` compiled: fusec's
        structured trace artifacts (`fusec.observability.structured_trace`) go under it."""
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

    def key(self, args: Sequence[Any]) -> Any:
        """The specialization key of a call with `args` (`fusec.api.specialization_key`)."""
        return specialization_key(args, self.module_parameters, self.exact_shapes, self.size_checks)

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
        if self.failed_calls:
            failed = self.failed_calls.get(call_key(args, self.module_parameters))
            if failed is not None:  # its program raised at these very inputs
                self.last, self.launches_per_call = failed, 0
                return self._eager(args)
        key = self.key(args)
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
                return fill_outputs(spec.outputs, self._graph_runner(spec)(args, inputs))
            results = program(inputs)
        except Exception as e:  # noqa: BLE001 - eager decides what the right error is
            return self.program_failed(key, spec, args, e)
        self.launches_per_call = program.last_launches  # less the groups whose guard failed
        self._install_fast_path(key, spec, args)
        return spec.fill(results)

    def _install_fast_path(self, key: Any, spec: Specialization, args: Sequence[Any]) -> None:
        """Makes `fusec.api.fast_call`'s fast path of `key` the first thing calls try
        (generated once per key, while `key` still maps to `spec`)."""
        if self.failed_calls:
            # A fast path checks the key, not the exact inputs a program failed at:
            # calls take the full path, which sends those to eager.
            self._fast = _no_fast_path
            return
        paths = self._fast_paths
        fast = paths.get(key, MISS)
        if fast is MISS:
            if self.specializations.get(key) is not spec:
                # Compiling this call changed what keys hold (size classes, exact shapes).
                key = self.key(args)
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
        params = self.placeholders()
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

    def placeholders(self) -> list[tuple[str, Any]] | None:
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

    def _delegate(self, variant: Any, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
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
            variant.capture = self.capture
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
            variant.capture = self.capture
            variant.untraceable = why
            variant._dtype_variants = self._dtype_variants
            self._dtype_variants[dtype] = variant
        return variant

    def _variant_for(self, bound: Sequence[Any]) -> Any:
        """The compiled function for a call whose arguments include None: the
        original traced again with those arguments concrete, since a symbolic trace
        took `x is None` to be False (`fn(x, y=None)` branching on `y`); captured
        by Dynamo (`fusec.api.captured`) where that trace fails."""
        if not any(a is None for a in bound):
            return self
        nones = frozenset(
            name for (name, _), a in zip(self.placeholders() or [], bound, strict=True) if a is None
        )
        if (
            not nones
            or self.__dict__.get("_variant_names")
            or isinstance(self.original, torch.fx.GraphModule)
        ):
            return self
        variants: dict[frozenset[str], Any] = self.__dict__.setdefault("_variants", {})
        variant = variants.get(nones)
        if variant is None:
            names = tuple(name for name, _ in self.placeholders() or [])
            try:
                gm = torch.fx.symbolic_trace(self.original, concrete_args=dict.fromkeys(nones))
            except Exception as e:  # noqa: BLE001 - Dynamo captures what fx cannot
                why = f"torch.fx cannot trace it with {', '.join(sorted(nones))}=None: {e}"
                # One capture serves every set of None arguments: Dynamo guards them.
                variant = self.__dict__.get("_captured")
                if variant is None and self.capture is not None:
                    log.info("fusec: %s; capturing it with Dynamo", why)
                    variant = self.capture(self.original, self.options, why, names)
                    self.__dict__["_captured"] = variant
                elif variant is None:  # no capture given: it runs eagerly
                    log.info("fusec: %s; running eagerly", why)
                    variant = CompiledFunction(None, self.original, self.options)
                    variant._variant_names = names
            else:
                variant = CompiledFunction(gm, self.original, self.options)
                variant.capture = self.capture
                variant._variant_names = names
            variants[nones] = variant
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
        """The forward/backward `fusec.api.training.CompiledGraph`s of every training
        specialization, in the order AOTAutograd compiled them."""
        return [
            g
            for s in self.specializations.values()
            if s.training
            for g in s.training.compilers.graphs
        ]

    def program_failed(
        self, key: Any, spec: Specialization, args: Sequence[Any], error: Exception
    ) -> Any:
        """A compiled program raised: the call runs eagerly, and so do later
        calls with the same exact shapes and integer arguments (`failed_calls`).
        The specialization is dropped, so a call at another shape compiles
        again: with symbolic sizes one program serves every shape, and one that
        raises at one of them (a size a kernel or a PyTorch step cannot take)
        must not send the graph to eager at all the others. If eager raises
        too, that is the caller's error and it propagates; a program that writes
        its inputs in place may have written some already, so its error
        propagates instead."""
        if spec.facts is not None and spec.facts.writes_inputs():
            raise error
        result = self._eager(args)
        reason = f"the compiled program failed: {type(error).__name__}: {error}"
        log.warning("fusec: running eagerly: %s", reason)
        failed = Specialization(None, reason=reason, why=reason, inputs=describe_inputs(args))
        with self._lock:
            self.failed_calls[call_key(args, self.module_parameters)] = failed
            if self.specializations.get(key) is spec:
                del self.specializations[key]
            self._forget_fast_paths()
        self.last, self.launches_per_call = failed, 0
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

    # ------------------------------------------------------------------ inspection

    def ir(self) -> str:
        """The IR of the last specialization that ran (after the pipeline). One
        served by a warm-start entry made for other sizes of the same pattern
        starts with a comment naming the sizes its text was compiled for."""
        return "" if self.last is None else self.last.module_text()

    def explain(self) -> Any:
        """`fusec.explain` of this function as it stands (no call is made)."""
        from fusec.observability.explanation import Report, graph_report

        return Report([graph_report(self)])


_NO_DEFAULT = object()


def _dense(a: Any) -> bool:
    """Not a tensor, or a strided, non-nested one (what kernels and keys handle)."""
    return not isinstance(a, torch.Tensor) or (a.layout == torch.strided and not a.is_nested)


def graph_function(gm: torch.fx.GraphModule, options: CompileOptions) -> CompiledFunction:
    """The `CompiledFunction` of one ATen graph AOTAutograd hands over (a forward,
    backward or inference graph): how `fusec.api.training` compiles each one."""
    fn = CompiledFunction(gm, gm, options)
    fn.static_graph = True
    return fn


def compile_traced(
    gm: torch.fx.GraphModule,
    original: Any,
    options: CompileOptions,
    example_inputs: Sequence[Any] | None = None,
    capture: Capture | None = None,
) -> CompiledFunction:
    """The `CompiledFunction` of `original` traced as `gm` (`fusec.compile`'s fx
    route, `fusec.api.entry`; a Dynamo or AOTAutograd graph is its own
    `original`). `example_inputs`, when real values, compile their
    specialization right away; `capture` captures `original` through Dynamo for
    calls whose None arguments the trace cannot take (`_variant_for`)."""
    fn = CompiledFunction(gm, original, options)
    fn.capture = capture
    if example_inputs is not None and all_real(example_inputs):
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
