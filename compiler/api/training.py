"""Training: fused forward and backward graphs through AOTAutograd.

When autograd needs gradients (grad mode on and an input or parameter requires
grad), fusec does not run the graph eagerly: PyTorch's AOTAutograd traces the
joint forward+backward graph at the ATen level, `min_cut_rematerialization_partition`
splits it (recomputing cheap pointwise work in the backward instead of saving
it, as Inductor does; `fusec.api.partition` saves what the forward writes out anyway
when recomputing it would read more) and fusec compiles each half like any graph:

    graph (torch level) ──AOTAutograd──▶ joint ATen graph ──min-cut──▶ fw graph ─▶ fusec.compile
                                                                    └▶ bw graph ─▶ fusec.compile

    model = torch.compile(model, backend="fusec")     # forward and backward fused
    f = fusec.compile(lstm_cell)                      # same machinery when grad is needed
    hy, cy = f(x, hx, cx, w_ih, w_hh, b_ih, b_hh)     # hy.grad_fn runs fusec's backward
    [(g.kind, g.launches_per_call) for g in f.compiled_graphs]

Under `torch.compile` with static sizes, PyTorch's `AOTAutogradCache` keeps the
traced and partitioned graphs (`fusec.api.aot_cache`): a later process loads
them instead of tracing, and fusec's warm start finds their programs.

Every graph fusec compiles this way is recorded as a `CompiledGraph` (kind
"forward", "backward" or "inference") on the `AutogradCompilers` that made it and
in `compiled_graphs()`, so the launches of each half can be inspected.

Pointwise backward ops (`sigmoid_backward`, `tanh_backward`, ...) are decomposed
into pointwise ATen ops while tracing (`POINTWISE_DECOMPOSITIONS`), so they fuse
with their neighbours; everything else reaches fusec as AOTAutograd emits it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

if TYPE_CHECKING:
    from fusec.api.compiled import CompiledFunction
    from fusec.api.options import CompileOptions

GraphFunction = Callable[[torch.fx.GraphModule], "CompiledFunction"]
"""Makes the `CompiledFunction` of one ATen graph (`fusec.api.compiled.graph_function`
with the caller's options): the API passes it in, so this module does not import
`fusec.api.compiled`, which imports it."""

# Not `threshold_backward` (relu's) nor the backward ops of
# `fusec.frontend.import_activations` (hardtanh's, hardsigmoid's, hardswish's, elu's,
# softplus's, mish's): the ATen table imports them with their zeros constants of
# the kernel (`where(x <= threshold, 0, grad)`), where their decompositions trace
# a 0 as an `aten.scalar_tensor` that fusec runs opaque on every call and passes
# to the kernel as one more guarded input.
_POINTWISE_BACKWARD_OPS = (
    "sigmoid_backward",
    "tanh_backward",
    "gelu_backward",
    "silu_backward",
    "leaky_relu_backward",
    "logit_backward",
)


def pointwise_decompositions() -> dict[Any, Callable[..., Any]]:
    """ATen decompositions of the pointwise backward ops into pointwise ATen ops
    (`tanh_backward(g, y) -> g * (1 - y * y)`), so the backward's pointwise work
    is visible to `fuse` instead of hidden in one opaque op per activation."""
    from torch._decomp import get_decompositions

    ops = [getattr(torch.ops.aten, name) for name in _POINTWISE_BACKWARD_OPS]
    return get_decompositions([op for op in ops if op is not None])


@dataclass
class CompiledGraph:
    """One ATen graph AOTAutograd handed to fusec, and what fusec made of it."""

    kind: str
    """"forward", "backward" or "inference"."""
    gm: torch.fx.GraphModule
    function: CompiledFunction

    @property
    def launches_per_call(self) -> int:
        """Fused kernels the last call of this graph launched."""
        return self.function.launches_per_call

    @property
    def kernels(self) -> int:
        """Fused kernels one call of the last compiled specialization launches
        when every guard holds."""
        last = self.function.last
        return 0 if last is None else last.launches


_ALL: list[CompiledGraph] = []
_ALL_LOCK = threading.Lock()


def compiled_graphs() -> list[CompiledGraph]:
    """Every forward/backward/inference graph fusec compiled through AOTAutograd
    in this process, oldest first."""
    with _ALL_LOCK:
        return list(_ALL)


def clear_compiled_graphs() -> None:
    with _ALL_LOCK:
        _ALL.clear()


@dataclass
class AutogradCompilers:
    """fusec as AOTAutograd's forward, backward and inference compiler."""

    make_function: GraphFunction
    options: CompileOptions | None = None
    """The options `make_function` compiles with; given, AOTAutograd may cache
    the graphs (`fusec.api.aot_cache`)."""
    graphs: list[CompiledGraph] = field(default_factory=list)

    def adopt(self, kind: str, gm: torch.fx.GraphModule) -> CompiledFunction:
        """The `CompiledFunction` of `gm`, recorded as a graph of `kind`."""
        function = self.make_function(gm)
        record = CompiledGraph(kind, gm, function)
        self.graphs.append(record)
        with _ALL_LOCK:
            _ALL.append(record)
        return function

    def compiler(self, kind: str) -> Callable[[torch.fx.GraphModule, Sequence[Any]], Any]:
        from fusec.api.aot_cache import FusecOutputCode

        def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> Any:
            # The example inputs are fake tensors: fusec specializes on the first real call.
            return FusecOutputCode(kind, gm, self.options, self.adopt(kind, gm))

        return compile_graph

    def aot_kwargs(self) -> dict[str, Any]:
        """The compilers, partitioner and decompositions, as `aot_function`,
        `aot_module_simplified` and Dynamo's `aot_autograd` take them."""
        from fusec.api.partition import fusec_partition

        return {
            "fw_compiler": self.compiler("forward"),
            "bw_compiler": self.compiler("backward"),
            "inference_compiler": self.compiler("inference"),
            "partition_fn": fusec_partition,
            "decompositions": pointwise_decompositions(),
            # Buffer updates (batch norm's statistics) stay in the graphs as
            # `copy_`s, which `batch-argument-writes` makes one call, rather than
            # a `copy_` per buffer in AOTAutograd's epilogue (as for Inductor).
            "keep_inference_input_mutations": True,
        }

    def last(self, kind: str) -> CompiledGraph | None:
        for g in reversed(self.graphs):
            if g.kind == kind:
                return g
        return None


def needs_autograd(args: Sequence[Any], gm: torch.nn.Module | None = None) -> bool:
    """Would autograd record a call on `args` (and `gm`'s parameters) now?"""
    if not torch.is_grad_enabled():
        return False
    if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        return True
    return gm is not None and any(p.requires_grad for p in gm.parameters())


def dynamo_backend(
    gm: torch.fx.GraphModule,
    example_inputs: Sequence[Any],
    make_function: GraphFunction,
    options: CompileOptions | None = None,
    static: bool = False,
) -> Callable[..., Any]:
    """The training half of `torch.compile(backend="fusec")`: Dynamo's
    `aot_autograd` with fusec compilers (parameters arrive as graph inputs or
    attributes; AOTAutograd lifts both). With the `options` `make_function`
    compiles with, and `static` sizes, AOTAutograd caches what it makes
    (`fusec.api.aot_cache`)."""
    from fusec.api import aot_cache
    from torch._dynamo.backends.common import aot_autograd

    compilers = AutogradCompilers(make_function, options)
    kwargs = compilers.aot_kwargs()
    if options is None or not aot_cache.cacheable(options, static):
        compiled = aot_autograd(**kwargs)(gm, example_inputs)
    else:
        for name in ("fw_compiler", "bw_compiler", "inference_compiler"):
            kwargs[name] = aot_cache.serializable(kwargs[name])
        with aot_cache.caching(gm, options, compilers.adopt):
            compiled = aot_autograd(**kwargs)(gm, example_inputs)
    # Dynamo keeps the callable; the records stay reachable through it.
    try:
        compiled.fusec_graphs = compilers.graphs  # type: ignore[attr-defined]
    except AttributeError:  # a callable that takes no attributes: compiled_graphs() has them
        pass
    return compiled


@contextlib.contextmanager
def _onednn_off() -> Iterator[None]:
    """oneDNN disabled (`torch.backends.mkldnn.enabled`), only its enabled flag:
    `torch.backends.mkldnn.flags` also sets TF32, which warns on CPU builds."""
    was = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = False
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = was


class TrainingProgram:
    """One specialization of `fusec.compile` for calls autograd records: an
    `aot_function` over the traced graph with its parameters and buffers lifted
    to inputs (read from the module on every call, so optimizer steps and
    reassignments are seen), and non-tensor arguments fixed to this call's values
    (they are part of the specialization key)."""

    def __init__(self, gm: torch.fx.GraphModule, args: Sequence[Any], make_function: GraphFunction):
        from torch._functorch.aot_autograd import aot_function

        self.gm = gm
        self.compilers = AutogradCompilers(make_function)
        self.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        constants = {i: a for i, a in enumerate(args) if not isinstance(a, torch.Tensor)}
        count = len(args)
        positions = self.tensor_positions

        def functional_call(
            params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], *tensors: Any
        ) -> Any:
            full = [constants.get(i) for i in range(count)]
            for i, t in zip(positions, tensors, strict=True):
                full[i] = t
            # Every name comes, tied ones too (`remove_duplicate=False`), each with
            # its module's tensor: tying them again would reject the duplicates.
            state = {**params, **buffers}
            return torch.func.functional_call(gm, state, tuple(full), tie_weights=False)

        num_params_buffers = len(dict(gm.named_parameters(remove_duplicate=False))) + len(
            dict(gm.named_buffers(remove_duplicate=False))
        )
        self.compiled = aot_function(
            functional_call, num_params_buffers=num_params_buffers, **self.compilers.aot_kwargs()
        )

        # PyTorch decomposes `aten.lstm` into oneDNN's inference-only
        # `mkldnn_rnn_layer` (no workspace for a backward) when the input does
        # not require grad, even if the weights do; tracing with oneDNN off
        # takes the cell-by-cell decomposition, whose pointwise steps fuse.
        self.trace_without_onednn = any(isinstance(m, torch.nn.RNNBase) for m in gm.modules())

    def __call__(self, args: Sequence[Any]) -> Any:
        params = dict(self.gm.named_parameters(remove_duplicate=False))
        buffers = dict(self.gm.named_buffers(remove_duplicate=False))
        tensors = [args[i] for i in self.tensor_positions]
        if self.trace_without_onednn and not self.compilers.graphs:  # the call that traces
            with _onednn_off():
                return self.compiled(params, buffers, *tensors)
        return self.compiled(params, buffers, *tensors)

    @property
    def forward(self) -> CompiledGraph | None:
        return self.compilers.last("forward") or self.compilers.last("inference")

    @property
    def backward(self) -> CompiledGraph | None:
        return self.compilers.last("backward")
