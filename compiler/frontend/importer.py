"""torch.fx -> `aten` dialect.

The importer runs the graph once on the example inputs, node by node, so every
value's dtype and shape is known, and turns each node into an `aten` op whose
inferred result types must agree with what PyTorch produced (when they do not,
the node becomes `aten.opaque`, which is always right):

    def f(x, y):                        func.func @f(%x: tensor<4x1xf32>, %y: tensor<3xf32>)
        return torch.sigmoid(x) * y  ->     %sigmoid = aten.sigmoid %x : ...
                                            %mul = aten.mul %sigmoid, %y : ...
                                            func.return %mul : tensor<4x3xf32>

Parameters and buffers become function arguments after the graph's own inputs;
Python scalars become `arith.constant` (f64/i64/i1) or, when they are inputs,
function arguments of those types. Sizes read from tensors (`x.size(0)`) are
folded into constants, which makes the result valid only for the example shapes
(`ImportedGraph.shape_dependent`), except where a whole size (`x.shape`,
`x.size()`) is returned or passed to an opaque op: there it is `aten.size %x`, a
runtime `torch.Size`, and the import stays valid for every shape. Cuts (chunk,
split, narrow, slices, integer indices) record which argument dims they cut
(`ImportedGraph.size_checks`): the import holds for sizes that cut alike.

ATen-level graphs (`torch.export`, AOTAutograd, `make_fx`) import the same way:
a node whose target is a `torch.ops.aten` OpOverload finds its builder in
`fusec.frontend.aten_table`. In a graph captured with symbolic sizes (Dynamo's SymInt
placeholders, `torch.export` with `dynamic_shapes`, make_fx's symbolic tracing) a
size is never a constant: every dim the graph records as a symbol is a dynamic
dim of its type (`tensor<?x16xf32>`, see `symbolic_type`), SymInts are i64
arguments, `x.size(d)` is `aten.sym_size`, a whole `x.size()` is `aten.size`; a
reshape to one symbolic size is `aten.reshape` to its `?` type (the size a `-1`
infers), and an op that would bake a size (a reshape to two symbolic sizes, a
split by a piece size of a symbolic dim) runs as `aten.opaque` over those runtime
values, so one program serves every shape. Any node that cannot be mapped runs through
PyTorch as `aten.opaque`, and the `fusec` logger says which node, op and why.

In-place pointwise ops (`x.add_(y)`, `torch.relu_(x)`, `F.relu(x, inplace=True)`,
`nn.ReLU(inplace=True)`, `x += y`, which `fusec.tracing` records as `operator.iadd`)
import as the out-of-place op and a write back:

    y.add_(1)   ->   %t = aten.add %y, %c ... ; aten.copy_ %y, %t

SSA values name tensors (buffers), not contents: the in-place node's own value is
`%y` again, and every later read of `%y` (through `y` or the in-place node) sees
the written contents, as in eager; `functionalize` then turns the writes to
unaliased fresh values back into plain SSA. In-place ops with no pointwise form
run as `aten.opaque` only on a fresh pointwise value nobody else reads; anything
else raises `UnsupportedGraph` (the graph runs eagerly). The import-time run works
on clones of the inputs when the graph writes in place, so it never mutates the
caller's tensors.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
import torch.nn.functional as F
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.opmath import mark_steps
from fusec.graph_values import Const, Ret
from fusec.size_checks import SizeCheck, dim_sources
from fusec.torch_ops import DTYPES_OF_TORCH
from fusec.tracing import UnsupportedGraph, trace
from torch import nn
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    FloatAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

log = logging.getLogger("fusec")


class _NotMapped(Exception):
    """This node has no `aten` form; it becomes `aten.opaque`."""


def _why_opaque(e: Exception, node: torch.fx.Node) -> str:
    """The reason a node became `aten.opaque`, for `fusec.explain`."""
    if isinstance(e, _NotMapped):
        msg = str(e)
        if msg == _target_name(node):
            return f"no aten op for {msg}"
        if msg.startswith("dtype "):
            return f"unsupported {msg}"
        return msg
    return f"its aten form does not verify here: {type(e).__name__}: {e}"


@dataclass(frozen=True)
class OperandRef:
    """Marks where an opaque call's i-th runtime operand goes in its arguments."""

    index: int


@dataclass
class OpaqueCall:
    """How to run one `aten.opaque` op: the original fx target and arguments."""

    kind: str
    target: Any
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    multi: bool
    kept: tuple[int, ...] | None = None
    """For a multi-result call with None among its results (ATen backward ops with
    an output mask): the positions of the results that are values."""

    def bind(self, root: nn.Module) -> Callable[..., tuple[Any, ...]]:
        """A callable over the op's runtime operands that returns its results."""
        if self.kind == "call_module":
            fn: Callable[..., Any] = root.get_submodule(self.target)
        elif self.kind == "call_method":
            name = self.target

            def fn(obj: Any, *args: Any, **kwargs: Any) -> Any:
                return getattr(obj, name)(*args, **kwargs)
        else:
            fn = self.target
        args, kwargs, multi, kept = self.args, self.kwargs, self.multi, self.kept

        def fill(a: Any, ops: Sequence[Any]) -> Any:
            if isinstance(a, OperandRef):
                return ops[a.index]
            if isinstance(a, tuple | list):
                return type(a)(fill(x, ops) for x in a)
            if isinstance(a, dict):
                return {k: fill(v, ops) for k, v in a.items()}
            return a

        def call(*ops: Any) -> tuple[Any, ...]:
            r = fn(*fill(args, ops), **fill(kwargs, ops))
            if r is None:
                return ()
            if kept is not None:
                return tuple(r[i] for i in kept)
            return tuple(r) if multi else (r,)

        return call


@dataclass
class ImportedGraph:
    """An imported graph and what the runtime needs to run it."""

    module: ModuleOp
    func: func.FuncOp
    inputs: list[tuple[str, Any]]
    """One entry per function argument: ("arg", i) is the caller's i-th argument,
    ("attr", "lin.weight") a parameter or buffer read from the module each call."""
    outputs: Any
    """The output structure: `Ret(i)` for the i-th returned value, `Const` leaves."""
    opaque: dict[str, OpaqueCall] = field(default_factory=dict)
    shape_dependent: bool = False
    origins: dict[Operation, torch.fx.Node] = field(default_factory=dict)
    """The fx node each imported op came from (for explanations and logs)."""
    opaque_reasons: dict[str, str] = field(default_factory=dict)
    """Why a node (by name) became `aten.opaque`."""
    size_checks: tuple[SizeCheck, ...] = ()
    """Classes of argument sizes the import depends on (`fusec.size_checks`)."""


def tensor_type(t: torch.Tensor) -> TensorType:
    try:
        dt = DTYPES_OF_TORCH[t.dtype]
    except KeyError:
        raise _NotMapped(f"dtype {t.dtype}") from None
    return TensorType(dt, list(t.shape))


def value_type(v: Any) -> Attribute:
    """The IR type of a runtime value (a tensor or a Python scalar)."""
    if isinstance(v, torch.Tensor):
        return tensor_type(v)
    if isinstance(v, bool):
        return inf.BOOL
    if isinstance(v, int):
        return inf.I64
    if isinstance(v, float):
        return inf.F64
    raise _NotMapped(f"value of type {type(v).__name__}")


def _recorded(node: torch.fx.Node | None) -> Any:
    """What Dynamo (`example_value`) or make_fx/export/AOTAutograd (`val`)
    recorded for `node`: FakeTensors whose sizes may be SymInts."""
    if node is None:
        return None
    return node.meta.get("val", node.meta.get("example_value"))


def _is_symbol(size: Any) -> bool:
    """A recorded size that is a symbol, not a size Dynamo specialized."""
    return isinstance(size, torch.SymInt) and size.node.maybe_as_int() is None


def symbolic_type(value: Any, recorded: Any) -> Attribute:
    """`value_type(value)` with a dynamic dim (`?`) wherever the recorded value's
    size is a symbol: the size is a runtime value of the program, not this call's.
    A size 1 stays 1: programs are selected by their inputs' size-1 dims (and
    guarded on them), so every call this program serves has a 1 there.

        value: f32[4, 16], recorded: FakeTensor f32[s0, 16]  ->  tensor<?x16xf32>
    """
    t = value_type(value)
    if not isinstance(t, TensorType) or not isinstance(recorded, torch.Tensor):
        return t
    sizes = list(recorded.shape)
    if len(sizes) != t.get_num_dims():
        return t
    shape = [
        inf.DYNAMIC if d != 1 and _is_symbol(s) else d
        for d, s in zip(t.get_shape(), sizes, strict=True)
    ]
    return TensorType(t.get_element_type(), shape)


def _is_scalar(v: Any) -> bool:
    return isinstance(v, bool | int | float)


_MUTATING_OPS = {
    operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
    operator.imod, operator.ipow, operator.iand, operator.ior, operator.ixor,
    operator.ilshift, operator.irshift,
}  # fmt: skip
_SHAPE_QUERIES = {"size", "dim", "numel", "ndimension", "shape", "dtype", "device", "ndim"}


class _Importer:
    def __init__(self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any]):
        self.gm = gm
        self.example_inputs = list(example_inputs)
        self.block = Block()
        self.env: dict[torch.fx.Node, Any] = {}
        self.real: dict[torch.fx.Node, Any] = {}
        self.inputs: list[tuple[str, Any]] = []
        self.attr_args: dict[str, SSAValue] = {}
        self.opaque: dict[str, OpaqueCall] = {}
        self.shape_dependent = False
        self.size_checks: list[SizeCheck] = []
        self.node: torch.fx.Node | None = None
        self.origins: dict[Operation, torch.fx.Node] = {}
        self.opaque_reasons: dict[str, str] = {}
        self.verified: set[Operation] = set()
        self.eager_results: list[SSAValue] = []
        """Values a handler computes as eager ops of their own (rounded to their
        dtype), not as op-math steps of the node's operator (`mark_opmath_steps`)."""
        """Ops verified as they were imported (`check_types`), not again at the end."""
        self.symbolic = _has_symbolic_sizes(gm)
        """The graph was captured with symbolic sizes (Dynamo `dynamic=True`, SymInt
        inputs): sizes are runtime values, so no op may bake one of this call's."""

    def symbolic_reshape(
        self, x: Any, op_cls: type[aten.ReshapeLikeOp] = aten.ReshapeOp
    ) -> SSAValue | None:
        """In a graph with symbolic sizes, a reshape (`view`, `reshape`, `flatten`)
        whose result has at most one symbolic size: `op_cls` (`aten.reshape` or
        `aten.view`) to its recorded type, the `?` size inferred at run time as a
        `-1` would be. None when the graph is static; `_NotMapped` when the result
        has several symbolic sizes (only the sizes' runtime values could say them:
        it runs as `aten.opaque`)."""
        if not self.symbolic:
            return None
        t = self.result_type()
        if not isinstance(t, TensorType):
            raise _NotMapped("expected a tensor")
        shape = list(t.get_shape())
        if not inf.reshape_infers(shape):
            raise _NotMapped("a reshape to several symbolic sizes needs their runtime values")
        return self.add_op(op_cls(self.tensor(x), shape)).results[0]

    def bakes_size(self, what: str) -> None:
        """The op being imported fixes a size of these example inputs in the IR.

        With symbolic sizes the op runs as `aten.opaque` over its runtime operands
        instead, so one program keeps serving every shape; otherwise the program
        is selected by exact input shapes from now on."""
        if self.symbolic:
            raise _NotMapped(f"{what} would fix a symbolic size")
        self.shape_dependent = True

    # ------------------------------------------------------------------ values

    def type_of(self, value: Any, recorded: Any) -> Attribute:
        """The IR type of a value the graph computed: with symbolic sizes, its
        symbolic dims are `?` (`symbolic_type`); otherwise this call's sizes."""
        if self.symbolic:
            return symbolic_type(value, recorded)
        return value_type(value)

    def result_types(self) -> list[Attribute]:
        """The IR types of the current node's results (a tuple or list of tensors)."""
        assert self.node is not None
        value, recorded = self.real[self.node], _recorded(self.node)
        if not isinstance(recorded, tuple | list) or len(recorded) != len(value):
            recorded = [None] * len(value)
        return [self.type_of(v, r) for v, r in zip(value, recorded, strict=True)]

    def result_type(self) -> Attribute:
        """The IR type of the current node's single result."""
        assert self.node is not None
        return self.type_of(self.real[self.node], _recorded(self.node))

    def add_op(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def new_arg(self, t: Attribute, source: tuple[str, Any], hint: str) -> SSAValue:
        arg = self.block.insert_arg(t, len(self.block.args))
        arg.name_hint = _hint(hint)
        self.inputs.append(source)
        return arg

    def constant(self, v: Any) -> SSAValue:
        if isinstance(v, bool):
            attr: Attribute = IntegerAttr(int(v), inf.BOOL)
        elif isinstance(v, int):
            attr = IntegerAttr(v, inf.I64)
        elif isinstance(v, float):
            attr = FloatAttr(v, inf.F64)
        else:
            raise _NotMapped(f"constant of type {type(v).__name__}")
        return self.add_op(arith.ConstantOp(attr)).results[0]

    def operand(self, a: Any) -> SSAValue:
        """An SSA value for a tensor or scalar argument."""
        if isinstance(a, torch.fx.Node):
            v = self.env[a]
            if isinstance(v, SSAValue):
                return v
            if isinstance(v, Const):
                if v.symbolic:
                    raise _NotMapped(f"{a.name} holds symbolic sizes")
                if v.from_shape:
                    self.shape_dependent = True
                return self.constant(v.value)
            raise _NotMapped(f"{a.name} is not a single value")
        if _is_scalar(a):
            return self.constant(a)
        raise _NotMapped(f"argument {a!r}")

    def size_check(self, v: SSAValue, dim: int, kind: str, params: tuple[int, ...] = ()) -> None:
        """The import holds only for argument sizes that cut `v` at `dim` as
        the example's did (see `fusec.size_checks`)."""
        assert isinstance(v.type, TensorType)
        sources = dim_sources(v, dim % max(v.type.get_num_dims(), 1))
        if sources is None:
            self.shape_dependent = True
            return
        args = [s for s in self.inputs if s[0] != "skip"]
        for k, d in sources:
            where, index = args[k]
            if where == "arg":  # parameters keep their shapes
                self.size_checks.append(SizeCheck(index, d, kind, params))

    def tensor(self, a: Any) -> SSAValue:
        v = self.operand(a)
        if not isinstance(v.type, TensorType):
            raise _NotMapped("expected a tensor")
        return v

    def const(self, a: Any) -> Any:
        """A Python value known at import time (sizes, dims, dtypes)."""
        if isinstance(a, torch.fx.Node):
            v = self.env[a]
            if not isinstance(v, Const) or v.symbolic:
                raise _NotMapped(f"{a.name} is not known at import time")
            if v.from_shape:
                self.shape_dependent = True
            return v.value
        if isinstance(a, tuple | list):
            return type(a)(self.const(x) for x in a)
        return a

    # ------------------------------------------------------------------ driver

    def run(self, name: str) -> ImportedGraph:
        writes = any(
            n.op not in ("placeholder", "get_attr", "output") and self.mutates(n)
            for n in self.gm.graph.nodes
        )
        clones: dict[Any, Any] = {}
        if writes:
            # One clone per distinct tensor, so inputs passed twice still alias.
            self.example_inputs = [_clone(v, clones) for v in self.example_inputs]
        placeholders = iter(self.example_inputs)
        output: Any = None
        for node in self.gm.graph.nodes:
            self.node = node
            if node.op == "placeholder":
                try:
                    value = next(placeholders)
                except StopIteration:
                    raise UnsupportedGraph(f"no example input for {node.name}") from None
                self.real[node] = value
                self.env[node] = self.import_input(node, value)
            elif node.op == "get_attr":
                value = _fetch_attr(self.gm, node.target)
                if writes:
                    value = _clone(value, clones)
                self.real[node] = value
                self.env[node] = self.import_attr(node.target, value)
            elif node.op == "output":
                output = node.args[0]
            else:
                self.import_call(node)
        results: list[SSAValue] = []
        outputs = self.output_structure(output, results)
        # An integer division raises on a zero divisor even where its quotient is
        # never used, as eager computes it anyway: an extra (ignored) result keeps
        # every pass from dropping it as dead code.
        returned = set(results)
        for op in self.block.ops:
            if (
                isinstance(op, aten.DivOp)
                and op.rounding_mode is not None
                and not inf.is_float(op.result.type.get_element_type())
                and op.result not in returned
            ):
                results.append(op.result)
                returned.add(op.result)
        self.add_op(func.ReturnOp(*results))
        ftype = FunctionType.from_lists(
            [a.type for a in self.block.args], [r.type for r in results]
        )
        f = func.FuncOp(_hint(name), ftype, Region(self.block))
        module = ModuleOp([f])
        try:
            _verify_except(module, self.verified)
        except VerifyException as e:
            raise UnsupportedGraph(f"imported IR does not verify: {e}") from e
        # In a graph with symbolic sizes, the sizes that are still constants are
        # those Dynamo specialized and guards itself; symbolic ones never became
        # constants (`bakes_size`), so the program serves every shape.
        shape_dependent = self.shape_dependent and not self.symbolic
        return ImportedGraph(
            module,
            f,
            self.inputs,
            outputs,
            self.opaque,
            shape_dependent,
            self.origins,
            self.opaque_reasons,
            tuple(dict.fromkeys(self.size_checks)),
        )

    def import_input(self, node: torch.fx.Node, value: Any) -> Any:
        # Inputs are numbered by placeholder position, constants included.
        index = sum(1 for s in self.inputs if s[0] in ("arg", "skip"))
        if isinstance(value, torch.Tensor):
            try:
                t = self.type_of(value, _recorded(node))
            except _NotMapped as e:
                raise UnsupportedGraph(f"input {node.name}: {e}") from None
        elif _is_scalar(value):
            t = value_type(value)
        else:
            # Not a tensor nor a scalar (None, a list, ...): the specialization
            # includes its value, so it is a constant here.
            self.inputs.append(("skip", index))
            return Const(value)
        return self.new_arg(t, ("arg", index), node.name)

    def import_attr(self, qualname: str, value: Any) -> Any:
        if qualname in self.attr_args:
            return self.attr_args[qualname]
        if isinstance(value, torch.Tensor):
            try:
                arg = self.new_arg(tensor_type(value), ("attr", qualname), qualname)
            except _NotMapped as e:
                raise UnsupportedGraph(f"attribute {qualname}: {e}") from None
            self.attr_args[qualname] = arg
            return arg
        return Const(value)

    def output_structure(self, a: Any, results: list[SSAValue]) -> Any:
        if isinstance(a, torch.fx.Node):
            v = self.env[a]
            return self.output_structure(v, results)
        if isinstance(a, SSAValue):
            results.append(a)
            return Ret(len(results) - 1)
        if isinstance(a, Const):
            if a.source is not None:
                return self.output_structure(self.size_of(a.source), results)
            if a.symbolic:
                raise UnsupportedGraph("a returned value holds symbolic sizes")
            if a.from_shape:
                self.shape_dependent = True
            return a
        if isinstance(a, tuple | list):
            return type(a)(self.output_structure(x, results) for x in a)
        if isinstance(a, dict):
            return {k: self.output_structure(v, results) for k, v in a.items()}
        return Const(a)

    # ------------------------------------------------------------------ calls

    def size_of(self, tensor: SSAValue) -> SSAValue:
        return self.add_op(aten.SizeOp(tensor)).results[0]

    def import_call(self, node: torch.fx.Node) -> None:
        in_place = self.mutates(node) and isinstance(self.real.get(node.args[0]), torch.Tensor)
        args, kwargs = _map_args(node, self.real)
        if node.op == "call_function":
            value = node.target(*args, **kwargs)
        elif node.op == "call_method":
            value = getattr(args[0], node.target)(*args[1:], **kwargs)
        elif node.op == "call_module":
            value = self.gm.get_submodule(node.target)(*args, **kwargs)
        else:
            raise UnsupportedGraph(f"unknown node kind {node.op}")
        self.real[node] = value

        folded = self.fold_symbolic(node, value) if self.symbolic else None
        if folded is None:
            folded = self.fold(node, value)
        if folded is not None:
            self.env[node] = folded
            return
        mark = self.block.last_op
        saved = self.shape_dependent
        try:
            if in_place:
                self.env[node] = self.map_in_place(node, value)
            else:
                self.env[node] = self.map_node(node, value)
        except (
            _NotMapped,
            VerifyException,
            KeyError,
            TypeError,
            ValueError,
            IndexError,
            AttributeError,
            AssertionError,
            RuntimeError,
        ) as e:
            log.info(
                "fusec: %s (%s) runs through PyTorch as aten.opaque: %s",
                node.name,
                _target_name(node),
                e if str(e) else type(e).__name__,
            )
            self.rollback(mark)
            self.shape_dependent = saved
            if in_place:
                self.check_opaque_mutation(node)
            self.opaque_reasons[node.name] = _why_opaque(e, node)
            self.env[node] = self.make_opaque(node, value)
        op = self.block.first_op if mark is None else mark.next_op
        while op is not None:
            self.origins[op] = node
            op = op.next_op

    def mark_opmath_steps(self, start: Operation | None, results: Sequence[Any]) -> None:
        """The ops after `start` are one eager operator written out: all but those
        computing its `results` are op-math steps (`fusec.dialects.opmath`), which a
        kernel keeps in float32 as eager's one kernel does."""
        new: list[Operation] = []
        op = self.block.first_op if start is None else start.next_op
        while op is not None:
            new.append(op)
            op = op.next_op
        own = [r for r in results if isinstance(r, SSAValue)] + self.eager_results
        self.eager_results = []
        mark_steps(new, own)

    def rollback(self, mark: Operation | None) -> None:
        self.eager_results = []
        while self.block.last_op is not mark:
            op = self.block.last_op
            assert op is not None
            op.detach()
            op.erase(safe_erase=False)

    def mutates(self, node: torch.fx.Node) -> bool:
        """Does `node` write its first argument in place?"""
        if not node.args or not isinstance(node.args[0], torch.fx.Node):
            return False
        if node.op == "call_function":
            if isinstance(node.target, torch._ops.OpOverload):
                # `aten::add_`: ATen names its in-place overloads with a trailing _
                return node.target._schema.name.endswith("_")
            fn_name = getattr(node.target, "__name__", "")
            # `operator.and_`/`or_`/`xor_` (`a & b`) are out of place; the operator
            # module's in-place functions are `iand`, `iadd`, ... (`_MUTATING_OPS`).
            from_operator = getattr(node.target, "__module__", None) in ("_operator", "operator")
            return (
                node.target in _MUTATING_OPS
                or node.kwargs.get("inplace") is True
                or (fn_name.endswith("_") and not fn_name.startswith("_") and not from_operator)
            )
        if node.op == "call_method":
            return str(node.target).endswith("_") and not str(node.target).startswith("_")
        if node.op == "call_module":
            return getattr(self.gm.get_submodule(node.target), "inplace", False) is True
        return False

    def map_in_place(self, node: torch.fx.Node, value: Any) -> SSAValue:
        """`x.op_(...)` -> `%t = aten.op %x, ...; aten.copy_ %x, %t`; the node is `%x`."""
        dst = self.tensor(node.args[0])
        handler = _handler_for(node, self.gm)
        if handler is None:
            raise _NotMapped(_target_name(node))
        start = self.block.last_op
        if node.op == "call_module":
            result = handler(self, self.gm.get_submodule(node.target), *node.args, **node.kwargs)
        else:
            result = handler(self, *node.args, **node.kwargs)
        if not isinstance(result, SSAValue) or not isinstance(result.owner, Operation):
            raise _NotMapped("in-place op without a single result")
        self.mark_opmath_steps(start, (result,))
        if not result.owner.has_trait(aten.Pointwise):
            raise _NotMapped("in-place op that is not pointwise")
        dst_type = dst.type
        assert isinstance(dst_type, TensorType) and isinstance(result.type, TensorType)
        if result.type.get_shape() != dst_type.get_shape():
            raise _NotMapped("in-place result broadcasts beyond its destination")
        if result.type != dst_type:  # `x.mul_(y)` keeps x's dtype: the result is cast back
            result = self.add_op(aten.ToOp(result, dst_type.get_element_type())).results[0]
        result.owner.verify()  # pyright: ignore[reportOptionalMemberAccess]
        if result.name_hint is None:
            result.name_hint = _hint(node.name)
        self.add_op(aten.CopyOp(dst, result))
        self.check_types(dst, value, _recorded(node))
        return dst

    def check_opaque_mutation(self, node: torch.fx.Node) -> None:
        """An in-place op with no pointwise form runs as `aten.opaque`, which the
        passes cannot see write; that is safe only for a fresh value nobody else reads."""
        src = node.args[0]
        assert isinstance(src, torch.fx.Node)
        v = self.env.get(src)
        fresh = (
            isinstance(v, SSAValue)
            and isinstance(v.owner, Operation)
            and v.owner.has_trait(aten.Pointwise)
            and len(src.users) == 1
        )
        if not fresh:
            raise UnsupportedGraph(
                f"{node.name} mutates {src.name} in place, which is read elsewhere or aliased"
            )

    def fold_symbolic(self, node: torch.fx.Node, value: Any) -> Any:
        """Sizes of a graph with symbolic shapes: `x.size(d)` and `x.shape[d]` are
        `aten.sym_size` (a runtime i64); a whole `x.size()` is a `Const` that only
        `aten.size` may read (`Const.symbolic`). Other values are left to `fold`."""
        recorded = node.meta.get("example_value", node.meta.get("val"))
        if not _holds_symbol(recorded):
            return None
        is_query = (node.op == "call_method" and node.target in _SHAPE_QUERIES) or (
            node.op == "call_function" and node.target is getattr and node.args[1] in _SHAPE_QUERIES
        )
        first = node.args[0] if node.args and isinstance(node.args[0], torch.fx.Node) else None
        base = self.env.get(first) if first is not None else None
        if is_query and node.target in ("size", "shape", getattr) and isinstance(base, SSAValue):
            dims = node.args[1:] if node.op == "call_method" else ()
            dim = node.kwargs.get("dim", dims[0] if dims else None)
            if dim is None:
                return Const(value, True, self.size_source(node, value), symbolic=True)
            return self.add_op(aten.SymSizeOp(base, self.const(dim))).results[0]
        if (
            node.op == "call_function"
            and node.target is operator.getitem
            and isinstance(base, Const)
            and base.symbolic
            and base.source is not None
            and isinstance(node.args[1], int)
        ):
            return self.add_op(aten.SymSizeOp(base.source, node.args[1])).results[0]
        if is_query:  # numel() and the like: read per call, through PyTorch
            return self.make_opaque(node, value)
        return None

    def fold(self, node: torch.fx.Node, value: Any) -> Const | None:
        """Sizes, dtypes and arithmetic on known values are constants."""
        if node.op == "call_method" and node.target in _SHAPE_QUERIES:
            return Const(value, from_shape=True, source=self.size_source(node, value))
        if node.op == "call_function" and node.target is getattr and node.args[1] in _SHAPE_QUERIES:
            return Const(value, from_shape=True, source=self.size_source(node, value))
        if isinstance(value, torch.Tensor) or node.op == "call_module":
            return None
        if node.op == "call_function" and node.target is operator.getitem:
            base = self.env[node.args[0]]
            if isinstance(base, tuple) and isinstance(node.args[1], int):
                return None
        leaves = [a for a in _flat_nodes((node.args, node.kwargs))]
        if all(isinstance(self.env[a], Const) for a in leaves):
            from_shape = any(self.env[a].from_shape for a in leaves)
            if isinstance(value, tuple) and any(isinstance(x, torch.Tensor) for x in value):
                return None
            # Arithmetic on symbolic sizes stays symbolic (never a constant),
            # unless the graph records its result as a fixed int (`x.shape[-1]`
            # of a dim Dynamo specialized).
            symbolic = any(self.env[a].symbolic for a in leaves)
            recorded = node.meta.get("example_value", node.meta.get("val"))
            if symbolic and isinstance(recorded, int | torch.SymInt) and not _is_symbol(recorded):
                symbolic = False
            return Const(value, from_shape, symbolic=symbolic)
        return None

    def size_source(self, node: torch.fx.Node, value: Any) -> SSAValue | None:
        """The tensor a whole size (`x.shape`, `x.size()`) is read from, if any."""
        whole = len(node.args) == (1 if node.op == "call_method" else 2) and not node.kwargs
        if not whole or not isinstance(value, torch.Size):
            return None
        base = node.args[0]
        v = self.env.get(base) if isinstance(base, torch.fx.Node) else None
        return v if isinstance(v, SSAValue) and isinstance(v.type, TensorType) else None

    def make_opaque(self, node: torch.fx.Node, value: Any) -> Any:
        multi = isinstance(value, tuple | list)
        values = list(value) if multi else [value]
        if value is None:  # run for its effect (e.g. a grad-mode switch); nothing flows
            multi, values = True, []
        kept = None
        if multi and any(v is None for v in values):
            kept = tuple(i for i, v in enumerate(values) if v is not None)
            values = [values[i] for i in kept]
        recorded = _recorded(node)
        if multi and isinstance(recorded, tuple | list) and len(recorded) == len(value):
            records = [r for r in recorded if kept is None or r is not None]
        else:
            records = [None if multi else recorded] * len(values)
        if len(records) != len(values):
            records = [None] * len(values)
        try:
            result_types = [self.type_of(v, r) for v, r in zip(values, records, strict=True)]
        except _NotMapped as e:
            raise UnsupportedGraph(f"{node.name} ({_target_name(node)}) returns {e}") from None
        operands: list[SSAValue] = []

        def template(a: Any) -> Any:
            if isinstance(a, torch.fx.Node):
                v = self.env[a]
                if isinstance(v, Const) and v.source is not None:
                    return template_value(self.size_of(v.source))
                if isinstance(v, Const) and v.symbolic:
                    raise UnsupportedGraph(f"{a.name} holds symbolic sizes that {node.name} reads")
                if isinstance(v, Const):
                    if v.from_shape:
                        self.shape_dependent = True
                    return v.value
                if isinstance(v, tuple):
                    return tuple(template_value(x) for x in v)
                return template_value(v)
            if isinstance(a, tuple | list):
                return type(a)(template(x) for x in a)
            if isinstance(a, dict):
                return {k: template(x) for k, x in a.items()}
            return a

        def template_value(v: SSAValue) -> OperandRef:
            operands.append(v)
            return OperandRef(len(operands) - 1)

        args = template(node.args)
        kwargs = template(dict(node.kwargs))
        op = aten.OpaqueOp(_target_name(node), operands, result_types, node=node.name)
        self.add_op(op)
        for r in op.results:
            r.name_hint = _hint(node.name)
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            from fusec.frontend.aten_table import OPAQUE_SUBSTITUTES

            target = OPAQUE_SUBSTITUTES.get(target, target)
        self.opaque[node.name] = OpaqueCall(node.op, target, args, kwargs, multi, kept)
        if value is None:
            return Const(None)
        if kept is not None:
            results = iter(op.results)
            return tuple(next(results) if i in kept else Const(None) for i in range(len(value)))
        return tuple(op.results) if multi else op.results[0]

    def map_node(self, node: torch.fx.Node, value: Any) -> Any:
        handler = _handler_for(node, self.gm)
        if handler is None:
            raise _NotMapped(_target_name(node))
        start = self.block.last_op
        if node.op == "call_module":
            mod = self.gm.get_submodule(node.target)
            result = handler(self, mod, *node.args, **node.kwargs)
        elif node.op == "call_method":
            result = handler(self, *node.args, **node.kwargs)
        else:
            result = handler(self, *node.args, **node.kwargs)
        self.check_types(result, value, _recorded(node))
        self.mark_opmath_steps(start, result if isinstance(result, tuple) else (result,))
        hint = _hint(node.name)
        for r in result if isinstance(result, tuple) else (result,):
            if isinstance(r, SSAValue) and r.name_hint is None and isinstance(r.owner, Operation):
                r.name_hint = hint
        return result

    def check_types(self, result: Any, value: Any, recorded: Any = None) -> None:
        if result is None and value is None:
            return  # an output the op leaves out (`output_mask` False), as PyTorch did
        if isinstance(result, tuple):
            if not isinstance(value, tuple | list) or len(value) != len(result):
                raise _NotMapped("result arity differs")
            if not isinstance(recorded, tuple | list) or len(recorded) != len(value):
                recorded = [None] * len(value)
            for r, v, rec in zip(result, value, recorded, strict=True):
                self.check_types(r, v, rec)
            return
        # With symbolic sizes the inferred type must say `?` exactly where the
        # recorded size is a symbol: a static size there would be this call's.
        want = self.type_of(value, recorded)
        if not isinstance(result, SSAValue) or result.type != want:
            raise _NotMapped(f"inferred {getattr(result, 'type', result)}, PyTorch gave {want}")
        if isinstance(result.owner, Operation):
            result.owner.verify()
            self.verified.add(result.owner)

    def attr_operand(self, module_path: str, name: str, value: Any) -> SSAValue | None:
        if value is None:
            return None
        qual = f"{module_path}.{name}" if module_path else name
        v = self.import_attr(qual, value)
        assert isinstance(v, SSAValue)
        return v


def _holds_symbol(v: Any) -> bool:
    """Whether a recorded value is, or holds, a SymInt (a size Dynamo kept symbolic;
    a SymInt that is a known constant, such as a specialized dim, is not)."""
    if isinstance(v, torch.SymInt):
        return _is_symbol(v)
    if isinstance(v, torch.SymFloat | torch.SymBool):
        return True
    if isinstance(v, torch.Size | tuple | list):
        return any(_holds_symbol(x) for x in v)
    return False


def _has_symbolic_sizes(gm: torch.fx.GraphModule) -> bool:
    """Whether Dynamo or make_fx captured `gm` with symbolic sizes (SymInt
    placeholders or tensors whose recorded sizes are symbols)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        v = node.meta.get("example_value", node.meta.get("val"))
        if isinstance(v, torch.SymInt):
            return True
        if isinstance(v, torch.Tensor) and any(
            isinstance(s, torch.SymInt) for s in (*v.shape, *v.stride())
        ):
            return True
    return False


def _clone(v: Any, clones: dict[Any, Any]) -> Any:
    """`v`, or for a tensor a copy with the same layout over a copy of its
    storage (one copy per storage): sizes, strides, stride-0 dims and aliasing
    between inputs stay as the caller's, so in-place writes behave (and raise,
    e.g. into an expanded tensor) as they would on the caller's tensors."""
    if not isinstance(v, torch.Tensor):
        return v
    if id(v) not in clones:
        if v.layout != torch.strided or v.is_quantized or v.is_nested:
            clones[id(v)] = v.clone()
        else:
            storage = v.untyped_storage()
            key = ("storage", storage.data_ptr())
            if key not in clones:
                clones[key] = storage.clone()
            copy = clones[key]
            clones[id(v)] = torch.empty(0, dtype=v.dtype, device=v.device).set_(
                copy, v.storage_offset(), v.size(), v.stride()
            )
    return clones[id(v)]


def _hint(name: str) -> str:
    s = "".join(c if c.isalnum() or c == "_" else "_" for c in str(name))
    # xDSL drops a trailing `_<digits>` from a name, so `_0` (an nn.Sequential
    # child's node) would become the invalid empty name.
    return s if s.strip("_0123456789") and not s[0].isdigit() else "v" + s


def _fetch_attr(root: nn.Module, target: str) -> Any:
    obj: Any = root
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _flat_nodes(a: Any) -> list[torch.fx.Node]:
    out: list[torch.fx.Node] = []
    torch.fx.node.map_arg(a, lambda n: out.append(n) or n)
    return out


def _map_args(node: torch.fx.Node, real: dict[torch.fx.Node, Any]) -> tuple[Any, Any]:
    args = torch.fx.node.map_arg(node.args, lambda n: real[n])
    kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: real[n])
    return args, kwargs


def _target_name(node: torch.fx.Node) -> str:
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    if node.op == "call_module":
        return f"module.{node.target}"
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return str(t)  # aten.add.Tensor
    mod = getattr(t, "__module__", None) or ""
    name = getattr(t, "__qualname__", None) or getattr(t, "__name__", None) or str(t)
    if name.startswith("_VariableFunctionsClass."):
        mod, name = "torch", name.split(".", 1)[1]
    return f"{mod}.{name}" if mod else name


# ---------------------------------------------------------------------- handlers

Handler = Callable[..., Any]
_FUNCTIONS: dict[Any, Handler] = {}
_METHODS: dict[str, Handler] = {}
_MODULES: dict[type, Handler] = {}


def _register(*keys: Any) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        for k in keys:
            if isinstance(k, str):
                _METHODS[k] = fn
            elif isinstance(k, type) and issubclass(k, nn.Module):
                _MODULES[k] = fn
            else:
                _FUNCTIONS[k] = fn
        return fn

    return deco


def _handler_for(node: torch.fx.Node, gm: torch.fx.GraphModule) -> Handler | None:
    if node.op == "call_function":
        if isinstance(node.target, torch._ops.OpOverload):
            from fusec.frontend.aten_table import handler_for

            return handler_for(node.target)
        try:
            return _FUNCTIONS.get(node.target)
        except TypeError:
            return None
    if node.op == "call_method":
        return _METHODS.get(str(node.target))
    if node.op == "call_module":
        return _MODULES.get(type(gm.get_submodule(node.target)))
    return None


def _unary_handler(op_cls: type[Operation]) -> Handler:
    def handle(ctx: _Importer, x: Any, *rest: Any, inplace: bool = False) -> SSAValue:
        if rest:
            raise _NotMapped("extra arguments")
        return ctx.add_op(op_cls(ctx.tensor(x))).results[0]

    return handle


def _unary_module(op_cls: type[Operation]) -> Handler:
    def handle(ctx: _Importer, mod: nn.Module, x: Any) -> SSAValue:
        return ctx.add_op(op_cls(ctx.tensor(x))).results[0]

    return handle


_UNARY = {
    aten.NegOp: (torch.neg, operator.neg, "neg"),
    aten.AbsOp: (torch.abs, operator.abs, "abs"),
    aten.ReluOp: (torch.relu, F.relu, "relu", "relu_"),
    aten.ExpOp: (torch.exp, "exp"),
    aten.Expm1Op: (torch.expm1, "expm1"),
    aten.LogOp: (torch.log, "log"),
    aten.Log1pOp: (torch.log1p, "log1p"),
    aten.SqrtOp: (torch.sqrt, "sqrt"),
    aten.RsqrtOp: (torch.rsqrt, "rsqrt"),
    aten.ReciprocalOp: (torch.reciprocal, "reciprocal"),
    aten.SigmoidOp: (torch.sigmoid, F.sigmoid, "sigmoid"),
    aten.TanhOp: (torch.tanh, F.tanh, "tanh"),
    aten.SiluOp: (F.silu,),
    aten.ErfOp: (torch.erf, "erf"),
    aten.SinOp: (torch.sin, "sin"),
    aten.CosOp: (torch.cos, "cos"),
    aten.LogicalNotOp: (torch.logical_not, "logical_not"),
}
for _cls, _keys in _UNARY.items():
    _register(*_keys)(_unary_handler(_cls))
for _cls, _mod in (
    (aten.ReluOp, nn.ReLU),
    (aten.SigmoidOp, nn.Sigmoid),
    (aten.TanhOp, nn.Tanh),
    (aten.SiluOp, nn.SiLU),
):
    _register(_mod)(_unary_module(_cls))


def _number(v: Any) -> Attribute | None:
    return None if v is None else aten.number_attr(v)


def _binary(ctx: _Importer, op_cls: type[Operation], a: Any, b: Any, **props: Any) -> SSAValue:
    lhs, rhs = ctx.operand(a), ctx.operand(b)
    if not isinstance(lhs.type, TensorType) and not isinstance(rhs.type, TensorType):
        raise _NotMapped("no tensor operand")
    return ctx.add_op(op_cls(lhs, rhs, **props)).results[0]


def _alpha_handler(op_cls: type[Operation]) -> Handler:
    def handle(ctx: _Importer, a: Any, b: Any, *, alpha: Any = None) -> SSAValue:
        alpha = ctx.const(alpha)
        if alpha == 1:
            alpha = None
        return _binary(ctx, op_cls, a, b, alpha=_number(alpha))

    return handle


_register(torch.add, operator.add, operator.iadd, "add", "add_")(_alpha_handler(aten.AddOp))
_register(torch.sub, operator.sub, operator.isub, "sub", "sub_")(_alpha_handler(aten.SubOp))


def _python_number(ctx: _Importer, a: Any) -> bool:
    """Whether `a` is a Python number (not a bool), or a node holding one."""
    if isinstance(a, torch.fx.Node):
        v = ctx.env.get(a)
        a = v.value if isinstance(v, Const) else None
    return isinstance(a, int | float | torch.SymInt | torch.SymFloat) and not isinstance(a, bool)


@_register(
    torch.div, torch.divide, torch.true_divide, operator.truediv, operator.itruediv,
    "div", "div_", "divide", "divide_", "true_divide", "true_divide_",
)  # fmt: skip
def _div(ctx: _Importer, a: Any, b: Any, *, rounding_mode: str | None = None) -> SSAValue:
    mode = ctx.const(rounding_mode)
    if mode is None and _python_number(ctx, a):
        # `s / x` is `x.__rtruediv__(s)`, which eager computes as
        # `x.reciprocal() * s`: two ops, the reciprocal rounded to x's dtype.
        recip = ctx.add_op(aten.ReciprocalOp(ctx.tensor(b))).results[0]
        ctx.eager_results.append(recip)
        return ctx.add_op(aten.MulOp(recip, ctx.operand(a))).results[0]
    return _binary(ctx, aten.DivOp, a, b, rounding_mode=None if mode is None else StringAttr(mode))


@_register(operator.floordiv, operator.ifloordiv, torch.floor_divide, "floor_divide")
def _floordiv(ctx: _Importer, a: Any, b: Any) -> SSAValue:
    return _binary(ctx, aten.DivOp, a, b, rounding_mode=StringAttr("floor"))


for _cls, _keys in {
    aten.MulOp: (
        torch.mul,
        torch.multiply,
        operator.mul,
        operator.imul,
        "mul",
        "mul_",
        "multiply",
        "multiply_",
    ),
    aten.PowOp: (torch.pow, operator.pow, operator.ipow, "pow", "pow_"),
    aten.MaximumOp: (torch.maximum, "maximum"),
    aten.MinimumOp: (torch.minimum, "minimum"),
    aten.EqOp: (torch.eq, operator.eq, "eq"),
    aten.NeOp: (torch.ne, operator.ne, "ne"),
    aten.LtOp: (torch.lt, operator.lt, "lt"),
    aten.LeOp: (torch.le, operator.le, "le"),
    aten.GtOp: (torch.gt, operator.gt, "gt"),
    aten.GeOp: (torch.ge, operator.ge, "ge"),
    aten.LogicalAndOp: (torch.logical_and, "logical_and"),
    aten.LogicalOrOp: (torch.logical_or, "logical_or"),
    aten.LogicalXorOp: (torch.logical_xor, "logical_xor"),
}.items():
    _register(*_keys)(lambda ctx, a, b, _c=_cls: _binary(ctx, _c, a, b))


def _max_min(op_cls: type[Operation]) -> Handler:
    """`torch.max(a, b)` / `a.max(b)` with a tensor `b` is the elementwise op;
    the reductions (`torch.max(a)`, `torch.max(a, dim)`) stay opaque."""

    def handle(ctx: _Importer, a: Any, b: Any = None, *rest: Any, **kwargs: Any) -> SSAValue:
        if rest or kwargs or not isinstance(ctx.env.get(b), SSAValue):
            raise _NotMapped("max/min reduction")
        return _binary(ctx, op_cls, a, b)

    return handle


_register(torch.max, "max")(_max_min(aten.MaximumOp))
_register(torch.min, "min")(_max_min(aten.MinimumOp))


@_register(torch.where, "where")
def _where(ctx: _Importer, c: Any, a: Any, b: Any) -> SSAValue:
    return ctx.add_op(aten.WhereOp(ctx.tensor(c), ctx.operand(a), ctx.operand(b))).results[0]


@_register(torch.masked_fill, "masked_fill", "masked_fill_")
def _masked_fill(ctx: _Importer, x: Any, mask: Any, value: Any) -> SSAValue:
    """`x.masked_fill(mask, v)` = `where(mask, v, x)` (also ATen's
    `masked_fill.Scalar`), so an attention mask fuses into the softmax. A tensor
    value or a non-bool mask stays opaque; where `where` would promote (an
    integer `x` filled with a float) the importer's check of the result type
    against PyTorch's keeps the node opaque (`masked_fill` never promotes)."""
    m, v = ctx.tensor(mask), ctx.const(value)
    if inf.element_type(m.type) != inf.BOOL or not _is_scalar(v):
        raise _NotMapped("masked_fill with a non-bool mask or a tensor value")
    return ctx.add_op(aten.WhereOp(m, ctx.operand(value), ctx.tensor(x))).results[0]


@_register(torch.bitwise_not, operator.invert, "bitwise_not")
def _bitwise_not(ctx: _Importer, x: Any) -> SSAValue:
    """`~mask` of a bool tensor (also ATen's `bitwise_not`) is `logical_not`
    (an attention mask's complement); integer `~` stays opaque."""
    xt = ctx.tensor(x)
    if inf.element_type(xt.type) != inf.BOOL:
        raise _NotMapped("bitwise_not of a non-bool tensor")
    return ctx.add_op(aten.LogicalNotOp(xt)).results[0]


def _fill(
    ctx: _Importer,
    x: Any,
    value: Any,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: Any = False,
    requires_grad: Any = False,
    memory_format: Any = None,
) -> SSAValue:
    """`torch.full_like(x, v)` and its kin as `aten.full_like`: only x's shape
    is read, so in a kernel the fill is a constant (a causal mask's
    `ones_like(att, dtype=torch.bool)` joins the softmax). Another layout or
    device, pinned memory or a gradient-requiring result stays opaque."""
    xt, v = ctx.tensor(x), ctx.const(value)
    dtype, layout, device = ctx.const(dtype), ctx.const(layout), ctx.const(device)
    real = ctx.real.get(x) if isinstance(x, torch.fx.Node) else None
    if not _is_scalar(v):
        raise _NotMapped("a fill value that is not a number")
    if layout not in (None, torch.strided) or ctx.const(pin_memory) or ctx.const(requires_grad):
        raise _NotMapped("a fill with another layout, pinned memory or requires_grad")
    if device is not None and (real is None or torch.device(device) != real.device):
        raise _NotMapped("a fill on another device")
    if ctx.const(memory_format) not in (None, torch.preserve_format, torch.contiguous_format):
        raise _NotMapped("a fill with a channels-last memory format")
    dt = inf.element_type(xt.type) if dtype is None else DTYPES_OF_TORCH.get(dtype)
    if dt is None:
        raise _NotMapped(f"dtype {dtype}")
    return ctx.add_op(aten.FullLikeOp(xt, aten.number_attr(v), dt)).results[0]


@_register(torch.full_like)
def _full_like(ctx: _Importer, x: Any, fill_value: Any, **kwargs: Any) -> SSAValue:
    return _fill(ctx, x, fill_value, **kwargs)


@_register(torch.ones_like)
def _ones_like(ctx: _Importer, x: Any, **kwargs: Any) -> SSAValue:
    return _fill(ctx, x, 1, **kwargs)


@_register(torch.zeros_like)
def _zeros_like(ctx: _Importer, x: Any, **kwargs: Any) -> SSAValue:
    return _fill(ctx, x, 0, **kwargs)


def _size_source(v: SSAValue) -> SSAValue:
    """A value with `v`'s sizes that is computed no later: back through
    pointwise ops to an operand of the same shape. `positions` reads only
    sizes, and reading them off a result that fuses would order that result's
    group before the group the positions feed (one group, for a causal mask)."""
    while isinstance(v, OpResult) and v.op.has_trait(aten.Pointwise):
        shape = v.type.get_shape()  # type: ignore[attr-defined]
        same = [
            o
            for o in v.op.operands
            if isinstance(o.type, TensorType) and o.type.get_shape() == shape
        ]
        if not same:
            break
        v = same[0]
    return v


def _triangle(lower: bool) -> Handler:
    """`tril`/`triu` as a `where` over positions: element (i, j) of the last two
    dims is kept where j - i <= diagonal (tril) or >= diagonal (triu), else 0
    (False for bool). The positions are two small host tensors; the compare and
    the select are pointwise and fuse (a causal mask becomes index arithmetic in
    the softmax's kernel):

        %c = aten.positions %x dim = -1 ; %r = aten.positions %x dim = -2
        %keep = aten.le (aten.sub %c, (aten.unsqueeze %r dim = 1)), %diagonal
        %y = aten.where %keep, %x, %zero
    """

    def handle(ctx: _Importer, x: Any, diagonal: Any = 0) -> SSAValue:
        xt, d = ctx.tensor(x), ctx.const(diagonal)
        if xt.type.get_num_dims() < 2 or not isinstance(d, int) or isinstance(d, bool):
            raise _NotMapped("tril/triu of a tensor of rank below 2, or a non-integer diagonal")
        like = _size_source(xt)
        cols = ctx.add_op(aten.PositionsOp(like, -1)).results[0]
        rows = ctx.add_op(aten.PositionsOp(like, -2)).results[0]
        rows = ctx.add_op(aten.UnsqueezeOp([rows], {"dim": IntegerAttr(1, inf.I64)})).results[0]
        diff = ctx.add_op(aten.SubOp(cols, rows)).results[0]
        compare = aten.LeOp if lower else aten.GeOp
        keep = ctx.add_op(compare(diff, ctx.constant(d))).results[0]
        is_bool = inf.element_type(xt.type) == inf.BOOL
        zero = ctx.constant(False if is_bool else 0)
        return ctx.add_op(aten.WhereOp(keep, xt, zero)).results[0]

    return handle


_tril = _register(torch.tril, "tril")(_triangle(lower=True))
_triu = _register(torch.triu, "triu")(_triangle(lower=False))


@_register(torch.clamp, torch.clip, "clamp", "clip")
def _clamp(ctx: _Importer, x: Any, min: Any = None, max: Any = None) -> SSAValue:
    lo, hi = ctx.const(min), ctx.const(max)
    if not all(v is None or _is_scalar(v) for v in (lo, hi)):
        raise _NotMapped("tensor bounds")
    op = aten.ClampOp(ctx.tensor(x), min=_number(lo), max=_number(hi))
    return ctx.add_op(op).results[0]


@_register(F.leaky_relu)
def _leaky_relu(
    ctx: _Importer, x: Any, negative_slope: Any = 0.01, inplace: bool = False
) -> SSAValue:
    op = aten.LeakyReluOp(ctx.tensor(x), negative_slope=_number(float(ctx.const(negative_slope))))
    return ctx.add_op(op).results[0]


@_register(nn.LeakyReLU)
def _leaky_relu_module(ctx: _Importer, mod: nn.LeakyReLU, x: Any) -> SSAValue:
    return _leaky_relu(ctx, x, mod.negative_slope)


@_register(F.gelu)
def _gelu(ctx: _Importer, x: Any, approximate: str = "none") -> SSAValue:
    mode = ctx.const(approximate)
    op = aten.GeluOp(ctx.tensor(x), approximate=None if mode == "none" else StringAttr(mode))
    return ctx.add_op(op).results[0]


@_register(nn.GELU)
def _gelu_module(ctx: _Importer, mod: nn.GELU, x: Any) -> SSAValue:
    return _gelu(ctx, x, mod.approximate)


def _cast(ctx: _Importer, x: Any, dtype: torch.dtype) -> SSAValue:
    """`x.to(dtype)`; to x's own dtype it is x itself, as in PyTorch (no copy):
    a later in-place write through the result writes x."""
    v = ctx.tensor(x)
    assert isinstance(v.type, TensorType)
    if v.type.get_element_type() == DTYPES_OF_TORCH[dtype]:
        return v
    return ctx.add_op(aten.ToOp(v, DTYPES_OF_TORCH[dtype])).results[0]


@_register("to")
def _to(ctx: _Importer, x: Any, *args: Any, **kwargs: Any) -> SSAValue:
    args = ctx.const(args)
    kwargs = {k: ctx.const(v) for k, v in kwargs.items()}
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    if kwargs:
        raise _NotMapped("to() options")
    for a in args:
        if isinstance(a, torch.dtype):
            dtype = a
        elif isinstance(a, str | torch.device):
            device = a
        else:
            raise _NotMapped("to() argument")
    real = ctx.real[ctx.node.args[0]]  # type: ignore[union-attr]
    if device is not None and torch.device(device) != real.device:
        raise _NotMapped("device change")
    if dtype is None:
        return ctx.tensor(x)
    return _cast(ctx, x, dtype)


for _meth, _dt in {
    "float": torch.float32,
    "half": torch.float16,
    "double": torch.float64,
    "bfloat16": torch.bfloat16,
    "int": torch.int32,
    "long": torch.int64,
    "bool": torch.bool,
}.items():
    _register(_meth)(lambda ctx, x, _d=_dt: _cast(ctx, x, _d))


@_register("contiguous", torch.Tensor.contiguous)
def _contiguous(ctx: _Importer, x: Any, memory_format: Any = torch.contiguous_format) -> SSAValue:
    """`x.contiguous()` is x itself when x is contiguous, as in PyTorch (a later
    in-place write through the result writes x), and otherwise a fresh copy: a
    same-dtype `aten.to`, so writes to it never reach x (nor the caller's input
    x may be a view of). Which one is decided on the traced value; a program is
    specialized on its arguments' contiguity. Another memory format runs through
    PyTorch when it has to copy (the copy's strides are not row-major)."""
    v = ctx.tensor(x)
    fmt = ctx.const(memory_format)
    real = ctx.real.get(x) if isinstance(x, torch.fx.Node) else None
    if not isinstance(real, torch.Tensor):
        raise _NotMapped("contiguous() of a value not traced")
    if real.is_contiguous(memory_format=fmt):
        return v
    if fmt is not torch.contiguous_format:
        raise _NotMapped(f"a copy in memory format {fmt}")
    assert isinstance(v.type, TensorType)
    return ctx.add_op(aten.ToOp(v, v.type.get_element_type())).results[0]


def _dims(args: Sequence[Any]) -> list[int]:
    if len(args) == 1 and isinstance(args[0], tuple | list | torch.Size):
        return list(args[0])
    return list(args)


@_register(torch.chunk, "chunk")
def _chunk(ctx: _Importer, x: Any, chunks: Any, dim: Any = 0) -> tuple[SSAValue, ...]:
    v = ctx.tensor(x)
    ctx.size_check(v, ctx.const(dim), "chunk", (ctx.const(chunks),))
    op = aten.ChunkOp.create(
        operands=[v],
        properties={
            "chunks": IntegerAttr(ctx.const(chunks), inf.I64),
            "dim": IntegerAttr(ctx.const(dim), inf.I64),
        },
        result_types=_result_types(ctx),
    )
    return tuple(ctx.add_op(op).results)


@_register(torch.split, "split")
def _split(
    ctx: _Importer, x: Any, split_size_or_sections: Any, dim: Any = 0
) -> tuple[SSAValue, ...]:
    s = ctx.const(split_size_or_sections)
    v, d = ctx.tensor(x), ctx.const(dim)
    props: dict[str, Attribute] = {"dim": IntegerAttr(d, inf.I64)}
    if isinstance(s, int):
        # How many pieces there are depends on the size of `dim` (unless the
        # graph records that size as fixed).
        if not (ctx.symbolic and static_dim(x, d)):
            ctx.bakes_size("split by a piece size")
        props["split_size"] = IntegerAttr(s, inf.I64)
        ctx.size_check(v, d, "split", (s,))
    else:
        props["sizes"] = _int_array(list(s))
        ctx.size_check(v, d, "exact")
    op = aten.SplitOp.create(operands=[v], properties=props, result_types=_result_types(ctx))
    return tuple(ctx.add_op(op).results)


def static_dim(x: Any, dim: int) -> bool:
    """Whether the graph records dim `dim` of `x` as a fixed size (an int in its
    `meta['val']`), so no other size can reach this op."""
    val = _recorded(x) if isinstance(x, torch.fx.Node) else None
    if not isinstance(val, torch.Tensor) or val.dim() == 0:
        return False
    return not _is_symbol(val.shape[inf.normalize_dim(dim, val.dim())])


def _int_array(values: list[int]) -> Attribute:
    from xdsl.dialects.builtin import DenseArrayBase, i64

    return DenseArrayBase.from_list(i64, values)


def _result_types(ctx: _Importer) -> list[Attribute]:
    return ctx.result_types()


@_register(torch.cat, torch.concat)
def _cat(ctx: _Importer, tensors: Any, dim: Any = 0) -> SSAValue:
    return ctx.add_op(aten.CatOp([ctx.tensor(t) for t in tensors], ctx.const(dim))).results[0]


def _reshape_like(op_cls: type[aten.ReshapeLikeOp]) -> Handler:
    def handle(ctx: _Importer, x: Any, *shape: Any) -> SSAValue:
        reshaped = ctx.symbolic_reshape(x, op_cls)
        if reshaped is not None:
            return reshaped
        sizes = ctx.const(shape)
        if any(isinstance(s, torch.dtype) for s in sizes):
            raise _NotMapped("view as dtype")
        if -1 in _dims(sizes):
            ctx.bakes_size("a -1 size")
        out = ctx.real[ctx.node]  # type: ignore[index]
        return ctx.add_op(op_cls(ctx.tensor(x), list(out.shape))).results[0]

    return handle


_register("view")(_reshape_like(aten.ViewOp))
_register(torch.reshape, "reshape")(_reshape_like(aten.ReshapeOp))


@_register(torch.flatten, "flatten")
def _flatten(ctx: _Importer, x: Any, start_dim: Any = 0, end_dim: Any = -1) -> SSAValue:
    ctx.const((start_dim, end_dim))
    reshaped = ctx.symbolic_reshape(x)
    if reshaped is not None:
        return reshaped
    # The flattened size is a product of this call's sizes.
    ctx.bakes_size("flatten")
    out = ctx.real[ctx.node]  # type: ignore[index]
    return ctx.add_op(aten.ReshapeOp(ctx.tensor(x), list(out.shape))).results[0]


@_register(nn.Flatten)
def _flatten_module(ctx: _Importer, mod: nn.Flatten, x: Any) -> SSAValue:
    return _flatten(ctx, x, mod.start_dim, mod.end_dim)


@_register(torch.unsqueeze, "unsqueeze")
def _unsqueeze(ctx: _Importer, x: Any, dim: Any) -> SSAValue:
    op = aten.UnsqueezeOp.create(
        operands=[ctx.tensor(x)],
        properties={"dim": IntegerAttr(ctx.const(dim), inf.I64)},
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


@_register(torch.squeeze, "squeeze")
def _squeeze(ctx: _Importer, x: Any, dim: Any = None) -> SSAValue:
    d = ctx.const(dim)
    if not (d is None or isinstance(d, int)):
        raise _NotMapped("squeeze over several dims")
    props = {} if d is None else {"dim": IntegerAttr(d, inf.I64)}
    op = aten.SqueezeOp.create(
        operands=[ctx.tensor(x)], properties=props, result_types=_result_types_one(ctx)
    )
    return ctx.add_op(op).results[0]


def _result_types_one(ctx: _Importer) -> list[Attribute]:
    return [ctx.result_type()]


def _permute_op(ctx: _Importer, x: Any, dims: list[int]) -> SSAValue:
    op = aten.PermuteOp.create(
        operands=[ctx.tensor(x)],
        properties={"dims": _int_array(dims)},
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


@_register(torch.permute, "permute")
def _permute(ctx: _Importer, x: Any, *dims: Any) -> SSAValue:
    return _permute_op(ctx, x, _dims(ctx.const(dims)))


@_register(torch.transpose, "transpose")
def _transpose(ctx: _Importer, x: Any, dim0: Any, dim1: Any) -> SSAValue:
    op = aten.TransposeOp.create(
        operands=[ctx.tensor(x)],
        properties={
            "dim0": IntegerAttr(ctx.const(dim0), inf.I64),
            "dim1": IntegerAttr(ctx.const(dim1), inf.I64),
        },
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


@_register(torch.t, "t")
def _t(ctx: _Importer, x: Any) -> SSAValue:
    rank = len(ctx.real[ctx.node].shape)  # type: ignore[index]
    if rank < 2:
        return ctx.tensor(x)
    return _transpose(ctx, x, 0, 1)


@_register("expand")
def _expand(ctx: _Importer, x: Any, *size: Any) -> SSAValue:
    sizes = _dims(ctx.const(size))
    if -1 in sizes and not ctx.symbolic:
        # With symbolic sizes a -1 keeps a `?` dim `?` (the type says so).
        ctx.bakes_size("a -1 size")
    op = aten.ExpandOp.create(
        operands=[ctx.tensor(x)],
        properties={"size": _int_array(sizes)},
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


@_register("expand_as")
def _expand_as(ctx: _Importer, x: Any, other: Any) -> SSAValue:
    ctx.bakes_size("expand_as")
    return _expand(ctx, x, list(ctx.real[ctx.node].shape))  # type: ignore[index]


@_register(torch.narrow, "narrow")
def _narrow(ctx: _Importer, x: Any, dim: Any, start: Any, length: Any) -> SSAValue:
    v, s0, n = ctx.tensor(x), ctx.const(start), ctx.const(length)
    if s0 >= 0:
        ctx.size_check(v, ctx.const(dim), "fits", (s0 + n,))
    else:
        ctx.size_check(v, ctx.const(dim), "exact")
    op = aten.NarrowOp.create(
        operands=[v],
        properties={
            "dim": IntegerAttr(ctx.const(dim), inf.I64),
            "start": IntegerAttr(ctx.const(start), inf.I64),
            "length": IntegerAttr(ctx.const(length), inf.I64),
        },
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


def _typed(
    ctx: _Importer,
    op_cls: type[Operation],
    operand: SSAValue,
    props: dict[str, Attribute],
    shape: list[int],
) -> SSAValue:
    t = operand.type
    assert isinstance(t, TensorType)
    op = op_cls.create(
        operands=[operand],
        properties=props,
        result_types=[TensorType(t.get_element_type(), shape)],
    )
    ctx.add_op(op)
    op.verify()
    return op.results[0]


@_register(operator.getitem)
def _getitem(ctx: _Importer, base: Any, index: Any) -> Any:
    v = ctx.env[base] if isinstance(base, torch.fx.Node) else None
    if isinstance(v, tuple):
        return v[ctx.const(index)]
    x = ctx.tensor(base)
    index = ctx.const(index)
    items = list(index) if isinstance(index, tuple) else [index]
    assert isinstance(x.type, TensorType)
    shape = list(x.type.get_shape())
    if items.count(Ellipsis) > 1:
        raise _NotMapped("several ellipses")
    if Ellipsis in items:
        pos = items.index(Ellipsis)
        named = len([i for i in items if i is not None and i is not Ellipsis])
        items[pos : pos + 1] = [slice(None)] * (len(shape) - named)
    dim = 0
    for item in items:
        if item is None:
            shape.insert(dim, 1)
            x = _typed(ctx, aten.UnsqueezeOp, x, {"dim": IntegerAttr(dim, inf.I64)}, shape)
            dim += 1
        elif isinstance(item, slice):
            if item == slice(None):
                dim += 1
                continue
            step = 1 if item.step is None else item.step
            start = 0 if item.start is None else item.start
            end = 2**63 - 1 if item.stop is None else item.stop
            if not all(isinstance(s, int) for s in (start, end, step)):
                raise _NotMapped("slice bounds")
            ctx.size_check(x, dim, "slice", (start, end, step))
            shape[dim] = len(range(*slice(start, end, step).indices(shape[dim])))
            props = {
                "dim": IntegerAttr(dim, inf.I64),
                "start": IntegerAttr(start, inf.I64),
                "end": IntegerAttr(end, inf.I64),
                "step": IntegerAttr(step, inf.I64),
            }
            x = _typed(ctx, aten.SliceOp, x, props, list(shape))
            dim += 1
        elif isinstance(item, int) and not isinstance(item, bool):
            size = shape[dim]
            if item < 0:
                if ctx.symbolic:
                    ctx.bakes_size("a negative index")
                ctx.size_check(x, dim, "exact")
            else:  # an index past a smaller size must raise
                ctx.size_check(x, dim, "fits", (item + 1,))
            i = item + size if item < 0 else item
            if not 0 <= i < size:
                raise _NotMapped("index out of range")
            shape[dim] = 1
            props = {
                "dim": IntegerAttr(dim, inf.I64),
                "start": IntegerAttr(i, inf.I64),
                "length": IntegerAttr(1, inf.I64),
            }
            x = _typed(ctx, aten.NarrowOp, x, props, list(shape))
            del shape[dim]
            x = _typed(ctx, aten.SqueezeOp, x, {"dim": IntegerAttr(dim, inf.I64)}, list(shape))
        else:
            raise _NotMapped("advanced indexing")
    return x


@_register(getattr)
def _getattr(ctx: _Importer, base: Any, name: Any) -> Any:
    """A field of a named tuple result (`torch.topk(x, 2).values`)."""
    v = ctx.env[base] if isinstance(base, torch.fx.Node) else None
    if isinstance(v, tuple):
        target = ctx.real[ctx.node]  # type: ignore[index]
        for i, r in enumerate(ctx.real[base]):
            if r is target:
                return v[i]
    raise _NotMapped(f"attribute {name}")


def _mm_like(op_cls: type[Operation]) -> Handler:
    def handle(ctx: _Importer, a: Any, b: Any) -> SSAValue:
        return ctx.add_op(op_cls(ctx.tensor(a), ctx.tensor(b))).results[0]

    return handle


_register(torch.matmul, operator.matmul, "matmul")(_mm_like(aten.MatmulOp))
_register(torch.mm, "mm")(_mm_like(aten.MmOp))


@_register(torch.addmm, "addmm")
def _addmm(ctx: _Importer, bias: Any, a: Any, b: Any, *, beta: Any = 1, alpha: Any = 1) -> SSAValue:
    beta, alpha = ctx.const(beta), ctx.const(alpha)
    op = aten.AddmmOp.create(
        operands=[ctx.tensor(bias), ctx.tensor(a), ctx.tensor(b)],
        properties={
            k: aten.number_attr(v) for k, v in (("beta", beta), ("alpha", alpha)) if v != 1
        },
        result_types=_result_types_one(ctx),
    )
    return ctx.add_op(op).results[0]


def _linear_op(ctx: _Importer, x: SSAValue, w: SSAValue, b: SSAValue | None) -> SSAValue:
    operands = [x, w] if b is None else [x, w, b]
    op = aten.LinearOp.create(operands=operands, result_types=_result_types_one(ctx))
    return ctx.add_op(op).results[0]


@_register(F.linear)
def _linear(ctx: _Importer, x: Any, weight: Any, bias: Any = None) -> SSAValue:
    return _linear_op(
        ctx, ctx.tensor(x), ctx.tensor(weight), None if bias is None else ctx.tensor(bias)
    )


@_register(nn.Linear)
def _linear_module(ctx: _Importer, mod: nn.Linear, x: Any) -> SSAValue:
    path = str(ctx.node.target)  # type: ignore[union-attr]
    w = ctx.attr_operand(path, "weight", mod.weight)
    b = ctx.attr_operand(path, "bias", mod.bias)
    assert w is not None
    return _linear_op(ctx, ctx.tensor(x), w, b)


def _reduction(op_cls: type[Operation]) -> Handler:
    def handle(
        ctx: _Importer, x: Any, dim: Any = None, keepdim: Any = False, *, dtype: Any = None
    ) -> SSAValue:
        d, keep, dt = ctx.const(dim), ctx.const(keepdim), ctx.const(dtype)
        props: dict[str, Attribute] = {}
        if d is not None:
            props["dims"] = _int_array([d] if isinstance(d, int) else list(d))
        if keep:
            props["keepdim"] = IntegerAttr(1, inf.BOOL)
        if dt is not None and not isinstance(dt, torch.dtype):
            raise _NotMapped("dtype")
        op = op_cls.create(
            operands=[ctx.tensor(x)], properties=props, result_types=_result_types_one(ctx)
        )
        return ctx.add_op(op).results[0]

    return handle


_register(torch.sum, "sum")(_reduction(aten.SumOp))
_register(torch.mean, "mean")(_reduction(aten.MeanOp))

# Reductions and normalizations (softmax, layer_norm, ...), activations and
# rounding ops written out as pointwise ops register from their modules.
from fusec.frontend import import_activations as _import_activations  # noqa: E402, F401
from fusec.frontend import import_normalizations as _import_normalizations  # noqa: E402, F401

# In-place forms (`x.exp_()`, `torch.exp_(x)`, `F.relu_(x)`) map like their
# out-of-place op; `_Importer.map_in_place` adds the write back.
for _name, _fn in list(_METHODS.items()):
    if hasattr(torch.Tensor, f"{_name}_"):
        _METHODS.setdefault(f"{_name}_", _fn)
for _target, _fn in list(_FUNCTIONS.items()):
    _fname = getattr(_target, "__name__", "")
    for _ns in (torch, F):
        _inplace = getattr(_ns, f"{_fname}_", None) if _fname else None
        if callable(_inplace) and getattr(_ns, _fname, None) is _target:
            _FUNCTIONS.setdefault(_inplace, _fn)


# ---------------------------------------------------------------------- entry points


def _verify_except(module: ModuleOp, verified: set[Operation]) -> None:
    """`module.verify()`, less the ops in `verified`: each was verified when
    it was imported and its operand and result types have not changed since
    (verifying a 10,000-op graph twice costs seconds)."""
    for op in module.walk():
        if op not in verified:
            op.verify(verify_nested_ops=False)


def import_fx(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], name: str = "forward"
) -> ImportedGraph:
    """Import `gm` specialized to `example_inputs` (see the module docstring)."""
    with torch.no_grad():
        return _Importer(gm, example_inputs).run(name)


def import_graph(fn_or_module: Any, example_inputs: Sequence[Any]) -> ModuleOp:
    """`fusec.import_graph`: the `aten`-dialect module of a function or module."""
    gm = trace(fn_or_module)
    name = getattr(fn_or_module, "__name__", None) or type(fn_or_module).__name__
    return import_fx(gm, example_inputs, _hint(name)).module
