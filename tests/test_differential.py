"""Differential tests: `fusec.compile(fn)(*args)` against eager `fn(*args)` on
recurrent cells, MLP tails, broadcasting, strided inputs and several dtypes,
and the number of fused kernels where fusion must happen."""

from __future__ import annotations

import fusec
import pytest
import torch
import torch.nn.functional as F
from reference_models import lstm_cell

# A fused kernel computes a chain of f16/bf16 ops in f32 and rounds once, where
# eager rounds after every op: the two differ by a few ulps of the narrow type.
FUSED_TOLERANCE = {
    torch.float16: {"rtol": 5e-3, "atol": 2e-3},
    torch.bfloat16: {"rtol": 5e-2, "atol": 2e-2},
}


def check(fn, args, launches=None, **tol):
    """Compile `fn`, run it twice (compile, then the cached program), compare with eager."""
    dtypes = {a.dtype for a in args if isinstance(a, torch.Tensor)}
    for dt, t in FUSED_TOLERANCE.items():
        if dt in dtypes and not tol:
            tol = t
    f = fusec.compile(fn)
    want = fn(*args)
    for _ in range(2):
        got = f(*args)
        flat_got = got if isinstance(got, tuple | list) else (got,)
        flat_want = want if isinstance(want, tuple | list) else (want,)
        assert len(flat_got) == len(flat_want)
        for g, w in zip(flat_got, flat_want, strict=True):
            assert g.dtype == w.dtype and g.shape == w.shape
            torch.testing.assert_close(g, w, **tol)
    if launches is not None:
        assert f.launches_per_call == launches, f.last.program.describe()
    return f


def lstm_args(b=8, i=12, h=16, dtype=torch.float32):
    return [torch.randn(*s, dtype=dtype) for s in
            [(b, i), (b, h), (b, h), (4 * h, i), (4 * h, h), (4 * h,), (4 * h,)]]  # fmt: skip


def test_lstm_cell_matches_eager():
    check(lstm_cell, lstm_args())


def test_lstm_cell_is_one_kernel():
    check(lstm_cell, lstm_args(), launches=1)


def lstm_cell_linear(x, hx, cx, w, b):
    gates = torch.addmm(b, torch.cat([x, hx], 1), w)
    i, f, g, o = gates.chunk(4, 1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lstm_cell_fused_gates_is_one_kernel(dtype):
    b, i, h = 4, 6, 8
    args = [torch.randn(b, i, dtype=dtype), torch.randn(b, h, dtype=dtype),
            torch.randn(b, h, dtype=dtype), torch.randn(i + h, 4 * h, dtype=dtype),
            torch.randn(4 * h, dtype=dtype)]  # fmt: skip
    check(lstm_cell_linear, args, launches=1)


def gru_cell(x, hx, w_ih, w_hh, b_ih, b_hh):
    gi = F.linear(x, w_ih, b_ih)
    gh = F.linear(hx, w_hh, b_hh)
    i_r, i_i, i_n = gi.chunk(3, 1)
    h_r, h_i, h_n = gh.chunk(3, 1)
    r = torch.sigmoid(i_r + h_r)
    z = torch.sigmoid(i_i + h_i)
    n = torch.tanh(i_n + r * h_n)
    return n + z * (hx - n)


def test_gru_cell_is_one_kernel():
    b, i, h = 5, 7, 6
    args = [torch.randn(b, i), torch.randn(b, h), torch.randn(3 * h, i), torch.randn(3 * h, h),
            torch.randn(3 * h), torch.randn(3 * h)]  # fmt: skip
    check(gru_cell, args, launches=1)


def gelu_tail(x, w, b):
    return F.gelu(x @ w + b)


def gelu_tanh_tail(x, w, b):
    return F.gelu(torch.matmul(x, w) + b, approximate="tanh")


def silu_glu(x, w, v):
    return F.silu(x @ w) * (x @ v)


def residual(x, y):
    return x + torch.relu(y) * torch.sigmoid(y) - torch.tanh(x) / (torch.exp(-y) + x.abs())


FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", [gelu_tail, gelu_tanh_tail], ids=["gelu", "gelu_tanh"])
def test_gelu_mlp_tails(fn, dtype):
    x, w, b = (
        torch.randn(6, 10, dtype=dtype),
        torch.randn(10, 12, dtype=dtype),
        torch.randn(12, dtype=dtype),
    )
    check(fn, [x, w, b], launches=1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_silu_glu_tail(dtype):
    x, w, v = (torch.randn(s, dtype=dtype) for s in [(6, 10), (10, 12), (10, 12)])
    check(silu_glu, [x, w, v], launches=1)


@pytest.mark.parametrize("dtype", FLOATS)
def test_residual_of_activations(dtype):
    x, y = torch.randn(9, 17, dtype=dtype), torch.randn(9, 17, dtype=dtype)
    check(residual, [x, y], launches=1)


def outer(a, b):
    return torch.sigmoid(a) * b + a


def test_broadcast_column_times_row():
    check(outer, [torch.randn(7, 1), torch.randn(1, 5)], launches=1)


def test_broadcast_python_scalar_and_zero_dim_tensor():
    def fn(x, s: float, t):
        return torch.tanh(x * s) + t

    check(fn, [torch.randn(4, 3), 0.75, torch.tensor(2.0)], launches=1)
    check(fn, [torch.randn(4, 3), 3, torch.tensor(2.0, dtype=torch.float64)], launches=1)


def test_constants_in_the_graph():
    def fn(x):
        return torch.sigmoid(x * 2.0 + 1) - 0.5

    check(fn, [torch.randn(5, 4)], launches=1)


def test_stride_zero_and_non_contiguous_inputs():
    base = torch.randn(6, 8)
    expanded = torch.randn(1, 8).expand(6, 8)
    transposed = torch.randn(8, 6).t()
    sliced = torch.randn(6, 16)[:, ::2]
    assert expanded.stride()[0] == 0 and not transposed.is_contiguous()
    check(residual, [expanded, transposed], launches=1)
    check(residual, [sliced, base], launches=1)
    check(outer, [transposed, sliced], launches=1)


def test_mixed_dtypes_promote_like_eager():
    def fn(x, y):
        return torch.sigmoid(x.float()) + y

    check(fn, [torch.randn(3, 4, dtype=torch.float16), torch.randn(3, 4, dtype=torch.float64)])


def test_comparisons_where_and_integer_division():
    def fn(x, y, k):
        m = torch.where(x > y, x - y, y * 0.5)
        q = torch.div(k, 3, rounding_mode="floor") + torch.div(k, 2, rounding_mode="trunc")
        return m, q, (k % 2 == 0).logical_not()

    k = torch.randint(-20, 20, (4, 5))
    check(fn, [torch.randn(4, 5), torch.randn(4, 5), k])


def test_unsupported_ops_are_left_unfused_and_still_right():
    def fn(x, y):
        a = torch.sigmoid(x) * y
        s = torch.softmax(a, dim=-1)  # fuses with the sigmoid; cumsum and topk do not
        c = torch.cumsum(s, 1)
        return torch.tanh(c) + a, torch.topk(c, 2, dim=1).values

    f = check(fn, [torch.randn(4, 6), torch.randn(4, 6)])
    kinds = [s.kind for s in f.last.program.steps]
    assert "opaque" in kinds


def test_views_reshapes_and_slices():
    def fn(x):
        y = x.view(x.size(0), 2, -1).permute(0, 2, 1).reshape(x.size(0), -1)
        return torch.relu(y[:, 1:]) + y[:, :-1].sum(1, keepdim=True), x.t().contiguous() * 2

    check(fn, [torch.randn(3, 8)])
    check(fn, [torch.randn(5, 8)])
