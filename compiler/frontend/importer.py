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
`nn.ReLU(inplace=True)`, `x += y`, which `fusec.frontend.tracing` records as `operator.iadd`)
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

This module is the driver (`Importer`, `import_fx`, `import_graph`); the
handlers live in tables by topic that register into `fusec.frontend.registry`:
`torch_table` (pointwise, casts), `torch_shapes` (views, cuts, matrix products,
sums), `import_activations`, `import_normalizations`, `batch_norm_training`,
`position_embeddings`, `embedding_backward` and `aten_table`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx
from fusec.dialects import aten
from fusec.dialects import inference as inf
from fusec.dialects.opmath import mark_steps

# Importing the tables registers their handlers (`fusec.frontend.registry`):
# the torch-level ones, the written-out activations and normalizations, and
# the ATen table.
from fusec.frontend import (  # noqa: F401
    batch_norm_training,
    embedding_backward,
    import_activations,
    import_bitwise,
    position_embeddings,
    registry,
    torch_shapes,
)
from fusec.frontend.aten_table import OPAQUE_SUBSTITUTES
from fusec.frontend.fx_nodes import (
    MUTATING_OPS,
    clone_value,
    fetch_attr,
    map_args,
    ssa_name,
    target_name,
)
from fusec.frontend.graph_values import Const, Ret
from fusec.frontend.imported import ImportedGraph, NotMapped
from fusec.frontend.size_checks import SizeCheck, dim_sources
from fusec.frontend.size_folding import SizeFolding
from fusec.frontend.tracing import UnsupportedGraph, graph_name, trace
from fusec.frontend.unflattened_linear import unflattened_linear
from fusec.frontend.value_types import (
    has_symbolic_sizes,
    is_scalar,
    recorded_value,
    symbolic_type,
    tensor_type,
    value_type,
)
from fusec.runtime.opaque_calls import OpaqueCall, OperandRef, flat_leaves
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    FloatAttr,
    FunctionType,
    IntegerAttr,
    ModuleOp,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

registry.add_in_place_forms()

__all__ = [
    "Const", "ImportedGraph", "Importer", "NotMapped", "OpaqueCall", "OperandRef", "Ret",
    "UnsupportedGraph", "import_fx", "import_graph", "symbolic_type", "tensor_type", "trace",
    "value_type",
]  # fmt: skip

log = logging.getLogger("fusec")


def _why_opaque(e: Exception, node: torch.fx.Node) -> str:
    """The reason a node became `aten.opaque`, for `fusec.explain`."""
    if isinstance(e, NotMapped):
        msg = str(e)
        if msg == target_name(node):
            return f"no aten op for {msg}"
        if msg.startswith("dtype "):
            return f"unsupported {msg}"
        return msg
    return f"its aten form does not verify here: {type(e).__name__}: {e}"


class Importer(SizeFolding):
    """Imports one fx graph, run on its example inputs, into an `aten`-dialect
    function (`run`); `import_fx` is the usual way in.

    It is also the context every handler of the tables receives
    (`fusec.frontend.registry`): a handler reads the node's arguments through
    it (`tensor`, `operand`, `const`), adds ops (`add_op`, `constant`), and
    says what the import now depends on (`bakes_size`, `size_check`).
    Raising `NotMapped` leaves the node to PyTorch as `aten.opaque`:

        @register(torch.sigmoid, "sigmoid")
        def sigmoid(ctx: Importer, x: Any) -> SSAValue:
            return ctx.add_op(aten.SigmoidOp(ctx.tensor(x))).results[0]

        imported = Importer(torch.fx.symbolic_trace(f), (x,)).run("f")
        imported.module   # func.func @f(%x: tensor<4xf32>) { %sigmoid = aten.sigmoid %x ... }

    What handlers read: `node` (the node being imported), `real` (each node's
    value in the import-time run), `env` (each node's SSA value, `Const` or
    tuple), `symbolic` (the graph has symbolic sizes), `gm`.
    """

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
        self.symbolic = has_symbolic_sizes(gm)
        """The graph was captured with symbolic sizes (Dynamo `dynamic=True`, SymInt
        inputs): sizes are runtime values, so no op may bake one of this call's."""

    def symbolic_reshape(
        self, x: Any, op_cls: type[aten.ReshapeLikeOp] = aten.ReshapeOp
    ) -> SSAValue | None:
        """In a graph with symbolic sizes, a reshape (`view`, `reshape`, `flatten`)
        whose result has at most one symbolic size: `op_cls` (`aten.reshape` or
        `aten.view`) to its recorded type, the `?` size inferred at run time as a
        `-1` would be. None when the graph is static; `NotMapped` when the result
        has several symbolic sizes (only the sizes' runtime values could say them:
        it runs as `aten.opaque`)."""
        if not self.symbolic:
            return None
        t = self.result_type()
        if not isinstance(t, TensorType):
            raise NotMapped("expected a tensor")
        shape = list(t.get_shape())
        if not inf.reshape_infers(shape):
            linear = unflattened_linear(self, x)
            if linear is not None:
                return linear
            raise NotMapped("a reshape to several symbolic sizes needs their runtime values")
        return self.add_op(op_cls(self.tensor(x), shape)).results[0]

    def bakes_size(self, what: str) -> None:
        """The op being imported fixes a size of these example inputs in the IR.

        With symbolic sizes the op runs as `aten.opaque` over its runtime operands
        instead, so one program keeps serving every shape; otherwise the program
        is selected by exact input shapes from now on."""
        if self.symbolic:
            raise NotMapped(f"{what} would fix a symbolic size")
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
        value, recorded = self.real[self.node], recorded_value(self.node)
        if not isinstance(recorded, tuple | list) or len(recorded) != len(value):
            recorded = [None] * len(value)
        return [self.type_of(v, r) for v, r in zip(value, recorded, strict=True)]

    def result_type(self) -> Attribute:
        """The IR type of the current node's single result."""
        assert self.node is not None
        return self.type_of(self.real[self.node], recorded_value(self.node))

    def add_op(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def new_arg(self, t: Attribute, source: tuple[str, Any], hint: str) -> SSAValue:
        arg = self.block.insert_arg(t, len(self.block.args))
        arg.name_hint = ssa_name(hint)
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
            raise NotMapped(f"constant of type {type(v).__name__}")
        return self.add_op(arith.ConstantOp(attr)).results[0]

    def operand(self, a: Any) -> SSAValue:
        """An SSA value for a tensor or scalar argument."""
        if isinstance(a, torch.fx.Node):
            v = self.env[a]
            if isinstance(v, SSAValue):
                return v
            if isinstance(v, Const):
                if v.symbolic:
                    raise NotMapped(f"{a.name} holds symbolic sizes")
                if v.from_shape:
                    self.shape_dependent = True
                return self.constant(v.value)
            raise NotMapped(f"{a.name} is not a single value")
        if is_scalar(a):
            return self.constant(a)
        raise NotMapped(f"argument {a!r}")

    def size_check(self, v: SSAValue, dim: int, kind: str, params: tuple[int, ...] = ()) -> None:
        """The import holds only for argument sizes that cut `v` at `dim` as
        the example's did (see `fusec.frontend.size_checks`)."""
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
            raise NotMapped("expected a tensor")
        return v

    def const(self, a: Any) -> Any:
        """A Python value known at import time (sizes, dims, dtypes)."""
        if isinstance(a, torch.fx.Node):
            v = self.env[a]
            if not isinstance(v, Const) or v.symbolic:
                raise NotMapped(f"{a.name} is not known at import time")
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
            self.example_inputs = [clone_value(v, clones) for v in self.example_inputs]
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
                value = fetch_attr(self.gm, node.target)
                if writes:
                    value = clone_value(value, clones)
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
        f = func.FuncOp(ssa_name(name), ftype, Region(self.block))
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
                t = self.type_of(value, recorded_value(node))
            except NotMapped as e:
                raise UnsupportedGraph(f"input {node.name}: {e}") from None
        elif is_scalar(value):
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
            except NotMapped as e:
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
        args, kwargs = map_args(node, self.real)
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
        if folded is None and self.symbolic:
            folded = self.fold_float_argument(node, value)
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
            NotMapped,
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
                target_name(node),
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

    def drop(self, op: Operation, node: torch.fx.Node | None = None) -> None:
        """Erase `op`, which an earlier node imported and nothing reads any more
        (a handler took its node's work in), with what the import noted for it
        (and for `node`'s opaque call, when it was one)."""
        self.origins.pop(op, None)
        if node is not None:
            self.opaque.pop(node.name, None)
            self.opaque_reasons.pop(node.name, None)
        op.detach()
        op.erase()

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
                # The schema says it (`add_(Tensor(a!) self, ...)`); the name would
                # take `aten::__and__`, `__or__`, ... for in-place ops.
                return _writes_first_arg(node.target._schema)
            fn_name = getattr(node.target, "__name__", "")
            # `operator.and_`/`or_`/`xor_` (`a & b`) are out of place; the operator
            # module's in-place functions are `iand`, `iadd`, ... (`MUTATING_OPS`).
            from_operator = getattr(node.target, "__module__", None) in ("_operator", "operator")
            return (
                node.target in MUTATING_OPS
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
        handler = registry.handler_for(node, self.gm)
        if handler is None:
            raise NotMapped(target_name(node))
        start = self.block.last_op
        if node.op == "call_module":
            result = handler(self, self.gm.get_submodule(node.target), *node.args, **node.kwargs)
        else:
            result = handler(self, *node.args, **node.kwargs)
        if not isinstance(result, SSAValue) or not isinstance(result.owner, Operation):
            raise NotMapped("in-place op without a single result")
        self.mark_opmath_steps(start, (result,))
        if not result.owner.has_trait(aten.Pointwise):
            raise NotMapped("in-place op that is not pointwise")
        dst_type = dst.type
        assert isinstance(dst_type, TensorType) and isinstance(result.type, TensorType)
        if result.type.get_shape() != dst_type.get_shape():
            raise NotMapped("in-place result broadcasts beyond its destination")
        if result.type != dst_type:  # `x.mul_(y)` keeps x's dtype: the result is cast back
            result = self.add_op(aten.ToOp(result, dst_type.get_element_type())).results[0]
        result.owner.verify()  # pyright: ignore[reportOptionalMemberAccess]
        if result.name_hint is None:
            result.name_hint = ssa_name(node.name)
        self.add_op(aten.CopyOp(dst, result))
        self.check_types(dst, value, recorded_value(node))
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

    def make_opaque(self, node: torch.fx.Node, value: Any) -> Any:
        multi = isinstance(value, tuple | list)
        # `nn.LSTM` returns `(output, (h, c))`: the op's results are the leaves.
        nested = multi and any(isinstance(v, tuple | list) for v in value)
        leaves = flat_leaves(value) if multi else [value]
        values = leaves
        if value is None:  # run for its effect (e.g. a grad-mode switch); nothing flows
            multi, values = True, []
        kept = None
        if multi and any(v is None for v in values):
            kept = tuple(i for i, v in enumerate(values) if v is not None)
            values = [values[i] for i in kept]
        recorded = recorded_value(node)
        if multi and isinstance(recorded, tuple | list):
            recorded = flat_leaves(recorded)
        if multi and isinstance(recorded, list) and len(recorded) == len(leaves):
            records = [r for r in recorded if kept is None or r is not None]
        else:
            records = [None if multi else recorded] * len(values)
        if len(records) != len(values):
            records = [None] * len(values)
        try:
            result_types = [self.type_of(v, r) for v, r in zip(values, records, strict=True)]
        except NotMapped as e:
            raise UnsupportedGraph(f"{node.name} ({target_name(node)}) returns {e}") from None
        operands: list[SSAValue] = []

        def of_value(v: Any, a: torch.fx.Node) -> Any:
            if isinstance(v, Const) and v.source is not None:
                return template_value(self.size_of(v.source))
            if isinstance(v, Const) and v.symbolic:
                raise UnsupportedGraph(f"{a.name} holds symbolic sizes that {node.name} reads")
            if isinstance(v, Const):
                if v.from_shape:
                    self.shape_dependent = True
                return v.value
            if isinstance(v, tuple):  # a multi-result op's results, None among them
                return tuple(of_value(x, a) for x in v)
            return template_value(v)

        def template(a: Any) -> Any:
            if isinstance(a, torch.fx.Node):
                return of_value(self.env[a], a)
            if isinstance(a, tuple | list):
                return type(a)(template(x) for x in a)
            if isinstance(a, dict):
                return {k: template(x) for k, x in a.items()}
            if isinstance(a, slice):
                # `x[:, :s1]` under symbolic sizes: the bound is a size node, so
                # the call must get its value at run time (an operand), not the node.
                return slice(template(a.start), template(a.stop), template(a.step))
            return a

        def template_value(v: SSAValue) -> OperandRef:
            operands.append(v)
            return OperandRef(len(operands) - 1)

        args = template(node.args)
        kwargs = template(dict(node.kwargs))
        op = aten.OpaqueOp(target_name(node), operands, result_types, node=node.name)
        if isinstance(node.target, torch._ops.OpOverload) and _aliases_nothing(node.target._schema):
            op.attributes[aten.OPAQUE_FRESH] = UnitAttr()  # functionalize may drop writes to it
        self.add_op(op)
        for r in op.results:
            r.name_hint = ssa_name(node.name)
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            target = OPAQUE_SUBSTITUTES.get(target, target)
        self.opaque[node.name] = OpaqueCall(node.op, target, args, kwargs, multi, kept, nested)
        if value is None:
            return Const(None)
        if not multi:
            return op.results[0]
        results = iter(op.results)

        def rebuilt(v: Any) -> Any:
            if isinstance(v, tuple | list):
                return tuple(rebuilt(x) for x in v)
            return Const(None) if v is None else next(results)

        return rebuilt(value)

    def map_node(self, node: torch.fx.Node, value: Any) -> Any:
        handler = registry.handler_for(node, self.gm)
        if handler is None:
            raise NotMapped(target_name(node))
        start = self.block.last_op
        if node.op == "call_module":
            mod = self.gm.get_submodule(node.target)
            result = handler(self, mod, *node.args, **node.kwargs)
        elif node.op == "call_method":
            result = handler(self, *node.args, **node.kwargs)
        else:
            result = handler(self, *node.args, **node.kwargs)
        self.check_types(result, value, recorded_value(node))
        self.mark_opmath_steps(start, result if isinstance(result, tuple) else (result,))
        hint = ssa_name(node.name)
        for r in result if isinstance(result, tuple) else (result,):
            if isinstance(r, SSAValue) and r.name_hint is None and isinstance(r.owner, Operation):
                r.name_hint = hint
        return result

    def check_types(self, result: Any, value: Any, recorded: Any = None) -> None:
        if value is None and (
            result is None or (isinstance(result, Const) and result.value is None)
        ):
            # An output the op leaves out (`output_mask` False, `mkldnn_rnn_layer`'s
            # workspace when not training), as PyTorch did.
            return
        if isinstance(result, tuple):
            if not isinstance(value, tuple | list) or len(value) != len(result):
                raise NotMapped("result arity differs")
            if not isinstance(recorded, tuple | list) or len(recorded) != len(value):
                recorded = [None] * len(value)
            for r, v, rec in zip(result, value, recorded, strict=True):
                self.check_types(r, v, rec)
            return
        # With symbolic sizes the inferred type must say `?` exactly where the
        # recorded size is a symbol: a static size there would be this call's.
        want = self.type_of(value, recorded)
        if not isinstance(result, SSAValue) or result.type != want:
            raise NotMapped(f"inferred {getattr(result, 'type', result)}, PyTorch gave {want}")
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


def _writes_first_arg(schema: torch.FunctionSchema) -> bool:
    """Does an OpOverload's schema mark its first argument written (`Tensor(a!)`)?"""
    alias = schema.arguments[0].alias_info if schema.arguments else None
    return alias is not None and alias.is_write


def _aliases_nothing(schema: torch.FunctionSchema) -> bool:
    """Does an OpOverload's schema mark no argument or result aliased (`Tensor(a)`)
    or written (`Tensor(a!)`)? Its results are then fresh tensors."""
    return all(a.alias_info is None for a in (*schema.arguments, *schema.returns))


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
        return Importer(gm, example_inputs).run(name)


def import_graph(fn_or_module: Any, example_inputs: Sequence[Any]) -> ModuleOp:
    """`fusec.import_graph`: the `aten`-dialect module of a function or module."""
    gm = trace(fn_or_module)
    return import_fx(gm, example_inputs, ssa_name(graph_name(fn_or_module))).module
