"""Matrix products run through PyTorch write large results into the output pool
(`fusec.runtime.pooled_products`): eager's values, no more ATen calls, the
pool's block served again on the next call, and a result the caller keeps is
never handed out again."""

from __future__ import annotations

import torch
import torch._dynamo
from fusec.runtime import cpu_pool
from fusec.runtime.pooled_products import linear, mm
from kernel_counts import top_level_aten
from torch import nn


class Wide(nn.Module):
    """A feed-forward block whose up-projection result is 1 MiB (512 x 512 f32)."""

    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(128, 512)
        self.down = nn.Linear(512, 128, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.tanh(self.up(x)))


def _pool() -> cpu_pool.OutputPool:
    pool = cpu_pool.pool()
    assert pool is not None
    return pool


def test_large_products_reuse_pooled_blocks_with_eagers_values():
    torch.manual_seed(0)
    model, x = Wide(), torch.randn(8, 64, 128)
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    with torch.no_grad():
        for _ in range(3):
            torch.testing.assert_close(compiled(x), model(x))
        calls = top_level_aten(lambda: compiled(x))
    assert sum(calls.values()) <= 2, calls  # the two products, as eager's two linears


def test_a_large_result_comes_from_the_pool():
    torch.manual_seed(0)
    w, x = torch.randn(512, 128), torch.randn(4, 128, 128)
    a, b = torch.randn(512, 64), torch.randn(64, 600)
    for product, args in ((linear, (x, w)), (mm, (a, b))):
        first = product(*args)
        before = _pool().reused
        del first
        again = product(*args)
        assert _pool().reused == before + 1, product
        torch.testing.assert_close(
            again, torch.nn.functional.linear(x, w) if product is linear else a @ b
        )


def test_a_kept_result_is_not_overwritten():
    torch.manual_seed(0)
    w, b = torch.randn(512, 128), torch.randn(512)
    x, y = torch.randn(4, 128, 128), torch.randn(4, 128, 128)
    first = linear(x, w, b)
    kept = first.clone()
    second = linear(y, w, b)
    assert first.data_ptr() != second.data_ptr()
    torch.testing.assert_close(first, kept)
    torch.testing.assert_close(second, torch.nn.functional.linear(y, w, b))
    del first
    third = linear(x, w, b)
    torch.testing.assert_close(third, kept)


def test_plain_calls_where_the_pool_does_not_apply():
    """Small results, strided inputs, mixed dtypes and autograd-recorded calls
    take PyTorch's own call: the same values (and gradients)."""
    torch.manual_seed(0)
    w = torch.randn(512, 128, requires_grad=True)
    x = torch.randn(128, 4, 128).transpose(0, 1)  # strided
    torch.testing.assert_close(linear(x, w), torch.nn.functional.linear(x, w))
    out = linear(torch.randn(4, 128), w)
    out.sum().backward()  # recorded by autograd: not an out= call
    assert w.grad is not None
    a, b = torch.randn(600, 600), torch.randn(600, 600, dtype=torch.float64)
    torch.testing.assert_close(mm(a, a), torch.mm(a, a))
    assert mm(a.double(), b).dtype == torch.float64
    small = torch.randn(3, 4)
    torch.testing.assert_close(mm(small, small.t()), small @ small.t())


def test_training_with_pooled_products():
    torch.manual_seed(0)
    model, x = Wide(), torch.randn(8, 64, 128)
    twin = Wide()
    twin.load_state_dict(model.state_dict())
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="fusec")
    for _ in range(2):
        model.zero_grad()
        twin.zero_grad()
        compiled(x).square().sum().backward()
        twin(x).square().sum().backward()
        for p, q in zip(model.parameters(), twin.parameters(), strict=True):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-4)


def test_small_static_products_are_plain_calls():
    """A product whose static result is under the pool's minimum runs as the
    plain PyTorch call (no check per call); a large or dynamic one keeps the
    pooled step."""
    from fusec.codegen.torch_ops import op_info
    from fusec.dialects.aten import Aten
    from fusec.runtime.pooled_products import SMALL_PRODUCT
    from fusec.runtime.torch_steps import step_callable
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func
    from xdsl.parser import Parser

    ctx = Context()
    for d in (Builtin, Func, Aten):
        ctx.load_dialect(d)
    src = """
    func.func @f(%x: tensor<8x16xf32>, %w: tensor<32x16xf32>, %a: tensor<512x64xf32>,
                 %b: tensor<64x600xf32>, %y: tensor<?x16xf32>) {
      %s = aten.linear %x, %w : tensor<8x16xf32>, tensor<32x16xf32> -> tensor<8x32xf32>
      %l = aten.mm %a, %b : tensor<512x64xf32>, tensor<64x600xf32> -> tensor<512x600xf32>
      %d = aten.linear %y, %w : tensor<?x16xf32>, tensor<32x16xf32> -> tensor<?x32xf32>
      func.return
    }
    """
    ops = list(Parser(ctx, src).parse_module().walk())
    small, large, dynamic = (op_info(op) for op in ops if op.name in ("aten.linear", "aten.mm"))
    assert small.props.get(SMALL_PRODUCT) is True
    assert SMALL_PRODUCT not in large.props and SMALL_PRODUCT not in dynamic.props
    torch.manual_seed(0)
    x, w = torch.randn(8, 16), torch.randn(32, 16)
    (out,) = step_callable(small)(x, w)
    torch.testing.assert_close(out, torch.nn.functional.linear(x, w))
    a, b = torch.randn(512, 64), torch.randn(64, 600)
    step = step_callable(large)
    first = step(a, b)[0]
    torch.testing.assert_close(first, a @ b)
    del first
    before = _pool().reused
    torch.testing.assert_close(step(a, b)[0], a @ b)
    assert _pool().reused == before + 1
