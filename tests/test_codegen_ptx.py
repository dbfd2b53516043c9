"""Generated GPU kernels: every group the host tests (tests/test_codegen.py) run
is compiled to PTX for sm_80 and sm_90 and assembled to a cubin.

No GPU is needed, and none is used: nothing here launches a kernel. The PTX is
checked structurally instead (the documented launch ABI, a 64-bit grid-stride
loop, libdevice inlined, no call to an undefined function, half types widened
to f32). The case tables are test_codegen's own, so a new host case is a new
GPU case. Each (family, arch) is one PTX module (`build_gpu_kernels`): libdevice
is linked and the module optimized and assembled once, not once per kernel.

Skips only when no CUDA toolchain exists at all; with the `cuda` extra installed
a missing tool fails (`toolchains.cuda_toolchain_or_skip`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import torch
from fusec.backends.ptx import assemble_ptx
from fusec.codegen.kernel import KernelArtifact, build_gpu_kernels, build_kernel, kernel_llvm_ir
from fusec.dialects import inference as inf
from fusec.dialects.fusion import GroupOp
from toolchains import cuda_toolchain_or_skip, sibling_test_module
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, StringAttr, TensorType

cpu = sibling_test_module("test_codegen")
ARCHS = sibling_test_module("test_ptx").ARCHS


def _params(test: Callable[..., None], argname: str) -> list:
    """The values `test` is parametrized with for `argname` (the host test's own list)."""
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "parametrize" and mark.args[0] == argname:
            return list(mark.args[1])
    raise LookupError(f"{test.__name__} is not parametrized over {argname}")


Case = tuple[str, GroupOp]


def _unary() -> list[Case]:
    cases = []
    for op, (_, dtypes, positive) in sorted(cpu.UNARY.items()):
        for dt in [d for d in cpu.ALL if d in dtypes]:
            x = cpu.sample(dt, (5, 37), positive)
            cases.append((f"{op}-{dt}", cpu.make_group([x], lambda b, a, op=op: getattr(b, op)(a))))
    return cases


def _binary() -> list[Case]:
    cases = []
    for op, (_, dtypes) in sorted(cpu.BINARY.items()):
        for dt in [d for d in cpu.ALL if d in dtypes]:
            a, c = cpu.sample(dt, (4, 1, 6)), cpu.sample(dt, (3, 1))
            body = lambda b, x, y, op=op: getattr(b, op)(x, y)  # noqa: E731
            cases.append((f"{op}-{dt}", cpu.make_group([a, c], body)))
    return cases


def _casts() -> list[Case]:
    return [
        (f"{src}->{dst}", cpu.make_group([cpu.sample(src, (33,))], lambda b, a, d=dst: b.ToOp(a, cpu.DT[d])))
        for src in _params(cpu.test_casts, "src")
        for dst in _params(cpu.test_casts, "dst")
    ]  # fmt: skip


def _mixed() -> list[Case]:
    """Promotion, Python scalars, rounding division."""
    cases = []
    for lhs, rhs in _params(cpu.test_promotion, "dtypes"):
        a, c = cpu.sample(lhs, (7, 9)), cpu.sample(rhs, (9,))
        body = lambda b, x, y: [b.MulOp(x, y), b.AddOp(x, y)]  # noqa: E731
        cases.append((f"promote-{lhs}-{rhs}", cpu.make_group([a, c], body)))
    for dt in _params(cpu.test_python_scalars, "dtype"):
        for s in _params(cpu.test_python_scalars, "scalar"):
            x = cpu.sample(dt, (3, 8))
            cases.append(
                (f"scalar-{dt}-{s!r}", cpu.make_group([x, s], lambda b, a, t: b.MulOp(a, t)))
            )
    for dt in _params(cpu.test_rounding_division, "dtype"):
        for mode in _params(cpu.test_rounding_division, "mode"):
            a, c = cpu.sample(dt, (64,)), cpu.sample(dt, (64,))
            body = lambda b, x, y, m=mode: b.DivOp(x, y, rounding_mode=StringAttr(m))  # noqa: E731
            cases.append((f"div-{mode}-{dt}", cpu.make_group([a, c], body)))
    return cases


def _special() -> list[Case]:
    """The host tests' one-off groups: NaN semantics, parametrised ops, where,
    the LSTM cell tail, 0-d and views of inputs."""
    f32, i64 = cpu.sample(torch.float32, (6, 10)), inf.I64
    cases = [
        ("lstm-tail", cpu.make_group([cpu.sample(torch.float32, (8, 64)),
                                      cpu.sample(torch.float32, (8, 16))], cpu.lstm_body)),
        ("nan-inf", cpu.make_group(
            [f32, f32],
            lambda b, x, y: [b.MaximumOp(x, y), b.MinimumOp(x, y), b.ReluOp(x),
                             b.ClampOp(x, min=FloatAttr(-1.0, inf.F64), max=FloatAttr(0.5, inf.F64)),
                             b.NeOp(x, y), b.EqOp(x, y)])),
        ("parametrised", cpu.make_group(
            [f32],
            lambda b, a: [b.LeakyReluOp(a, negative_slope=FloatAttr(0.2, inf.F64)),
                          b.GeluOp(a), b.GeluOp(a, approximate=StringAttr("tanh")),
                          b.AddOp(a, a, alpha=IntegerAttr(3, i64))])),
        ("clamp-int", cpu.make_group(
            [cpu.sample(torch.int64, (9,))],
            lambda b, a: b.ClampOp(a, min=IntegerAttr(-3, i64), max=IntegerAttr(4, i64)))),
        ("where", cpu.make_group(
            [cpu.sample(torch.bool, (4, 5)), cpu.sample(torch.float16, (5,)),
             cpu.sample(torch.float32, (4, 1))],
            lambda b, x, y, z: b.WhereOp(x, y, z))),
        ("exp-mul", cpu.make_group([f32, f32], lambda b, a, c: b.MulOp(b.ExpOp(a), c))),
        ("zero-dim", cpu.make_group([torch.tensor(1.5), torch.tensor(-2.0)],
                                    lambda b, a, c: b.AddOp(b.SinOp(a), c))),
        ("zero-dim-bcast", cpu.make_group([torch.tensor(3.0), cpu.sample(torch.float32, (2, 3))],
                                          lambda b, a, c: b.MulOp(a, c))),
        ("narrow", cpu.make_group(
            [f32], lambda b, a: b.NegOp(b.NarrowOp(a, dim=IntegerAttr(1, i64),
                                                  start=IntegerAttr(2, i64),
                                                  length=IntegerAttr(3, i64))))),
        ("transpose-slice", cpu.make_group([f32], _transpose_slice)),
        ("tanh-scalar", cpu.make_group([cpu.sample(torch.float32, (1 << 10,)), 0.5],
                                       lambda b, a, s: b.TanhOp(b.MulOp(a, s)))),
    ]  # fmt: skip
    return cases


def _transpose_slice(b, a):
    i64 = inf.I64
    t = b.TransposeOp(a, dim0=IntegerAttr(0, i64), dim1=IntegerAttr(1, i64))
    s = b.SliceOp(t, dim=IntegerAttr(1, i64), start=IntegerAttr(0, i64),
                  end=IntegerAttr(1, i64), step=IntegerAttr(1, i64))  # fmt: skip
    return b.AddOp(t, s)


FAMILIES: dict[str, Callable[[], list[Case]]] = {
    "unary": _unary, "binary": _binary, "casts": _casts, "mixed": _mixed, "special": _special,
}  # fmt: skip


# ----------------------------------------------------------------- PTX checks

_ENTRY = re.compile(r"\.visible \.entry (\w+)\(\n(.*?)\n\)\n\{(.*?)\n\}", re.S)
_SCALAR_PARAM = {"f64": ".f64", "i64": ".u64", "i1": ".u8"}
_HALF_OP = re.compile(r"^\s*(?:@%p\d+\s+)?([a-z0-9]+)((?:\.\w+)*)\.(b?f16(?:x2)?)\s", re.M)
_EXACT_HALF_OPS = {"cvt", "setp", "selp", "abs", "neg", "add", "sub", "mul", "max", "min"}
"""What LLVM may narrow an f32 computation on widened halves back to: a single
correctly rounded add/sub/mul of two halves equals the f32 result rounded
(f32 has >= 2p+2 bits), compares/abs/neg are exact. No fma, division or
transcendental may run at half precision."""


def expected_params(art: KernelArtifact) -> list[str]:
    """The `.param` types the signature's documented launch ABI promises."""
    sig = art.signature
    n = sig.loop_rank
    params = [".u64"] * (1 + n)  # numel, sizes
    for _ in range(len(sig.operands) + len(sig.outputs)):
        params += [".u64 .ptr"] + [".u64"] * n  # data, strides
    params += [_SCALAR_PARAM[dt] for _, dt in sig.scalars]
    return params + ([".u64 .ptr"] if sig.zero_division_flag else [])  # the flag byte


def entries(ptx: str) -> dict[str, tuple[list[str], str]]:
    """kernel name -> (its parameter types, its body)."""
    out = {}
    for name, params, body in _ENTRY.findall(ptx):
        types = [re.sub(r"\s+\.align \d+", "", p.strip().rsplit(" ", 1)[0])[len(".param ") :]
                 for p in params.split(",\n")]  # fmt: skip
        out[name] = (types, body)
    return out


def check_widening(ir: str) -> None:
    """In the LLVM IR the lowering emits, every f16/bf16 value is loaded and at
    once widened to float, and only ever produced by a narrowing for a store."""
    half = r"(?:half|bfloat)"
    loads = re.findall(rf"(%\S+) = load {half}, ", ir)
    for v in loads:
        uses = re.findall(rf"^.*{re.escape(v)}(?=[,\s)]|$).*$", ir, re.M)[1:]
        assert uses and all(re.search(rf"fpext {half} {re.escape(v)} to float", u) for u in uses), (
            uses
        )
    for line in ir.splitlines():
        if re.search(rf"\b{half}\b", line) and "=" in line:
            assert re.search(
                rf"load {half}|fpext {half}|fptrunc float .* to {half}|getelementptr", line
            ), line


def check_module(ptx: str, arts: list[KernelArtifact], arch: str) -> None:
    assert f".target {arch}" in ptx and ".address_size 64" in ptx
    # libdevice linked and inlined; whatever is still called is defined here
    assert "__nv_" not in ptx and "__nvvm_reflect" not in ptx and ".extern" not in ptx
    defined = set(re.findall(r"^\.func\s+(?:\([^)]*\)\s*)?(\w+)\(", ptx, re.M))
    called = set(re.findall(r"call(?:\.uni)?\s+(?:\([^)]*\),\s*)?(\w+)", ptx))
    assert called <= defined, f"calls to undefined functions: {called - defined}"
    found = entries(ptx)
    for art in arts:
        assert art.name in found, f"no .entry {art.name}"
        params, body = found[art.name]
        assert params == expected_params(art), (art.name, params)
        # grid-stride loop over a 64-bit flat index: all four special registers
        # read, the thread's start `ctaid * ntid` widened before it can overflow;
        # a pointwise kernel also has its 32-bit loop (offsets below 2^30)
        for reg in ("%tid.x", "%ntid.x", "%ctaid.x", "%nctaid.x"):
            assert reg in body, (art.name, reg)
        assert re.search(r"mul\.wide\.u32\s+%rd\d+, %r\d+, %r\d+;", body), art.name
        assert re.search(r"setp\.\w+\.[su]64\s", body), art.name  # index < numel in 64 bits
        if not art.signature.reduce_dims:
            assert re.search(r"setp\.\w+\.s32\s", body), art.name  # the same in 32 bits
        halves = {o.dtype for o in art.signature.operands} & {"f16", "bf16"}
        if halves:
            assert "ld.global.nc.b16" in body or "ld.global.b16" in body, art.name
        for op, mods, ty in _HALF_OP.findall(body):
            assert op in _EXACT_HALF_OPS and ".approx" not in mods, (art.name, op + mods + ty)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_family_assembles(family: str, arch: str) -> None:
    cuda_toolchain_or_skip()
    cases = FAMILIES[family]()
    arts = build_gpu_kernels([g for _, g in cases], arch)
    assert len({a.name for a in arts}) == len(cases)  # distinct groups, distinct kernels
    ptx = arts[0].code.decode()
    assert all(a.code is arts[0].code and a.target == arch for a in arts)
    check_module(ptx, arts, arch)
    if arch == ARCHS[0]:  # the LLVM IR is the same for every arch
        for _, group in cases:
            if {"f16", "bf16"} & {str(t.get_element_type()) for t in group.body.block.arg_types
                                  if isinstance(t, TensorType)}:  # fmt: skip
                check_widening(kernel_llvm_ir(group, arch)[1])
    cubin = assemble_ptx(ptx, arch)
    assert cubin[:4] == b"\x7fELF" and len(cubin) > 1000


@pytest.mark.parametrize("arch", ["sm_80", "sm_90", "sm_86"])
def test_build_kernel_one_group(arch: str) -> None:
    cuda_toolchain_or_skip()
    group = cpu.make_group([cpu.sample(torch.float32, (8, 64)), cpu.sample(torch.float32, (8, 16))],
                           cpu.lstm_body)  # fmt: skip
    art = build_kernel(group, arch)
    assert art.target == arch and art.signature.target == "nvptx"
    ptx = art.code.decode()
    assert len(entries(ptx)) == 1
    check_module(ptx, [art], arch)
    assert assemble_ptx(ptx, arch)[:4] == b"\x7fELF"
    # the LLVM IR is arch-independent, so is the kernel's name
    if arch != "sm_80":
        assert build_kernel(group, "sm_80").name == art.name


def test_checks_can_fail() -> None:
    """The structural checks reject a kernel that breaks the ABI or calls out."""
    cuda_toolchain_or_skip()
    group = cpu.make_group([cpu.sample(torch.float16, (4, 5))], lambda b, a: b.ExpOp(a))
    art = build_kernel(group, "sm_80")
    ptx = art.code.decode()
    check_module(ptx, [art], "sm_80")
    broken = [
        ptx.replace(".param .u64 .ptr", ".param .u32 .ptr", 1),
        re.sub(r"ex2\.approx\.ftz\.f32(\s)", r"ex2.approx.f16\1", ptx, count=1),
        ptx.replace("ret;", "call.uni __nv_expf;\n\tret;", 1),
        ptx.replace("%nctaid.x", "%r0"),
        re.sub(r"setp\.(\w+)\.s32(\s)", r"setp.\1.s64\2", ptx),
    ]
    for text in broken:
        with pytest.raises(AssertionError):
            check_module(text, [art], "sm_80")
    ir = kernel_llvm_ir(group, "sm_80")[1]
    check_widening(ir)
    with pytest.raises(AssertionError):
        check_widening(re.sub(r"fpext half (%\S+) to float", r"fadd half \1, \1", ir, count=1))


def test_unknown_target_is_rejected() -> None:
    group = cpu.make_group([cpu.sample(torch.float32, (3,))], lambda b, a: b.ExpOp(a))
    with pytest.raises(ValueError, match="sm_XX"):
        build_kernel(group, "gfx90a")
