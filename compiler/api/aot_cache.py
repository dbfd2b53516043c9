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
Graphs with symbolic sizes are not cached (not tried: their recorded values
hold symbols of Dynamo's shape environment, which a load does not have), nor are
those compiled with a kernel cache object of the caller's
(`CompileOptions.cache`), which does not pickle. `FUSEC_PROGRAM_CACHE=0`, `program_cache=False` and
`torch.compiler.config.force_disable_caches` turn it off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch
import torch.fx

try:  # a torch with serializable compilers, bundled entries, eager backward lowering
    import torch._functorch.config as _functorch_config
    import torch.fx._graph_pickler  # noqa: F401 - the graph's pickle
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

log = logging.getLogger("fusec")

_loading = threading.local()


class FusecOutputCode(_OutputCode):
    """One ATen graph AOTAutograd handed to fusec, as the `OutputCode` its cache
    stores: called boxed (one list of arguments, cleared so that saved
    activations die early), pickled as the graph and the options that compile it.

        code = FusecOutputCode("forward", fw_gm, options, function)
        code([x, w])                 # function(x, w); the list is emptied
        loaded = pickle.loads(pickle.dumps(code))
        with caching(dynamo_gm, options, compilers.adopt):
            loaded.post_compile([], None, {})   # fw_gm compiled again, through `adopt`
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
        # The graph node for node, names, targets and recorded values kept
        # (`GraphPickler`; `GraphModule`'s own pickle traces its code again,
        # which renames nodes and bakes an argument-free `rand` into a
        # constant). `GraphPickler` keeps tensors as fake ones, so the graph's
        # constants (`get_attr`) go beside it, saved with their values. The
        # compiled function is this process's, made again on load.
        from torch.fx._graph_pickler import Options

        return {
            "kind": self.kind,
            "gm": _pickler().dumps(self.gm, Options(ops_filter=None)),
            "constants": _constants_data(self.gm),
            "class_name": type(self.gm).__name__,
            "options": self.options,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        from torch._subclasses.fake_tensor import FakeTensorMode
        from torch.fx._graph_pickler import GraphPickler

        loaded = GraphPickler.loads(state["gm"], FakeTensorMode())
        root = {**_constants(loaded), **_constants_from_data(state["constants"])}
        # A module of the graph as AOTAutograd made it: class name and all
        # (fusec's warm-start key reads it), real constants, a `forward`.
        gm = torch.fx.GraphModule(root, loaded.graph, class_name=state["class_name"])
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
        if adopt is not None:
            self.function = adopt(self.kind, self.gm)
            return
        # Loaded outside `caching` (AOTAutograd loads both halves inside it,
        # so nothing does today): the graph runs eagerly, never wrongly.
        log.warning("fusec: a cached %s graph was loaded outside fusec; it runs eagerly", self.kind)
        self.function = self.gm  # type: ignore[assignment]


@functools.cache
def _pickler() -> type:
    """`GraphPickler` saving each recorded value (`meta['val']`) of plain sizes as
    its sizes, strides and dtype, loaded as a meta tensor. A graph's importer
    reads only those of a static graph (the only ones cached), and loading a
    fake tensor is its fake mode's conversion (about 0.1 ms each, 2,900 of them
    in ViT-tiny's two graphs: most of the warm first call's load)."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.fx._graph_pickler import GraphPickler

    class RecordedValuePickler(GraphPickler):
        def reducer_override(self, obj: object) -> Any:
            if isinstance(obj, FakeTensor) and _plain_layout(obj):
                sizes, strides = tuple(obj.shape), tuple(obj.stride())
                return _recorded, (sizes, strides, obj.storage_offset(), str(obj.dtype))
            return super().reducer_override(obj)

    return RecordedValuePickler


def _plain_layout(t: torch.Tensor) -> bool:
    """Strided (a sparse tensor has no strides to ask for) with int sizes, strides
    and offset (no symbols)."""
    return t.layout == torch.strided and all(
        type(s) is int for s in (*t.shape, *t.stride(), t.storage_offset())
    )


def _recorded(
    sizes: tuple[int, ...], strides: tuple[int, ...], offset: int, dtype: str
) -> torch.Tensor:
    """A recorded value as loaded: a meta tensor of its layout and dtype."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    span = 1 + sum((n - 1) * st for n, st in zip(sizes, strides, strict=True)) if all(sizes) else 0
    with unset_fake_temporarily():
        base = torch.empty(
            offset + span, dtype=getattr(torch, dtype.removeprefix("torch.")), device="meta"
        )
        return base.as_strided(sizes, strides, offset)


def _constants(gm: torch.fx.GraphModule) -> dict[str, Any]:
    """The values of `gm`'s `get_attr` nodes, by target."""
    return {
        str(node.target): operator.attrgetter(str(node.target))(gm)
        for node in gm.graph.nodes
        if node.op == "get_attr"
    }


def _constants_data(gm: torch.fx.GraphModule) -> dict[str, tuple[str, str, tuple[int, ...], bytes]]:
    """`gm`'s tensor constants as (device, dtype, size, bytes). Not `torch.save`:
    AOTAutograd copies the entry under its fake mode, where a saved or loaded
    tensor comes back fake, and its data lost."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    data = {}
    with unset_fake_temporarily():
        for name, t in _constants(gm).items():
            if isinstance(t, torch.Tensor):
                flat = t.detach().cpu().contiguous().reshape(-1)
                # `tolist`, not `numpy()`: numpy is not one of fusec's dependencies.
                raw = bytes(flat.view(torch.uint8).tolist())
                data[name] = (str(t.device), str(t.dtype), tuple(t.shape), raw)
    return data


def _constants_from_data(
    data: dict[str, tuple[str, str, tuple[int, ...], bytes]],
) -> dict[str, torch.Tensor]:
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    out = {}
    with unset_fake_temporarily():
        for name, (device, dtype_name, shape, raw) in data.items():
            dtype = getattr(torch, dtype_name.removeprefix("torch."))
            flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else None
            t = torch.empty(0, dtype=dtype) if flat is None else flat.view(dtype)
            out[name] = t.reshape(shape).clone().to(device)
    return out


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
    outer = getattr(_loading, "adopt", None)
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
        _loading.adopt = outer  # a compile inside another's gets the outer one back


def serializable(compile_graph: Callable[..., Any]) -> Any:
    """`compile_graph` as a compiler AOTAutograd may cache the output of."""
    from torch._functorch._aot_autograd.schemas import SerializableAOTDispatchCompiler

    return SerializableAOTDispatchCompiler(FusecOutputCode, compile_graph)
