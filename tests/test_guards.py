"""Guards in the IR: a program built from guarded IR runs a group's kernel only on
inputs that match its `fusion.guard`, and otherwise the group's unfused ops; either
way the result equals eager PyTorch."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import fusec
import pytest
import torch
from fusec.api.compiled import run_pipeline
from fusec.codegen.host_program import build_program
from fusec.codegen.pipelines import FUSE_PIPELINE
from fusec.frontend.importer import import_fx, trace
from fusec.runtime.cache import default_cache
from fusec.runtime.program import HostProgram


def pointwise(a: torch.Tensor, b: torch.Tensor, s: float) -> torch.Tensor:
    return torch.sigmoid((a + b) * s) - a


def lstm_gates(gates: torch.Tensor, cx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    i, f, g, o = gates.chunk(4, -1)
    cy = torch.sigmoid(f) * cx + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(cy), cy


class Built:
    """A host program from guarded IR, with a count of kernel runs; with
    `exact_shapes`, built for exact shapes (its views from sizes and strides)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        example: Sequence[Any],
        guard: str = "guard",
        exact_shapes: bool = False,
    ):
        gm = trace(fn)
        imported = import_fx(gm, list(example), fn.__name__)
        run_pipeline(imported.module, f"{FUSE_PIPELINE},{guard}")
        self.ir = str(imported.module)
        self.kernel_runs = 0
        cache = default_cache()

        def kernels(group: Any) -> Callable[[Sequence[Any]], Sequence[Any]]:
            kernel = cache.kernel_for(group, "cpu")
            assert kernel is not None

            def run(xs: Sequence[Any]) -> Sequence[Any]:
                self.kernel_runs += 1
                return kernel(xs)

            return run

        self.program: HostProgram = build_program(
            imported.func,
            kernels,
            lambda op: imported.opaque[op.node.data].bind(gm),
            exact_shapes,
            [False] * len(example),
        )

    def __call__(self, *args: Any) -> list[Any]:
        return self.program(list(args))


def _example() -> list[Any]:
    return [torch.randn(4, 1), torch.randn(3), 0.5]


def _check_fallback(built: Built, *args: Any) -> None:
    [out] = built(*args)
    torch.testing.assert_close(out, pointwise(*args))
    assert built.program.guard_failures == 1
    assert built.kernel_runs == 0
    assert built.program.last_launches == 0


def test_matching_inputs_run_the_kernel() -> None:
    built = Built(pointwise, _example())
    assert "fusion.guard" in built.ir and "scf.if" in built.ir
    assert built.program.launches == 1
    args = [torch.randn(7, 1), torch.randn(5), 2.0]  # other sizes, same pattern
    [out] = built(*args)
    torch.testing.assert_close(out, pointwise(*args))
    assert built.kernel_runs == 1
    assert built.program.guard_failures == 0
    assert built.program.last_launches == 1


def test_dtype_mismatch_runs_the_fallback() -> None:
    built = Built(pointwise, _example())
    _check_fallback(built, torch.randn(4, 1, dtype=torch.float64), torch.randn(3), 0.5)


def test_rank_mismatch_runs_the_fallback() -> None:
    built = Built(pointwise, _example())
    _check_fallback(built, torch.randn(2, 4, 1), torch.randn(3), 0.5)


def test_size_one_dim_becoming_full_runs_the_fallback() -> None:
    built = Built(pointwise, _example())
    _check_fallback(built, torch.randn(4, 3), torch.randn(3), 0.5)


def test_full_dim_becoming_size_one_runs_the_fallback() -> None:
    built = Built(pointwise, _example())
    _check_fallback(built, torch.randn(4, 1), torch.randn(1), 0.5)


def test_non_contiguous_input_where_contiguous_is_required_runs_the_fallback() -> None:
    built = Built(pointwise, _example(), guard="guard{layout=contiguous}")
    assert "layout = contiguous" in built.ir
    a = torch.randn(4, 2)[:, :1]  # 4x1, strides (2, 1): not contiguous
    assert not a.is_contiguous()
    _check_fallback(built, a, torch.randn(6)[::2], 0.5)


def test_non_contiguous_input_runs_the_kernel_by_default() -> None:
    # Kernels take runtime strides, so the default guard accepts any layout.
    built = Built(pointwise, _example())
    a, b = torch.randn(4, 2)[:, :1], torch.randn(6)[::2]
    [out] = built(a, b, 0.5)
    torch.testing.assert_close(out, pointwise(a, b, 0.5))
    assert built.kernel_runs == 1 and built.program.guard_failures == 0


def test_device_mismatch_runs_the_fallback() -> None:
    # Kernels compiled for CUDA (by the guard's account) must not see CPU tensors.
    built = Built(pointwise, _example(), guard="guard{device=cuda}")
    assert 'device = "cuda"' in built.ir
    _check_fallback(built, *_example())


def test_failures_are_counted_per_check_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    built = Built(pointwise, _example())
    with caplog.at_level("DEBUG", logger="fusec"):
        _check_fallback(built, torch.randn(4, 1), torch.randn(3, dtype=torch.float16), 0.5)
    assert "input #1 has dtype torch.float16, expected torch.float32" in caplog.text
    args = _example()
    built(*args)
    assert built.program.guard_failures == 1 and built.kernel_runs == 1


def test_chunked_group_falls_back_on_other_dtype() -> None:
    gates, cx = torch.randn(8, 64), torch.randn(8, 16)
    built = Built(lstm_gates, [gates, cx])
    g64, c64 = gates.double(), cx.double()
    hy, cy = built(g64, c64)
    ref_hy, ref_cy = lstm_gates(g64, c64)
    torch.testing.assert_close(hy, ref_hy)
    torch.testing.assert_close(cy, ref_cy)
    assert built.kernel_runs == 0 and built.program.guard_failures == 1


def test_compile_reuses_the_guarded_program_past_max_specializations() -> None:
    f = fusec.compile(pointwise, max_specializations=1)
    with torch.no_grad():
        first = _example()
        torch.testing.assert_close(f(*first), pointwise(*first))
        assert f.launches_per_call == 1
        program = f.last.program
        other = [torch.randn(4, 3, dtype=torch.float64), torch.randn(3, dtype=torch.float64), 0.5]
        with pytest.warns(UserWarning, match="reusing a guarded program"):
            out = f(*other)
    torch.testing.assert_close(out, pointwise(*other))
    assert f.last.program is program
    assert program.guard_failures == 1
    assert f.launches_per_call == 0
    assert len({id(s) for s in f.specializations.values()}) == 1


def test_compile_past_max_specializations_stays_eager_when_ops_bake_shapes() -> None:
    # The fallback's chunk carries the example's dim: not right for any input.
    f = fusec.compile(lstm_gates, max_specializations=1)
    with torch.no_grad():
        gates, cx = torch.randn(8, 64), torch.randn(8, 16)
        f(gates, cx)
        g, c = torch.randn(2, 8, 64), torch.randn(2, 8, 16)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            hy, cy = f(g, c)
    assert any("running eagerly" in str(w.message) for w in caught)
    ref_hy, ref_cy = lstm_gates(g, c)
    torch.testing.assert_close(hy, ref_hy)
    torch.testing.assert_close(cy, ref_cy)
    assert f.last.program is None


def test_a_guard_over_more_inputs_than_python_nests_blocks():
    """A group of 60 inputs: its generated guard must not nest a block per input
    (Python stops at 100 levels, which made such graphs run eagerly)."""
    n = 60
    src = "def many({}):\n    return {}\n".format(
        ", ".join(f"x{i}" for i in range(n)), " + ".join(f"x{i} * {i}" for i in range(n))
    )
    env: dict = {}
    exec(src, env)
    xs = [torch.randn(5) for _ in range(n)]
    f = fusec.compile(env["many"])
    torch.testing.assert_close(f(*xs), env["many"](*xs))
    assert f.launches_per_call == 1
