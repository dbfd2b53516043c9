"""The `fusion` dialect: groups of pointwise work that run as one kernel.

A `fusion.group` is isolated from above: its block arguments are the group's
inputs, bound to the operands in the header, and `fusion.yield` names its outputs.

    %r:2 = fusion.group (%x = %a, %y = %b) : (tensor<4xf32>, tensor<4xf32>)
        -> (tensor<4xf32>, tensor<4xf32>) {
      %0 = aten.add %x, %y : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32>
      %1 = aten.sigmoid %0 : tensor<4xf32> -> tensor<4xf32>
      fusion.yield %0, %1 : tensor<4xf32>, tensor<4xf32>
    }
"""

from __future__ import annotations

from collections.abc import Sequence

from fusec.dialects.aten import SizeType, chunk_sizes
from fusec.dialects.inference import DYNAMIC, I64, broadcast_shapes, normalize_dim
from fusec.dialects.lazy_format import LazyFormatOp
from xdsl.dialects import builtin
from xdsl.dialects.builtin import (
    ArrayAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolRefAttr,
    TensorType,
)
from xdsl.dialects.utils.format import parse_assignment, print_assignment
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
)
from xdsl.irdl import (
    AnyAttr,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    Pure,
    RecursiveMemoryEffect,
)
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class YieldOp(LazyFormatOp):
    """Ends a `fusion.group` body and names the group's outputs.

    fusion.yield %0, %1 : tensor<4xf32>, tensor<4xf32>
    """

    name = "fusion.yield"
    values = var_operand_def(AnyAttr())
    traits = lazy_traits_def(lambda: (IsTerminator(), Pure(), HasParent(GroupOp)))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue | Operation):
        super().__init__(operands=[values])


@irdl_op_definition
class GroupOp(LazyFormatOp):
    """A fused kernel in the making: a single-block region over its inputs.

    %r = fusion.group (%x = %a) : (tensor<4xf32>) -> (tensor<4xf32>) {
      %0 = aten.neg %x : tensor<4xf32> -> tensor<4xf32>
      fusion.yield %0 : tensor<4xf32>
    }
    """

    name = "fusion.group"
    inputs = var_operand_def(AnyAttr())
    outputs = var_result_def(AnyAttr())
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())

    def __init__(
        self,
        inputs: Sequence[SSAValue | Operation],
        result_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    @staticmethod
    def empty(inputs: Sequence[SSAValue]) -> tuple[GroupOp, Block]:
        """A group over `inputs` with an empty body and no outputs yet."""
        block = Block(arg_types=[v.type for v in inputs])
        return GroupOp(inputs, [], Region(block)), block

    @property
    def yield_op(self) -> YieldOp:
        term = self.body.block.last_op
        assert isinstance(term, YieldOp)
        return term

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"fusion.group has {len(self.inputs)} inputs but its body takes "
                f"{len(block.args)} arguments"
            )
        for i, (arg, value) in enumerate(zip(block.args, self.inputs, strict=True)):
            if arg.type != value.type:
                raise VerifyException(
                    f"fusion.group input #{i} has type {value.type} but body argument "
                    f"#{i} has type {arg.type}"
                )
        term = block.last_op
        if not isinstance(term, YieldOp):
            raise VerifyException("fusion.group body must end with fusion.yield")
        yielded = [v.type for v in term.values]
        produced = [r.type for r in self.outputs]
        if yielded != produced:
            raise VerifyException(
                f"fusion.yield gives ({', '.join(map(str, yielded))}) but the group "
                f"returns ({', '.join(map(str, produced))})"
            )

    @classmethod
    def parse(cls, parser: Parser) -> GroupOp:
        pos = parser.pos
        pairs = parser.parse_comma_separated_list(
            Parser.Delimiter.PAREN, lambda: parse_assignment(parser)
        )
        parser.parse_punctuation(":")
        in_types = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
        parser.parse_punctuation("->")
        out_types = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, parser.parse_type)
        if len(in_types) != len(pairs):
            parser.raise_error(
                f"fusion.group binds {len(pairs)} inputs but lists {len(in_types)} types", pos
            )
        operands = parser.resolve_operands([v for _, v in pairs], in_types, pos)
        args = [a.resolve(t) for (a, _), t in zip(pairs, in_types, strict=True)]
        attrs = parser.parse_optional_attr_dict_with_keyword()
        body = parser.parse_region(args)
        op = cls(operands, out_types, body)
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        printer.print_list(
            zip(self.body.block.args, self.inputs, strict=True),
            lambda p: print_assignment(printer, p[0], p[1]),
        )
        printer.print_string(") : (")
        printer.print_list(self.inputs.types, printer.print_attribute)
        printer.print_string(") -> (")
        printer.print_list(self.outputs.types, printer.print_attribute)
        printer.print_string(")")
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)


@irdl_op_definition
class LaunchOp(LazyFormatOp):
    """Host side of an outlined group: runs kernel `@callee` over `args`.

    %r = fusion.launch @main_group0(%a, %b) : (tensor<4xf32>, f64) -> tensor<4xf32>
    """

    name = "fusion.launch"
    callee = prop_def(SymbolRefAttr)
    args = var_operand_def(AnyAttr())
    outputs = var_result_def(AnyAttr())
    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $outputs)"

    def __init__(
        self, callee: str, args: Sequence[SSAValue | Operation], result_types: Sequence[Attribute]
    ):
        super().__init__(
            operands=[args],
            result_types=[result_types],
            properties={"callee": SymbolRefAttr(callee)},
        )


@irdl_op_definition
class BroadcastingChunkOp(LazyFormatOp):
    """The seeds' `prim::BroadcastingChunk`: chunk every input the same way, as if
    all were first broadcast to one shape, without materializing the broadcast.

    `dim` is a dim of the inputs' broadcast shape, best written negative (counted
    from the last dim, as broadcasting aligns shapes), so it stays valid when inputs
    of lower rank join. Result `i * n + j` is piece `j` of input `i`: the input cut
    along its own copy of `dim` when it spans that dim, and the whole input when it
    is broadcast along it (size 1 or no such dim), since every piece of the
    broadcast value then sees the same elements. The pieces of all inputs broadcast
    against each other to piece `j` of the broadcast shape.

        %r:4 = fusion.broadcasting_chunk %a, %b chunks = 2 dim = -1
            : tensor<8x64xf32>, tensor<64xf32>
            -> tensor<8x32xf32>, tensor<8x32xf32>, tensor<32xf32>, tensor<32xf32>
    """

    name = "fusion.broadcasting_chunk"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    chunks = prop_def(IntegerAttr[builtin.I64])
    dim = prop_def(IntegerAttr[builtin.I64])
    traits = traits_def(Pure())
    assembly_format = (
        "$inputs `chunks` `=` $chunks `dim` `=` $dim attr-dict `:` type($inputs) "
        "`->` type($outputs)"
    )

    def __init__(self, inputs: Sequence[SSAValue | Operation], chunks: int, dim: int):
        props: dict[str, Attribute] = {
            "chunks": IntegerAttr(chunks, I64),
            "dim": IntegerAttr(dim, I64),
        }
        types = [SSAValue.get(v).type for v in inputs]
        super().__init__(
            operands=[inputs],
            result_types=[BroadcastingChunkOp.piece_types(types, chunks, dim)],
            properties=props,
        )

    @staticmethod
    def piece_types(input_types: Sequence[Attribute], chunks: int, dim: int) -> list[Attribute]:
        """Result types, input by input (raises `VerifyException` when invalid)."""
        if not input_types:
            raise VerifyException("needs at least one input")
        if chunks <= 0:
            raise VerifyException(f"chunks must be positive, got {chunks}")
        ts = [t for t in input_types if isinstance(t, TensorType)]
        if len(ts) != len(input_types):
            raise VerifyException("inputs must be tensors")
        shapes = [tuple(t.get_shape()) for t in ts]
        common = broadcast_shapes(*shapes)
        d = normalize_dim(dim, len(common))
        if not common:
            raise VerifyException("cannot chunk 0-d tensors")
        if common[d] == DYNAMIC:
            raise VerifyException(f"dim {dim} of the broadcast shape must be static")
        sizes = chunk_sizes(common[d], chunks)
        out: list[Attribute] = []
        for t, shape in zip(ts, shapes, strict=True):
            own = d - (len(common) - len(shape))
            for s in sizes:
                if own < 0 or shape[own] != common[d]:
                    out.append(t)
                else:
                    piece = list(shape)
                    piece[own] = s
                    out.append(TensorType(t.get_element_type(), piece))
        return out

    def verify_(self) -> None:
        expected = self.piece_types(self.inputs.types, self.chunks.value.data, self.dim.value.data)
        actual = list(self.outputs.types)
        if len(expected) != len(actual):
            raise VerifyException(
                f"{len(self.inputs)} inputs in {len(expected) // len(self.inputs)} "
                f"pieces need {len(expected)} results, but there are {len(actual)}"
            )
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            if e != a:
                raise VerifyException(f"result #{i} has type {a}, but the piece is {e}")


@irdl_op_definition
class BroadcastSizesOp(LazyFormatOp):
    """The seeds' `prim::BroadcastSizes`: the broadcast of several sizes
    (`torch.broadcast_shapes`), standing in for the size of a pointwise result that
    is no longer materialized.

    %s = fusion.broadcast_sizes %a, %b : !aten.size<2>, !aten.size<1> -> !aten.size<2>
    """

    name = "fusion.broadcast_sizes"
    sizes = var_operand_def(SizeType)
    result = result_def(SizeType)
    traits = traits_def(Pure())
    assembly_format = "$sizes attr-dict `:` type($sizes) `->` type($result)"

    def __init__(self, sizes: Sequence[SSAValue | Operation]):
        ranks = [_size_rank(SSAValue.get(s).type) for s in sizes]
        super().__init__(operands=[sizes], result_types=[SizeType(max(ranks, default=0))])

    def verify_(self) -> None:
        if not self.sizes:
            raise VerifyException("needs at least one size")
        rank = max(_size_rank(t) for t in self.sizes.types)
        if _size_rank(self.result.type) != rank:
            raise VerifyException(
                f"the broadcast of sizes of ranks {[_size_rank(t) for t in self.sizes.types]} "
                f"has rank {rank}, got {self.result.type}"
            )


@irdl_op_definition
class ZerosLikeOp(LazyFormatOp):
    """A contiguous tensor of zeros of `like`'s type, fed to a shared kernel in
    place of an input its group does not have (`share-group-kernels`: the group
    is another one with that input known to be zero).

    %z = fusion.zeros_like %x : tensor<2x8xf32> -> tensor<2x8xf32>
    """

    name = "fusion.zeros_like"
    like = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())
    assembly_format = "$like attr-dict `:` type($like) `->` type($result)"

    def __init__(self, like: SSAValue | Operation):
        super().__init__(operands=[like], result_types=[SSAValue.get(like).type])

    def verify_(self) -> None:
        if self.result.type != self.like.type:
            raise VerifyException(
                f"zeros like a {self.like.type} have that type, not {self.result.type}"
            )


def _size_rank(t: Attribute) -> int:
    assert isinstance(t, SizeType)
    return t.rank.data


LAYOUTS = ("contiguous", "any")
"""What an input spec may require of a tensor's strides."""


@irdl_attr_definition
class InputSpecAttr(ParametrizedAttribute):
    """What `fusion.guard` requires of one tensor input beyond its dtype and rank
    (those are the operand's type): the dims that must be size 1 (the broadcast
    pattern: every other dim must not be 1), the layout (`contiguous` or `any`
    strides) and the device (`cpu`, `cuda`, or one device such as `cuda:1`).

        #fusion.input_spec<ones = [1], layout = any, device = "cpu">
    """

    name = "fusion.input_spec"

    ones: ArrayAttr[IntAttr]
    layout: StringAttr
    device: StringAttr

    def __init__(self, ones: Sequence[int], layout: str, device: str):
        super().__init__(
            ArrayAttr([IntAttr(d) for d in ones]), StringAttr(layout), StringAttr(device)
        )

    @property
    def ones_dims(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.ones.data)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            parser.parse_keyword("ones")
            parser.parse_punctuation("=")
            ones = parser.parse_comma_separated_list(Parser.Delimiter.SQUARE, parser.parse_integer)
            parser.parse_punctuation(",")
            parser.parse_keyword("layout")
            parser.parse_punctuation("=")
            layout = parser.parse_keyword_in(LAYOUTS, " as the layout of a guarded input")
            parser.parse_punctuation(",")
            parser.parse_keyword("device")
            parser.parse_punctuation("=")
            device = parser.parse_str_literal(" as the device of a guarded input")
        return [ArrayAttr([IntAttr(d) for d in ones]), StringAttr(layout), StringAttr(device)]

    def print_parameters(self, printer: Printer) -> None:
        dims = ", ".join(str(d) for d in self.ones_dims)
        printer.print_string(
            f'<ones = [{dims}], layout = {self.layout.data}, device = "{self.device.data}">'
        )

    def verify_(self) -> None:
        if self.layout.data not in LAYOUTS:
            raise VerifyException(
                f"layout must be one of {', '.join(LAYOUTS)}, got {self.layout.data!r}"
            )
        if not self.device.data:
            raise VerifyException("device must not be empty")
        dims = self.ones_dims
        if list(dims) != sorted(set(dims)) or (dims and dims[0] < 0):
            raise VerifyException(f"ones must be increasing dims >= 0, got {list(dims)}")


@irdl_op_definition
class GuardOp(LazyFormatOp):
    """The seeds' `prim::CudaFusionGuard`: true when every tensor input matches the
    specialization its group was compiled for. Dtype and rank are the operand's
    type; each input's `#fusion.input_spec` adds which dims are 1 (the broadcast
    pattern), the layout and the device. The `guard` pass puts each group in an
    `scf.if` on it, with the unfused ops as the else branch:

        %ok = fusion.guard (%a : tensor<4x1xf32> <ones = [1], layout = any, device = "cpu">,
                            %b : tensor<3xf32> <ones = [], layout = any, device = "cpu">)
    """

    name = "fusion.guard"
    inputs = var_operand_def(TensorType)
    specs = prop_def(ArrayAttr[InputSpecAttr])
    ok = result_def(IntegerType(1))
    traits = traits_def(Pure())

    def __init__(self, inputs: Sequence[SSAValue | Operation], specs: Sequence[InputSpecAttr]):
        super().__init__(
            operands=[inputs],
            result_types=[IntegerType(1)],
            properties={"specs": ArrayAttr(specs)},
        )

    def verify_(self) -> None:
        specs = self.specs.data
        if len(specs) != len(self.inputs):
            raise VerifyException(
                f"fusion.guard has {len(self.inputs)} inputs but {len(specs)} input specs"
            )
        for i, (value, spec) in enumerate(zip(self.inputs, specs, strict=True)):
            # Attributes built by the generic parser are not verified on their own.
            try:
                spec.verify_()
            except VerifyException as e:
                raise VerifyException(f"input #{i} spec: {e}") from None
            t = value.type
            assert isinstance(t, TensorType)
            shape = t.get_shape()
            ones = spec.ones_dims
            if ones and ones[-1] >= len(shape):
                raise VerifyException(
                    f"input #{i} has rank {len(shape)} but its spec names size-1 dim {ones[-1]}"
                )
            for d, size in enumerate(shape):
                if d in ones and size not in (1, DYNAMIC):
                    raise VerifyException(
                        f"input #{i} spec says dim {d} is 1 but its type {t} has size {size}"
                    )
                if d not in ones and size == 1:
                    raise VerifyException(
                        f"input #{i} has type {t}, size 1 in dim {d}, but its spec does not say so"
                    )

    @classmethod
    def parse(cls, parser: Parser) -> GuardOp:
        def entry() -> tuple[SSAValue, InputSpecAttr]:
            operand = parser.parse_unresolved_operand()
            parser.parse_punctuation(":")
            t = parser.parse_type()
            params = InputSpecAttr.parse_parameters(parser)
            return parser.resolve_operand(operand, t), InputSpecAttr.new(params)

        entries = parser.parse_comma_separated_list(Parser.Delimiter.PAREN, entry)
        attrs = parser.parse_optional_attr_dict_with_keyword()
        op = cls([v for v, _ in entries], [s for _, s in entries])
        if attrs is not None:
            op.attributes |= attrs.data
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" (")
        for i, (value, spec) in enumerate(zip(self.inputs, self.specs.data, strict=True)):
            if i:
                printer.print_string(", ")
            printer.print_operand(value)
            printer.print_string(" : ")
            printer.print_attribute(value.type)
            printer.print_string(" ")
            spec.print_parameters(printer)
        printer.print_string(")")
        if self.attributes:
            printer.print_op_attributes(self.attributes, print_keyword=True)


Fusion = Dialect(
    "fusion",
    [GroupOp, YieldOp, LaunchOp, BroadcastingChunkOp, BroadcastSizesOp, ZerosLikeOp, GuardOp],
    [InputSpecAttr],
)
