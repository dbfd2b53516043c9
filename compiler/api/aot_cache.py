"""AOTAutograd's own cache for fusec's training graphs: a warm first call skips the joint trace.

A region autograd records reaches fusec through AOTAutograd, which traces the
joint forward+backward graph, partitions it and hands each half to fusec. In a
second process that trace and partition are most of a model's first call
(ViT-tiny: about two thirds of it), and fusec's own warm start
(`fusec.api.warm_start`) cannot skip them: they happen before fusec sees a graph.

PyTorch caches them itself (`AOTAutogradCache`, Inductor's warm start) for
compilers that return a serializable `OutputCode`. `FusecOutputCode` is fusec's:
what AOTAutograd stores is the ATen graph fusec was handed and its options, and
a load compiles that graph again with `graph_function`, where fusec's warm start
finds its program and machine code on disk:

    process 1:  Dynamo ─▶ AOTAutograd trace + partition ─▶ fusec (compile) ─▶ both cached
    process 2:  Dynamo ─▶ AOTAutogradCache hit (fw, bw graphs) ─▶ fusec (program cache hit)

    model = torch.compile(model, backend="fusec")
    model(x).sum().backward()    # warm: counters["aot_autograd"]["autograd_cache_hit"] == 1

The entries live in PyTorch's cache directory (`TORCHINDUCTOR_CACHE_DIR`, under
`aotautograd/`), bundled (`bundled_autograd_cache`: the output code is pickled
into the entry). Their key is PyTorch's (the graph, its inputs, the autograd
config, torch's version) plus `FUSEC_KEY_ATTR`, an attribute of the graph
module that the key hashes: fusec's source fingerprint and its options, so no
entry made by Inductor, by another fusec, or with other options is ever loaded.
Graphs with symbolic sizes are not cached (AOTAutograd lowers their backward
lazily, after the entry could be written), nor are those compiled with a
kernel cache object of the caller's (`CompileOptions.cache`), which does not
pickle. `FUSEC_PROGRAM_CACHE=0`, `program_cache=False` and
`torch.compiler.config.force_disable_caches` turn it off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pickle
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

try:  # torch 2.9 and later: serializable compilers, bundled entries, eager backward
    import torch._functorch.config as _functorch_config
    from torch._inductor.output_code import OutputCode as _OutputCode

    SUPPORTED = all(
        hasattr(_functorch_config, name)
        for name in (
            "enable_autograd_cache",
            "bundled_autograd_cache",
            "force_non_lazy_backward_lowering",
        )
    )
except ImportError:  # an older torch: fusec's graphs are not cached there
    _OutputCode = object  # type: ignore[assignment, misc]
    SUPPORTED = False

if TYPE_CHECKING:
    from fusec.api.compiled import CompiledFunction
    from fusec.api.options import CompileOptions

FUSEC_KEY_ATTR = "fusec_aot_cache_key"
"""The Dynamo graph module's attribute that puts fusec into AOTAutograd's cache
key (`AOTAutogradCacheDetails` hashes the module's attributes)."""

Adopt = Callable[[str, torch.fx.GraphModule], "CompiledFunction"]
"""Makes and records the `CompiledFunction` of one AOTAutograd graph of a kind
("forward", "backward", "inference"): `AutogradCompilers.adopt`."""

_loading = threading.local()


class FusecOutputCode(_OutputCode):
    """One ATen graph AOTAutograd handed to fusec, as the `OutputCode` its cache
    stores: called boxed (one list of arguments, cleared so that saved
    activations die early), pickled as the graph and the options that compile it.

        code = FusecOutputCode("forward", fw_gm, options, function)
        code([x, w])                 # function(x, w); the list is emptied
        pickle.loads(pickle.dumps(code)).post_compile([], None, {})   # compiles fw_gm again
    """

    def __init__(
        self,
        kind: str,
        gm: torch.fx.GraphModule,
        options: CompileOptions | None,
        function: CompiledFunction | None,
    ):
        self.kind = kind
        self.gm = gm
        self.options = options
        self.function = function
        # An instance attribute: Dynamo wraps the backward in `disable`, whose
        # functools.wraps copies `__dict__` but not class attributes.
        self._boxed_call = True

    def __call__(self, inputs: Sequence[Any]) -> Any:
        if self.function is None:  # loaded, and post_compile not run: compile now
            self._adopt()
        assert self.function is not None
        args = list(inputs)
        if isinstance(inputs, list):
            inputs.clear()
        return self.function(*args)

    def __getstate__(self) -> dict[str, Any]:
        # The graph pickles as its code (`GraphModule.__reduce__`), without its
        # nodes' `meta`; the compiled function is this process's, made on load.
        return {
            "kind": self.kind,
            "gm": _reduced(self.gm),
            "meta": _node_meta(self.gm),
            "options": self.options,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        rebuild, args = state["gm"]
        gm = rebuild(*args)
        _restore_node_meta(gm, state["meta"])
        self.__init__(state["kind"], gm, state["options"], None)  # type: ignore[misc]

    def prepare_for_serialization(self) -> None:
        self.function = None

    def post_compile(
        self, example_inputs: Sequence[Any], constants: Any, graph_kwargs: Any
    ) -> None:
        if self.function is None:
            self._adopt()

    def set_triton_bundle(self, triton_bundle: Any) -> None:
        pass  # fusec's kernels are not Triton's

    def _adopt(self) -> None:
        adopt: Adopt | None = getattr(_loading, "adopt", None)
        if adopt is None:  # loaded outside `loading_into` (a lazily loaded backward)
            from fusec.api.backend import remember_graph
            from fusec.api.compiled import CompileOptions, graph_function

            options = self.options or CompileOptions()
            self.function = remember_graph(graph_function(self.gm, options))
        else:
            self.function = adopt(self.kind, self.gm)


def _reduced(gm: torch.fx.GraphModule) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """`gm.__reduce__()` without the module's `meta` (AOTAutograd's tracing
    state, which does not pickle), as `serialize_graph_module` does."""
    saved = gm.meta
    gm.meta = {}
    try:
        return gm.__reduce__()
    finally:
        gm.meta = saved


def _node_meta(gm: torch.fx.GraphModule) -> list[tuple[str, Any, Any]]:
    """Per node, what fusec reads of its `meta` and a pickled graph loses: its
    source line (`stack_trace`, for `fusec.explain`, and the comments of
    `gm.code`, which fusec's warm-start key hashes) and its recorded tensor's
    size, strides and dtype (the placeholders' sizes are in that key too)."""
    meta = []
    for node in gm.graph.nodes:
        val = node.meta.get("val")
        layout = None
        if isinstance(val, torch.Tensor) and val.layout == torch.strided:
            layout = (tuple(val.shape), tuple(val.stride()), val.dtype, val.requires_grad)
        meta.append((node.op, node.meta.get("stack_trace"), layout))
    return meta


def _restore_node_meta(gm: torch.fx.GraphModule, meta: list[tuple[str, Any, Any]]) -> None:
    """`_node_meta` back onto a loaded graph, node by node (a loaded graph's
    nodes are the pickled one's, in order, renamed by the trace that rebuilds
    it); recorded tensors become `meta` tensors of the recorded layout (static
    sizes only: symbolic graphs are not cached)."""
    nodes = list(gm.graph.nodes)
    if len(nodes) != len(meta) or any(n.op != m[0] for n, m in zip(nodes, meta, strict=True)):
        return  # not the graph the meta was taken from: keep what the load made
    for node, (_, trace, layout) in zip(nodes, meta, strict=True):
        if trace is not None:
            node.meta["stack_trace"] = trace
        if layout is not None:
            shape, stride, dtype, requires_grad = layout
            val = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
            node.meta["val"] = val.requires_grad_(requires_grad)
    gm.recompile()


def as_loaded(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """`gm` as a cache hit in another process will load it: pickled and traced
    again, which renames its nodes. fusec compiles this copy on a miss, so that
    its warm-start key (which hashes the code, names and all) is the one a
    load computes. `gm` itself where it does not pickle (no entry is written)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    # AOTAutograd compiles under its fake mode, where an unpickled constant
    # would come back a fake tensor.
    with unset_fake_temporarily():
        try:
            rebuild, args = pickle.loads(pickle.dumps(_reduced(gm)))
            loaded = rebuild(*args)
        except Exception:  # noqa: BLE001 - AOTAutograd bypasses its cache for it too
            return gm
    _restore_node_meta(loaded, _node_meta(gm))
    return loaded


def caching_now() -> bool:
    """Whether this thread is inside `caching` (compiling for a cached entry)."""
    return getattr(_loading, "adopt", None) is not None


def cacheable(options: CompileOptions, static: bool) -> bool:
    """Whether AOTAutograd may cache what it makes for fusec of a graph whose
    sizes are `static` (no symbolic ones)."""
    from fusec.runtime import program_cache

    return (
        SUPPORTED
        and static
        and options.program_cache
        and options.cache is None
        and program_cache.enabled()
    )


def cache_key(options: CompileOptions) -> str:
    """What fusec adds to AOTAutograd's key: its fingerprint and its options."""
    from fusec.runtime import program_cache

    fields = sorted((f.name, repr(getattr(options, f.name))) for f in dataclasses.fields(options))
    return program_cache.digest(program_cache.fingerprint(), "aot-autograd", repr(fields))


@contextlib.contextmanager
def caching(gm: torch.fx.GraphModule, options: CompileOptions, adopt: Adopt) -> Iterator[None]:
    """AOTAutograd's cache on, bundled, keyed to fusec for the compile of `gm`
    inside; loaded entries compile their graphs through `adopt`."""
    setattr(gm, FUSEC_KEY_ATTR, cache_key(options))
    _loading.adopt = adopt
    try:
        # The backward compiles now, not at the first backward call: AOTAutograd
        # writes the entry once both halves have compiled, and by then this
        # patch would be gone. fusec compiles a graph at its first call anyway.
        with _functorch_config.patch(
            enable_autograd_cache=True,
            bundled_autograd_cache=True,
            force_non_lazy_backward_lowering=True,
        ):
            yield
    finally:
        _loading.adopt = None


def serializable(compile_graph: Callable[..., Any]) -> Any:
    """`compile_graph` as a compiler AOTAutograd may cache the output of."""
    from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler

    return SerializableAOTDispatchCompiler(FusecOutputCode, compile_graph)
