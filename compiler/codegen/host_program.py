"""The host program of IR: a compiled `func.func` made into a
`fusec.runtime.program.HostProgram`, and the provider of a group's GPU kernel.

This is the half of the host program that reads IR, so the runtime needs no
xDSL: building walks the IR once, and each step keeps its `recipe` (an op's
`OpInfo`, a guard's checks, a kernel's group), from which
`fusec.runtime.program_data` makes the program again in another process:

    func.func @f(%x, %w) {                         slots: 0=%x 1=%w 2=%c 3=%mm 4=%g
      %c = arith.constant 2.0 : f64                 consts: {2: 2.0}
      %mm = aten.mm %x, %w                          step torch.mm         (0, 1) -> (3,)
      %g = fusion.group (%a = %mm, %b = %c) {...}   step kernel "group_0" (3, 2) -> (4,)
      func.return %g                                outputs: (4,)
    }

A `fusion.group` runs as the kernel `kernels(group)` gives, or as a sub-program
of its body through PyTorch; `fusion.guard` becomes a check of precomputed
`InputCheck`s, and `scf.if` a step that runs its then- or else-program.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

import torch
from fusec.codegen.torch_ops import (
    CONSTANT_FACTORIES,
    has_torch_callable,
    op_info,
    reusable,
    torch_dtype,
)
from fusec.codegen.view_layouts import (
    VIEW_OPS,
    Layout,
    makes_root,
    root_layout,
    static_shape,
    view_layouts,
)
from fusec.dialects.aten import OpaqueOp
from fusec.dialects.fusion import GroupOp, GuardOp, YieldOp
from fusec.runtime.program import (
    HostProgram,
    InputCheck,
    RootHolder,
    Step,
    UnsupportedProgram,
    assemble,
    group_fn,
    guard_fn,
    if_fn,
    kernel_fn,
)
from fusec.runtime.torch_steps import (
    LEARN_VIEW,
    OpInfo,
    TorchStep,
    dtype_name,
    reused_result,
    step_callable,
)
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import FloatAttr, FunctionType, IntegerAttr, TensorType
from xdsl.ir import Block, Operation, Region, SSAValue

log = logging.getLogger("fusec")

KernelProvider = Callable[["GroupOp"], Callable[[Sequence[Any]], Sequence[Any]] | None]
"""Returns a group's kernel (inputs in group order -> outputs), or None to run the
group's body through PyTorch instead."""

OpaqueProvider = Callable[["OpaqueOp"], Callable[..., tuple[Any, ...]]]


def _constant_value(op: arith.ConstantOp) -> Any:
    attr = op.value
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, IntegerAttr):
        width = getattr(attr.type, "width", None)
        if width is not None and width.data == 1:
            return bool(attr.value.data)
        return int(attr.value.data)
    raise UnsupportedProgram(f"constant {attr} is not a Python scalar")


class _Builder(RootHolder):
    def __init__(
        self,
        kernels: KernelProvider,
        opaque: OpaqueProvider,
        exact_shapes: bool = False,
        contiguous_args: Collection[SSAValue] = (),
        autograd_graph: bool = False,
    ):
        self.kernels = kernels
        self.opaque = opaque
        self.exact_shapes = exact_shapes
        self.contiguous_args = contiguous_args
        """The function's arguments the specialization key says are contiguous
        (the same values wherever a region or group body takes them)."""
        self.autograd_graph = autograd_graph
        """A graph AOTAutograd hands over: see `build_program`."""

    def build(
        self,
        block: Block,
        returned: Sequence[SSAValue],
        args: Sequence[SSAValue] | None = None,
        contiguous_results: bool = False,
    ) -> HostProgram:
        """The program of `block`; `args` (default: the block's arguments) are the
        values it takes, e.g. what an `scf.if` region uses from outside.
        `contiguous_results` makes its results contiguous (a copy where they are not)."""
        slot: dict[SSAValue, int] = {}

        def new(v: SSAValue) -> int:
            slot[v] = len(slot)
            return slot[v]

        arg_slots = tuple(new(a) for a in (block.args if args is None else args))
        consts: dict[int, Any] = {}
        steps: list[Step] = []
        layouts: dict[SSAValue, Layout] = {}
        if self.exact_shapes:
            taken = block.args if args is None else args
            _add_roots(layouts, [a for a in taken if a in self.contiguous_args])
        out_values = set(returned)
        for at, op in enumerate(block.ops):
            if isinstance(op, func.ReturnOp | YieldOp | scf.YieldOp):
                break
            if isinstance(op, arith.ConstantOp):
                consts[new(op.result)] = _constant_value(op)
                continue
            if _unused_factory(op):
                continue
            branches: tuple[HostProgram, ...] = ()
            if isinstance(op, scf.IfOp):
                wanted = self.exact_shapes and _kernels_then(op)
                fn, ins, branches, roots = self.if_step(op, slot, wanted)
                kind, recipe = "if", ("if",)
                if roots:
                    _add_roots(layouts, op.results)
            else:
                view = self.view_step(op, layouts, slot, out_values)
                if view is not None:
                    fn, ins, kind, recipe = view
                else:
                    ins = tuple(slot[o] for o in op.operands)
                    fn, kind, recipe = self.step_fn(op)
                    if self.exact_shapes and makes_root(op, kind):
                        _add_roots(layouts, op.results)
            outs = tuple(new(r) for r in op.results)
            steps.append(Step(fn, ins, outs, (), kind, _step_name(op), branches, recipe, at))
        out_slots = tuple(slot[v] for v in returned)
        n_slots = len(slot)
        if contiguous_results and out_slots:
            n = len(out_slots)
            info = OpInfo(
                "contiguous",
                {},
                (True,) * n,
                (None,) * n,
                (None,) * n,
                None,
                TorchStep("contiguous"),
            )
            made = tuple(range(n_slots, n_slots + n))
            fn = step_callable(info)
            steps.append(Step(fn, out_slots, made, (), "torch", "contiguous", (), ("torch", info)))
            out_slots, n_slots = made, n_slots + n
        return assemble(n_slots, arg_slots, consts, _drop_unused_views(steps, out_slots), out_slots)

    def view_step(
        self,
        op: Operation,
        layouts: dict[SSAValue, Layout],
        slot: dict[SSAValue, int],
        out_values: set[SSAValue],
    ) -> tuple[Callable[..., Sequence[Any]], tuple[int, ...], str, Any] | None:
        """A view op whose input's layout is known, as a `reinterpret` step over
        its root (`fusec.codegen.view_layouts`); None to run it as it is."""
        if not self.exact_shapes or not isinstance(op, VIEW_OPS):
            return None
        x = layouts.get(op.operands[0])
        got = view_layouts(op, x) if x is not None else None
        if x is None or got is None:
            return self.learned_view(op, slot, out_values)
        layouts.update(zip(op.results, got, strict=True))
        if not self.autograd_graph and _returned_view_of_argument(op, out_values):
            return None
        info = OpInfo(
            op.name,
            {"views": [[list(v.sizes), list(v.strides), v.offset] for v in got]},
            (True,),
            (len(x.sizes),),
            tuple(dtype_name(torch_dtype(r.type)) for r in op.results),
            None,
            TorchStep("reinterpret"),
        )
        return step_callable(info), (slot[x.root],), "torch", ("torch", info)

    def learned_view(
        self,
        op: Operation,
        slot: dict[SSAValue, int],
        out_values: set[SSAValue],
    ) -> tuple[Callable[..., Sequence[Any]], tuple[int, ...], str, Any] | None:
        """A view op of static shapes whose input's layout is not known when the
        program is built (an opaque op's result): its step learns the views'
        strides from its first call and makes them again from those while the
        input's strides stay the same (`torch_steps.learned`)."""
        shapes = [static_shape(v.type) for v in (*op.operands, *op.results)]
        if any(s is None or not s for s in shapes):
            return None
        if _returned_view_of_argument(op, out_values):
            return None
        info = op_info(op)
        info = dataclasses.replace(info, props={**info.props, LEARN_VIEW: True})
        ins = (slot[op.operands[0]],)
        return step_callable(info), ins, "torch", ("torch", info)

    def step_fn(self, op: Operation) -> tuple[Callable[..., Sequence[Any]], str, Any]:
        """A step's function, kind and recipe."""
        if isinstance(op, GroupOp):
            kernel = self.kernels(op)
            body_of = functools.partial(self.build, op.body.block, list(op.yield_op.values))
            if kernel is not None:
                return kernel_fn(kernel, body_of), "kernel", ("kernel", op, body_of)
            body = body_of()
            if body.launches:
                raise UnsupportedProgram("a group nested in a group")
            return group_fn(body), "group", ("group", body)
        if isinstance(op, GuardOp):
            checks = tuple(
                input_check(v.type, spec) for v, spec in zip(op.inputs, op.specs.data, strict=True)
            )
            what = _guarded_name(op)
            return guard_fn(checks, what, op, self), "guard", ("guard", checks, what)
        if isinstance(op, OpaqueOp):
            node = op.node and op.node.data
            if reusable(op):
                return reused_result(self.opaque(op)), "opaque", ("opaque", node, "reused")
            return self.opaque(op), "opaque", ("opaque", node)
        if not has_torch_callable(op):
            raise UnsupportedProgram(f"no eager PyTorch implementation for {op.name}")
        info = op_info(op)
        return step_callable(info), "torch", ("torch", info)

    def if_step(
        self, op: scf.IfOp, slot: dict[SSAValue, int], roots: bool = False
    ) -> tuple[Callable[..., Sequence[Any]], tuple[int, ...], tuple[HostProgram, ...], bool]:
        """An `scf.if` step, and whether its results are roots: asked for (`roots`)
        and its then-program all kernels, its else-program's results are made
        contiguous, as the kernels make theirs, so the step's results have one
        layout whichever branch ran."""
        if len(op.false_region.blocks) != 1:
            raise UnsupportedProgram("scf.if without an else-region")
        captured = _captures(op.true_region, op.false_region)
        then = self.build(op.true_region.block, list(_yielded(op.true_region)), captured)
        roots = roots and all(s.kind == "kernel" for s in then.steps)
        other = self.build(op.false_region.block, list(_yielded(op.false_region)), captured, roots)
        return (
            if_fn(then, other, self),
            (slot[op.cond], *(slot[v] for v in captured)),
            (then, other),
            roots,
        )


def _add_roots(layouts: dict[SSAValue, Layout], values: Sequence[SSAValue]) -> None:
    """`values` as roots of the views after them (those of static shapes)."""
    for v in values:
        lay = root_layout(v)
        if lay is not None:
            layouts[v] = lay


def _returned_view_of_argument(op: Operation, out_values: set[SSAValue]) -> bool:
    """Whether view op `op` views a block argument (through other views) and a
    result of it leaves the program: it keeps eager's `_base` and
    `requires_grad`, which a reinterpreted tensor has not."""
    if not any(r in out_values for r in op.results):
        return False
    v = op.operands[0]
    while isinstance(v.owner, VIEW_OPS):
        v = v.owner.operands[0]
    return not isinstance(v.owner, Operation)


def _kernels_then(op: scf.IfOp) -> bool:
    """Whether the then-region of a guarded group is kernels whose results are
    roots (`view_layouts.makes_root`), yielded as they are."""
    ops = [o for o in op.true_region.block.ops if not isinstance(o, scf.YieldOp)]
    made = {r for o in ops for r in o.results}
    return (
        bool(ops)
        and all(isinstance(o, GroupOp) and makes_root(o, "kernel") for o in ops)
        and all(v in made for v in _yielded(op.true_region))
    )


_VIEW_KINDS = frozenset(
    ("reinterpret", "reshape", "transpose", "permute", "squeeze", "unsqueeze", "expand")
    + ("slice", "narrow", "split", "chunk")
)
"""Torch step kinds that only make views (or a reshape's copy): nothing but
their results is lost when those go unused."""


def _unused_factory(op: Operation) -> bool:
    """A `CONSTANT_FACTORIES` call nothing reads: GPT-2's position ids once
    their lookup is a view of the table (`fusec.frontend.position_embeddings`)."""
    return (
        isinstance(op, OpaqueOp)
        and op.target.data in CONSTANT_FACTORIES
        and not any(r.uses for r in op.results)
    )


def _drop_unused_views(steps: list[Step], out_slots: tuple[int, ...]) -> list[Step]:
    """`steps` less the view steps whose results nothing reads: the views a chain
    of `reinterpret` steps skips over."""
    used = set(out_slots)
    kept: list[Step] = []
    for step in reversed(steps):
        recipe = step.recipe
        view = step.kind == "torch" and recipe is not None and recipe[1].step.kind in _VIEW_KINDS
        if view and not used.intersection(step.outs):
            continue
        used.update(step.ins)
        kept.append(step)
    kept.reverse()
    return kept


def input_check(t: Any, spec: Any) -> InputCheck:
    """What a `fusion.guard` input of type `t` (a `TensorType`) and `spec` must be."""
    assert isinstance(t, TensorType)
    rank = t.get_num_dims()
    ones = set(spec.ones_dims)
    device = spec.device.data
    return InputCheck(
        torch_dtype(t),
        rank,
        tuple(d in ones for d in range(rank)),
        spec.layout.data == "contiguous",
        device,
        ":" in device,
    )


def _captures(*regions: Region) -> list[SSAValue]:
    """Values the regions use but do not define, in order of first use."""
    inside: set[SSAValue] = set()
    used: dict[SSAValue, None] = {}
    for region in regions:
        for op in region.walk():
            inside.update(op.results)
            for r in op.regions:
                for b in r.blocks:
                    inside.update(b.args)
        for b in region.blocks:
            inside.update(b.args)
    for region in regions:
        for op in region.walk():
            for v in op.operands:
                if v not in inside:
                    used.setdefault(v, None)
    return list(used)


def _yielded(region: Region) -> Sequence[SSAValue]:
    term = region.block.last_op
    if not isinstance(term, scf.YieldOp):
        raise UnsupportedProgram("scf.if region does not end with scf.yield")
    return term.operands


def _guarded_name(op: GuardOp) -> str:
    for use in op.ok.uses:
        user = use.operation
        if isinstance(user, scf.IfOp):
            for inner in user.true_region.block.ops:
                if isinstance(inner, GroupOp):
                    return _step_name(inner)
    return "fusion.guard"


def _step_name(op: Operation) -> str:
    if isinstance(op, OpaqueOp):
        return f"{op.target.data}"
    if isinstance(op, GroupOp):
        names = [o.name for o in op.body.block.ops if not isinstance(o, YieldOp)]
        return "group[" + ",".join(n.removeprefix("aten.") for n in names) + "]"
    if isinstance(op, scf.IfOp):
        then = [o for o in op.true_region.block.ops if not isinstance(o, scf.YieldOp)]
        return "if[" + ", ".join(_step_name(o) for o in then) + "]"
    return op.name


def build_program(
    function: func.FuncOp,
    kernels: KernelProvider,
    opaque: OpaqueProvider,
    exact_shapes: bool = False,
    contiguous_args: Sequence[bool] = (),
    autograd_graph: bool = False,
) -> HostProgram:
    """The host program of `function`; groups get their kernels from `kernels`.
    A program for `exact_shapes` (never run at other sizes) makes the views it
    can from sizes and strides (`fusec.codegen.view_layouts`), starting from
    kernel and matrix-product results and the arguments `contiguous_args` says
    are contiguous.

    In an `autograd_graph` (a forward, backward or inference graph AOTAutograd
    hands over) that includes views of the arguments it returns, as Inductor's
    `reinterpret_tensor` does: AOTAutograd makes a returned alias of an input
    again from that input, and saves the others for the backward detached. A
    view made by PyTorch costs that call, and then a `detach` per saved tensor
    (an unrolled LSTM's forward: 50 `squeeze` and 50 `detach`)."""
    block = function.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise UnsupportedProgram("function does not end with func.return")
    contiguous = {a for a, c in zip(block.args, contiguous_args, strict=False) if c}
    builder = _Builder(kernels, opaque, exact_shapes, contiguous, autograd_graph)
    program = builder.root = builder.build(block, list(ret.arguments))
    return program


def no_kernels(group: GroupOp) -> None:
    """A kernel provider that runs every group through PyTorch."""
    return None


# ---------------------------------------------------------------------- GPU kernels


class _TorchGroup:
    """A group's body run through PyTorch (built on first use): what a GPU
    kernel does instead when called with inputs that are not on one device."""

    def __init__(self, group: Any):
        self.group = group
        self.program: Callable[[Sequence[Any]], Sequence[Any]] | None = None

    def __call__(self, inputs: Sequence[Any]) -> Sequence[Any]:
        if self.program is None:
            self.program = group_program(self.group)
        return self.program(inputs)


def group_program(group: Any) -> Callable[[Sequence[Any]], Sequence[Any]]:
    """The host program of a `fusion.group`'s body, every op through PyTorch."""
    region = group.body.clone()
    block = region.block
    term = block.last_op
    assert term is not None
    block.insert_op_before(func.ReturnOp(*term.operands), term)
    block.erase_op(term)
    fn = func.FuncOp(
        "group", FunctionType.from_lists(block.arg_types, list(group.result_types)), region
    )

    def no_opaque(op: Any) -> Any:
        raise UnsupportedProgram(f"{op.name} inside a fusion.group")

    return build_program(fn, no_kernels, no_opaque)


def gpu_kernel_provider(cache: Any, tensors: Sequence[torch.Tensor]) -> Callable[[Any], Any]:
    """`fusec.compile`'s kernel provider for these (non-CPU) input tensors: GPU
    kernels for the arch of their device when they are all on one CUDA device
    and the driver and toolchain work; otherwise every group runs through PyTorch."""
    from fusec.runtime import cuda

    # A 0-dim CPU tensor goes with CUDA ones in PyTorch (the RNG seed and offset
    # that attention saves for its backward): it does not pick the device; a
    # kernel that reads one runs through PyTorch (`CudaKernel.call`'s fallback).
    on_device = [t for t in tensors if t.device.type != "cpu" or t.dim() > 0]
    device = cuda.common_cuda_device(on_device)
    if device is None:
        where = sorted({str(t.device) for t in tensors})
        log.info("fusec: inputs on %s: fused groups run through PyTorch", ", ".join(where))
        return lambda group: None
    reason = cuda.gpu_unusable_reason(device)
    if reason is not None:
        log.info(
            "fusec: no GPU kernels on cuda:%d (%s); groups run through PyTorch", device, reason
        )
        return lambda group: None
    arch = cuda.arch_of(device)

    def provide(group: Any) -> Callable[[Sequence[Any]], Sequence[Any]] | None:
        kernel = cache.kernel_for(group, arch)
        if kernel is None:
            return None
        try:
            kernel.function(device)  # load now: a driver error falls back at compile time
        except cuda.CudaError as e:
            log.warning(
                "fusec: cannot load a kernel on cuda:%d (%s); it runs through PyTorch", device, e
            )
            return None
        return functools.partial(kernel.call, fallback=_TorchGroup(group))

    return provide
