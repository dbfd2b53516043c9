"""Differential tests of reductions and normalizations inside fused kernels:
each form against eager PyTorch in f32/f16/bf16/f64 over reduced dims of 1, 7,
1000 and 4096 elements, strided inputs, rows of -inf and NaN, and how many kernels
each form takes (softmax, log_softmax, layer_norm and RMSNorm: one)."""

from __future__ import annotations

import fusec
import pytest
import torch
import torch.nn.functional as F
from torch import nn

SIZES = (1, 7, 1000, 4096)
DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
# Kernels compute f16/bf16 chains in f32 and round once; eager rounds per op.
TOLERANCE = {
    torch.float32: {"rtol": 1e-4, "atol": 1e-5},
    torch.float64: {"rtol": 1e-10, "atol": 1e-12},
    torch.float16: {"rtol": 1e-2, "atol": 1e-2},
    torch.bfloat16: {"rtol": 5e-2, "atol": 5e-2},
}


def _flat(v):
    return v if isinstance(v, tuple | list) else (v,)


def check(fn, args, launches=None, compiled=None, tol=None):
    """`fusec.compile(fn)` (or `compiled`) against eager `fn` on `args`."""
    dtypes = [a.dtype for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()]
    tol = tol or TOLERANCE[dtypes[0]]
    f = compiled or fusec.compile(fn)
    with torch.no_grad():
        want = _flat(fn(*args))
        got = _flat(f(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, equal_nan=True, **tol)
    if launches is not None:
        assert f.launches_per_call == launches, f.last.program.describe()
    return f


def rms_norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def softmax(x):
    return torch.softmax(x, -1)


def log_softmax(x):
    return F.log_softmax(x, dim=1)


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b)


def variance(x):
    return (x * 2).var(-1, keepdim=True) + 1, torch.std(x - 1, -1, keepdim=True, correction=0)


def extremes(x):
    return x / x.amax(-1, keepdim=True).abs() + x.amin(-1, keepdim=True), x - x.mean(-1, True)


def bias_grad(grad, y):
    """The shape of a backward: a pointwise gradient and the bias gradient, its sum
    over the batch."""
    s = torch.sigmoid(y)
    g = grad * s * (1 - s)
    return g, g.sum(0)


def cross_entropy(x, t):
    return F.cross_entropy(x, t)


def _rows(n, dtype, rows=5):
    return [torch.randn(rows, n, dtype=dtype)]


# form -> (function, inputs for reduced size n, kernels per call or None)
FORMS = {
    "softmax": (softmax, _rows, 1),
    "log_softmax": (log_softmax, _rows, 1),
    "layer_norm": (
        layer_norm,
        lambda n, dt: [
            torch.randn(2, 3, n, dtype=dt),
            torch.randn(n, dtype=dt),
            torch.randn(n, dtype=dt),
        ],  # fmt: skip
        1,
    ),
    "rms_norm": (
        rms_norm,
        lambda n, dt: [torch.randn(4, n, dtype=dt), torch.randn(n, dtype=dt)],
        1,
    ),
    "variance": (variance, _rows, None),
    "extremes": (extremes, _rows, None),
    "bias_grad": (
        bias_grad,
        lambda n, dt: [torch.randn(n, 6, dtype=dt), torch.randn(n, 6, dtype=dt)],
        1,
    ),
    "cross_entropy": (
        cross_entropy,
        lambda n, dt: [torch.randn(4, n, dtype=dt), torch.randint(0, n, (4,))],
        None,
    ),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("form", FORMS)
def test_form_matches_eager(form, dtype):
    fn, make, launches = FORMS[form]
    if form == "variance" and dtype != torch.float64:
        sizes = SIZES[1:]  # var of one element is NaN either way; f64 checks it
    else:
        sizes = SIZES
    torch.manual_seed(0)
    compiled = fusec.compile(fn)
    for n in sizes:
        tol = dict(TOLERANCE[dtype])
        if form == "bias_grad" and dtype in (torch.float16, torch.bfloat16):
            # Eager rounds each of the n summed terms to the narrow type, the kernel
            # does not: the sums differ by about sqrt(n) of those roundings.
            tol["atol"] *= max(1.0, n**0.5 / 8)
        check(fn, make(n, dtype), launches, compiled, tol)


@pytest.mark.parametrize("fn", [softmax, log_softmax, rms_norm.__name__], ids=str)
def test_strided_inputs(fn):
    fn = rms_norm if fn == "rms_norm" else fn
    torch.manual_seed(1)
    base = torch.randn(1000, 16)
    x = base.t()  # reduced dim has stride 16
    args = [x, torch.randn(1000)] if fn is rms_norm else [x]
    check(fn, args, launches=1)
    sliced = torch.randn(6, 2000)[:, ::2]
    args = [sliced, torch.randn(1000)] if fn is rms_norm else [sliced]
    check(fn, args, launches=1)


def test_layer_norm_of_a_transposed_input():
    torch.manual_seed(2)
    x = torch.randn(7, 3, 1000).transpose(0, 2)  # [1000, 3, 7], reduced dim 7 strided
    w, b = torch.randn(7), torch.randn(7)
    check(layer_norm, [x, w, b], launches=1)


def test_softmax_rows_of_inf_and_nan():
    x = torch.randn(6, 7)
    x[0] = -torch.inf  # all -inf: NaN, as eager
    x[1, 3] = torch.nan  # a NaN poisons its row
    x[2, :3] = -torch.inf  # some -inf: zeros there
    x[3, 2] = torch.inf  # +inf: NaN row in eager too
    for fn in (softmax, log_softmax):
        check(fn, [x], launches=1)


def test_masked_max_and_min_propagate_nan_and_inf():
    """The max/min accumulate a NaN flag beside `llvm.maximum` (to keep the
    masked form vectorized): NaN rows, all-masked rows and +-inf still match."""
    x = torch.randn(6, 300)
    x[1, 17] = torch.nan
    x[2] = -torch.inf
    x[3, 299] = torch.inf
    x[4, 0] = torch.nan
    m = torch.rand(6, 300) > 0.7

    def fn(x, m):
        y = x.masked_fill(m, float("-inf"))
        z = x.masked_fill(m, float("inf"))
        return y.amax(-1, keepdim=True) * 2, z.amin(-1) + 1, torch.softmax(y, -1)

    check(fn, [x, m])


@pytest.mark.skipif(not torch.backends.cpu.get_cpu_capability().startswith("AVX"), reason="x86")
def test_a_masked_row_max_is_vectorized():
    """`maximum(acc, select(m, -inf, v))` must stay a vector reduction (LLVM
    made it `select(m, acc, maximum(acc, v))`, scalar): packed max
    instructions in the kernel's machine code, not only scalar ones."""
    import llvmlite.binding as llvm
    from fusec.api.compile_steps import context as _context
    from fusec.backends import llvm_jit
    from fusec.codegen import kernel as codegen
    from fusec.dialects.fusion import GroupOp
    from xdsl.parser import Parser

    fn = lambda a, m: a.masked_fill(m, float("-inf")).amax(-1, keepdim=True) * 2  # noqa: E731
    f = fusec.compile(fn, program_cache=False)
    f(torch.randn(8, 64), torch.rand(8, 64) > 0.5)
    module = Parser(_context(), f.ir()).parse_module()
    (group,) = [op for op in module.walk() if isinstance(op, GroupOp)]
    ir = llvm_jit.optimize_for_host(codegen.kernel_llvm_ir(group)[1])
    asm = llvm_jit.host_target_machine().emit_assembly(llvm.parse_assembly(ir))
    assert "maxps" in asm, "the masked max reduction is not vectorized"


def test_softmax_with_dtype_and_other_dims():
    torch.manual_seed(3)
    x = torch.randn(5, 9, 11, dtype=torch.float16)
    check(lambda x: F.softmax(x, dim=1, dtype=torch.float32), [x], launches=1,
          tol=TOLERANCE[torch.float32])  # fmt: skip
    check(lambda x: torch.softmax(x.float(), 0), [x], launches=1, tol=TOLERANCE[torch.float32])


def test_reductions_over_several_dims_and_all_dims():
    torch.manual_seed(4)
    x = torch.randn(4, 5, 6)
    check(lambda x: x - x.mean((0, 2), keepdim=True), [x], launches=1)
    check(lambda x: (x * x).sum() + x.amax(), [x])
    check(lambda x: torch.exp(x).sum(1), [x], launches=1)


def test_integer_sums_and_extremes():
    x = torch.randint(-50, 50, (6, 33))
    check(lambda x: (x * 3).sum(-1), [x], launches=1, tol={"rtol": 0, "atol": 0})
    check(lambda x: (x + 1).amax(0) - (x - 1).amin(0), [x], tol={"rtol": 0, "atol": 0})


def test_bias_grad_is_an_extra_output_of_the_backward_group():
    torch.manual_seed(5)
    f = check(bias_grad, [torch.randn(64, 32), torch.randn(64, 32)], launches=1)
    text = f.last.module_text()
    group = text[text.index("fusion.group") : text.index("fusion.yield")]
    assert text.count("fusion.group") == 1 and "aten.sum" in group and "aten.sigmoid" in group
    assert "-> (tensor<1x32xf32>, tensor<64x32xf32>)" in group


class _Block(nn.Module):
    """A GPT-2-style block without its matmuls' inputs being fused: layer norms,
    attention softmax, GELU and residual adds."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = torch.softmax((q @ k.transpose(-2, -1)) * (1.0 / (d // self.heads) ** 0.5), dim=-1)
        y = (self.drop(att) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


def test_gpt2_block_non_matmul_work_in_few_kernels():
    torch.manual_seed(6)
    block = _Block().eval()
    x = torch.randn(2, 8, 32)
    f = check(block, [x])
    # 2 layer norms + 1 attention softmax + 2 residual sites: at most 5 kernels.
    assert 1 <= f.launches_per_call <= 5, f.last.program.describe()


class _Then(nn.Module):
    """`after(module(x))`, as a module fx can trace."""

    def __init__(self, module, after):
        super().__init__()
        self.module, self.after = module, after

    def forward(self, x):
        return self.after(self.module(x))


class _DropBetween(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return torch.relu(self.drop(x * 2))


def test_eval_batch_norm_and_dropout_fuse():
    torch.manual_seed(7)
    bn = nn.BatchNorm2d(4).eval()
    bn.running_mean.normal_()
    bn.running_var.uniform_(0.5, 2)
    model = _Then(bn, lambda y: torch.relu(F.dropout(y, 0.5, training=False))).eval()
    check(model, [torch.randn(2, 4, 5, 5)], launches=1)
    check(_DropBetween().eval(), [torch.randn(2, 4)], launches=1)
    fn = lambda x, m, v: F.dropout(F.batch_norm(x, m, v, eps=1e-3), 0.2, training=False).exp()  # noqa: E731
    check(fn, [torch.randn(3, 4, 6), torch.randn(4), torch.rand(4) + 0.5], launches=1)


def test_layer_norm_and_rms_norm_modules():
    torch.manual_seed(8)
    ln = nn.LayerNorm(16).eval()
    nn.init.normal_(ln.weight)
    check(_Then(ln, torch.tanh).eval(), [torch.randn(3, 16)], launches=1)
    check(_Then(nn.RMSNorm(16), F.silu).eval(), [torch.randn(3, 16)], launches=1)
    check(lambda x: F.layer_norm(x, (4, 16)) * 2, [torch.randn(3, 4, 16)], launches=1)


def _cross_entropy_with(reduction):
    def fn(x, t):
        return F.cross_entropy(x, t, reduction=reduction)

    return fn


def test_cross_entropy_reductions_and_ignore_index():
    torch.manual_seed(9)
    x, t = torch.randn(6, 10), torch.randint(0, 10, (6,))
    t[2] = -100
    for reduction in ("mean", "sum", "none"):
        check(_cross_entropy_with(reduction), [x, t])
    check(lambda x, t: F.cross_entropy(x, t, ignore_index=3), [x, torch.full((6,), 3)])


def test_softmax_backward_forms_fuse():
    """The ATen backward ops of softmax and log-softmax, as AOTAutograd graphs call
    them, fuse (with the forward here) and match eager."""
    torch.manual_seed(10)
    x, g = torch.randn(6, 1000), torch.randn(6, 1000)

    def sm_back(g, x):
        return torch._softmax_backward_data(g, torch.softmax(x, -1), -1, torch.float32)

    def lsm_back(g, x):
        return torch._log_softmax_backward_data(g, F.log_softmax(x, 1), 1, torch.float32)

    for fn in (sm_back, lsm_back):
        check(fn, [g, x], launches=1)  # forward and backward: one kernel, three stages


def test_cat_of_a_reduction_groups_outputs_stays_outside():
    """`fuse-concat-exits` leaves reduction groups alone (their kernels write rows
    and full tensors in different loops); the cat runs through PyTorch."""

    def fn(x):
        m = x - x.mean(-1, keepdim=True)
        return torch.cat([m * 2, m * 3], 1)

    check(fn, [torch.randn(4, 8)], launches=1)


def test_aten_level_softmax_and_native_layer_norm_fuse():
    """The ATen forms (`_softmax`, `_log_softmax`, `native_layer_norm` with its mean
    and rstd outputs) as traced graphs call them: one kernel each."""
    torch.manual_seed(11)
    x, w, b = torch.randn(3, 5, 64), torch.randn(64), torch.randn(64)

    def nln(x, w, b):
        return torch.native_layer_norm(x, [64], w, b, 1e-5)

    check(nln, [x, w, b], launches=1)
    check(lambda x: torch._softmax(x, 1, False), [x], launches=1)
    check(lambda x: torch._log_softmax(x, -1, False), [x], launches=1)


def test_layer_norm_backward_fuses():
    """`native_layer_norm_backward`: the input gradient is one group (two means over
    the normalized dim), the weight and bias gradients another (sums over the batch)."""
    torch.manual_seed(12)
    x, g, w, b = torch.randn(16, 64), torch.randn(16, 64), torch.randn(64), torch.randn(64)
    _, mean, rstd = torch.native_layer_norm(x, [64], w, b, 1e-5)

    def back(g, x, mean, rstd, w, b):
        return torch.ops.aten.native_layer_norm_backward(
            g, x, [64], mean, rstd, w, b, [True, True, True]
        )

    check(back, [g, x, mean, rstd, w, b], launches=2)


def test_layer_norm_backward_without_the_input_gradient_fuses():
    """`output_mask` [False, True, True] (a first layer norm, whose input needs no
    gradient): PyTorch returns None for the input gradient, and the weight and
    bias gradients still fuse (one group) instead of running as an opaque op."""
    torch.manual_seed(15)
    x, g, w, b = torch.randn(2, 8, 64), torch.randn(2, 8, 64), torch.randn(64), torch.randn(64)
    _, mean, rstd = torch.native_layer_norm(x, [64], w, b, 1e-5)

    def back(g, x, mean, rstd, w, b):
        _, gw, gb = torch.ops.aten.native_layer_norm_backward(
            g, x, [64], mean, rstd, w, b, [False, True, True]
        )
        return gw, gb

    f = check(back, [g, x, mean, rstd, w, b], launches=1)
    assert "aten.opaque" not in f.ir(), f.ir()


def test_column_reductions_in_blocks_and_remainders():
    """Reductions whose innermost dim is kept run 16 columns per nest where the
    columns are contiguous (8 where strided), then the rest one by one:
    column counts around the block sizes, a middle reduced dim, and several
    stages (a column softmax) all match eager."""
    torch.manual_seed(13)
    for cols in (3, 8, 15, 16, 19, 45):
        g, y = torch.randn(37, cols), torch.randn(37, cols)
        check(bias_grad, [g, y], launches=1)
    x = torch.randn(4, 5, 19)
    check(lambda x: torch.softmax(x, 1), [x], launches=1)
    check(lambda x: (x * x).sum(1, keepdim=True) - x.amax((0, 1)), [x])
    check(lambda x: x - x.mean(0), [x.transpose(0, 2)], launches=1)


def layer_norm_weight_grad(g, x, mean, rstd):
    """What a layer norm's backward sums over the batch for its weight gradient."""
    return ((x - mean) * rstd * g).sum(dim=(0, 1))


def test_column_reductions_contiguous_strided_and_broadcast():
    """The contiguous-columns version and the strided one: row-broadcast operands
    (stride 0 along the columns) keep the contiguous version, a transposed operand
    takes the strided one, and a column count split over threads (not a multiple
    of any block) covers every column once."""
    torch.manual_seed(14)
    for cols in (45, 256):
        g, x = torch.randn(8, 12, cols), torch.randn(8, 12, cols)
        mean, rstd = torch.randn(8, 12, 1), torch.rand(8, 12, 1) + 0.5
        check(layer_norm_weight_grad, [g, x, mean, rstd], launches=1)
        transposed = torch.randn(cols, 12, 8).permute(2, 1, 0)
        check(layer_norm_weight_grad, [g, transposed, mean, rstd], launches=1)
    wide = torch.randn(130, 1003)  # more than one thread's worth of work
    check(bias_grad, [wide, torch.randn(130, 1003)], launches=1)
    check(bias_grad, [wide, torch.randn(1003, 130).t()], launches=1)


def _column_forms():
    return {
        "sum": lambda x: (x * 3).sum(0),
        "mean": lambda x: torch.tanh(x).mean(0),
        "amax": lambda x: (x + 1).amax(0),
        "amin": lambda x: (x - 1).amin(0),
        "var": lambda x: (x * 2).var(0),
        "two in a stage": lambda x: ((x * 3).sum(0), (x * 3).amax(0), x * 3),
        "row input": lambda x, w: ((x * x).sum(0, keepdim=True) * w + 1, torch.relu(x)),
    }


@pytest.mark.parametrize("cols", [1, 255, 256, 257, 600, 2049, 4097, 8193, 16385])
def test_column_reductions_accumulate_tiles_row_by_row(cols):
    """One-stage column reductions (`RowAccumulators`): tiles of as many
    columns as 64 KiB of accumulators hold (`column_tile`: 16384 for one f32
    sum, 4096 for Welford's three), column counts around them (one past a tile:
    a second tile of one column), every kind (Welford's three
    accumulators, max's NaN flag: a NaN in one column), several reductions in a
    stage, full outputs beside row outputs, a row operand; contiguous, transposed
    (the strided version) and row-broadcast operands."""
    torch.manual_seed(cols)
    x = torch.randn(33 if cols < 2000 else 9, cols)
    x[5, cols // 2] = float("nan")
    w = torch.randn(cols)
    for name, fn in _column_forms().items():
        args = [x, w] if name == "row input" else [x]
        rows = x.shape[0]
        for first in (x, torch.randn(cols, rows).t(), torch.randn(rows, 1).expand(rows, cols)):
            f = check(fn, [first, *args[1:]])
            assert f.launches_per_call >= 1, (name, f.last.program.describe())


def test_column_reductions_of_other_dtypes_and_ranks():
    torch.manual_seed(15)
    ints = torch.randint(-100, 100, (40, 300))
    check(lambda x: (x * 2).sum(0), [ints.float()], launches=1)
    got = fusec.compile(lambda x: (x * 2).sum(0))(ints)
    assert torch.equal(got, (ints * 2).sum(0))
    check(lambda x: (x * 2).sum(0), [torch.randn(64, 300).half()], launches=1)
    x3 = torch.randn(4, 50, 300)
    check(lambda x: torch.exp(x).sum(1), [x3], launches=1)
    check(lambda x: (x * x).sum((0, 1)), [x3], launches=1)
    check(lambda x: (x - 1).sum(1), [x3.transpose(0, 1)], launches=1)


def gelu_backward_and_bias_grads(g, x, w):
    """A transformer MLP's backward tail: GELU's gradient, its column sum (the
    bias gradient) and a second one of a product (a weight gradient's form)."""
    d = torch.ops.aten.gelu_backward(g, x)
    lead = tuple(range(d.dim() - 1))
    return d, d.sum(lead, keepdim=True), (d * w).sum(lead)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(2048, 300), (37, 1027), (3, 45, 769), (8, 64, 512)])
def test_column_sums_beside_their_pointwise_input(shape, dtype):
    """Column sums over the leading dims beside the full value they sum, in one
    kernel whose tile spans the row: many rows (the sums stay within eager's
    tolerance), columns that are no multiple of the vector width, three dims,
    keepdim, two sums in the stage, f64."""
    torch.manual_seed(17)
    g, x = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    w = torch.randn(shape[-1], dtype=dtype)
    check(gelu_backward_and_bias_grads, [g, x, w], launches=1)


def test_bias_grad_joins_the_weight_grad_kernel():
    """A column sum of an argument (a layer norm's bias gradient, whose input a
    matmul produced) joins the kernel that sums the same tensor's product (the
    weight gradient): one kernel, and no sum left to PyTorch."""
    torch.manual_seed(18)

    def grads(g, h):
        return (g * h).sum((0, 1)), g.sum((0, 1))

    g, h = torch.randn(4, 37, 192), torch.randn(4, 37, 192)
    f = check(grads, [g, h], launches=1)
    # Top-level steps are two spaces in; the guard's fallback branch is deeper.
    described = f.last.program.describe()
    lines = [line for line in described.splitlines() if not line.startswith("   ")]
    top = [line.split()[:2] for line in lines if line.startswith("  ")]
    assert ["torch", "aten.sum:"] not in top, described
    assert ["torch", "aten.squeeze:"] in top  # the check sees PyTorch's steps


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "make",
    [
        lambda t: t,  # contiguous
        lambda t: t.t().contiguous().t(),  # column-major
        lambda t: t[:, ::2],  # every other column
    ],
    ids=["contiguous", "transposed", "strided"],
)
def test_a_lone_column_sum_is_a_kernel(make, dtype):
    """A sum that fuses with nothing (its input an argument; in a backward, a
    matmul's or the attention backward's result) and keeps some dims is a kernel
    of its own (`fuse{lone-reductions}`), at every input layout and dtype; a sum
    to one value stays PyTorch's (ATen splits it over threads)."""
    torch.manual_seed(19)
    x = make(torch.randn(300, 2 * 1027).to(dtype))
    check(lambda t: t.sum(0), [x], launches=1)
    check(lambda t: t.sum((0, 1)), [x.reshape(3, 100, -1)], launches=1)
    check(lambda t: t.sum(), [x], launches=0)


def test_a_lone_column_sum_with_symbolic_sizes():
    """The lone sum's kernel takes its sizes at run time (`dynamic=True`)."""
    torch._dynamo.reset()
    f = torch.compile(lambda t: t.sum(0), backend="fusec", dynamic=True)
    for shape in ((37, 19), (5, 300), (64, 8)):
        x = torch.randn(shape)
        torch.testing.assert_close(f(x), x.sum(0))
    assert fusec.dynamo_graphs()[-1].launches_per_call == 1


def test_column_reductions_split_over_threads(monkeypatch):
    """Threads' [begin, end) column ranges that are not multiples of the tile:
    every column is reduced once (kernels loaded with a launch priced at next to
    nothing, so a call splits)."""
    from fusec.runtime import cpu

    monkeypatch.setattr(cpu, "num_threads", lambda: 3)
    monkeypatch.setattr(cpu, "NATIVE_LAUNCH_NS", 1e-3)
    monkeypatch.setattr(cpu, "POOL_LAUNCH_NS", 1e-3)
    monkeypatch.setattr(cpu, "_loaded", {})
    torch.manual_seed(16)
    g, x = torch.randn(70, 1003), torch.randn(70, 1003)
    f = check(bias_grad, [g, x], launches=1)
    if g.device.type != "cpu":
        return  # the split is the CPU executor's; on --device cuda the check is the test
    (step,) = [s for s in f.last.program.all_steps() if s.kind == "kernel"]
    kernel = getattr(step.fn.kernel, "func", step.fn.kernel)
    kernel = getattr(kernel, "__self__", kernel)
    assert any(len(p.chunks) > 1 for p in kernel._plans.values()), "the call did not split"
