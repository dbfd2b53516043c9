"""Fused kernel launches as named `torch.profiler` events
(`fusec.runtime.profiler_events`), and fusec's IR in PyTorch's structured
trace (`fusec.observability.structured_trace`, `TORCH_TRACE`).

Each launch is one CPU event, `fusec_<ops>_<index>`, through both entry points,
in `key_averages()` and the Chrome trace (with the group's canonical key in its
args); a call with no profiler running never enters the evented run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import fusec
import pytest
import torch
from fusec.codegen.host_program import group_program
from fusec.runtime.profiler_events import event_name
from torch.profiler import ProfilerActivity, profile


def pointwise(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.sigmoid(x) * y + x


def two_groups(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    h = torch.relu(x * 2.0) @ w  # the matrix product splits the pointwise work in two
    return torch.tanh(h) + h


def fusec_events(prof: Any) -> dict[str, int]:
    return {e.key: e.count for e in prof.key_averages() if e.key.startswith("fusec_")}


def programs(fn: Any) -> list[Any]:
    return [s.program for s in fn.specializations.values() if s.program is not None]


def inputs(*shapes: tuple[int, ...]) -> list[torch.Tensor]:
    torch.manual_seed(0)
    return [torch.randn(*s) for s in shapes]


def test_event_names_are_the_ops_in_order_without_repeats_and_the_index() -> None:
    assert event_name("group[sigmoid,mul,add,mul]", 0) == "fusec_sigmoid_mul_add_0"
    assert event_name("group[aten.to_dtype,fusion.broadcast]", 3) == "fusec_to_dtype_broadcast_3"
    assert event_name("group[arith.constant,mul,relu]", 0) == "fusec_mul_relu_0"
    long = event_name("group[" + ",".join(f"operation{i}" for i in range(20)) + "]", 7)
    assert long.startswith("fusec_operation0_operation1_") and long.endswith("_etc_7")
    assert len(long) < 70


def test_fusec_compile_names_each_launch_in_key_averages_and_the_chrome_trace(
    tmp_path: Path,
) -> None:
    compiled = fusec.compile(pointwise, program_cache=False)
    x, y = inputs((32, 16), (32, 16))
    compiled(x, y)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(3):
            out = compiled(x, y)
    torch.testing.assert_close(out, pointwise(x, y))
    assert fusec_events(prof) == {"fusec_sigmoid_mul_add_0": 3}

    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    ours = [e for e in events if e["name"] == "fusec_sigmoid_mul_add_0"]
    assert len(ours) == 3
    (group,) = fusec.explain(compiled, x, y).graphs[0].groups
    assert {e["args"]["group"] for e in ours} == {group.key}


def test_torch_compile_backend_names_each_launch_inside_the_compiled_region() -> None:
    torch._dynamo.reset()
    compiled = torch.compile(two_groups, backend="fusec")
    x, w = inputs((8, 16), (16, 4))
    compiled(x, w)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(2):
            out = compiled(x, w)
    torch.testing.assert_close(out, two_groups(x, w))
    assert fusec_events(prof) == {"fusec_mul_relu_0": 2, "fusec_tanh_add_1": 2}
    keys = {e.key for e in prof.key_averages()}
    assert any(k.startswith("Torch-Compiled Region") for k in keys)


def test_with_no_profiler_the_call_path_never_runs_the_evented_run() -> None:
    compiled = fusec.compile(two_groups, program_cache=False)
    x, w = inputs((8, 16), (16, 4))
    for _ in range(3):  # the full path, then the fast path
        compiled(x, w)
    (program,) = programs(compiled)
    assert program.launches == 2
    assert program._runs_profiled == {}  # the evented run is made on first use only
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        pass  # a profiler started after those calls sees none of them
    assert fusec_events(prof) == {}
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        compiled(x, w)
    assert fusec_events(prof) == {"fusec_mul_relu_0": 1, "fusec_tanh_add_1": 1}
    assert program._runs_profiled
    compiled(x, w)  # and with the profiler gone, nothing more is recorded
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        pass
    assert fusec_events(prof) == {}


class DeviceKernel:
    """What a `CudaKernel` offers the host program, `call(inputs) -> outputs`,
    computed through PyTorch: the host program's launch path is the one every
    device's kernels take, so a GPU kernel's launch is evented by the same code."""

    def __init__(self, group: Any):
        self.body = group_program(group)
        self.calls = 0

    def call(self, xs: Any) -> Any:
        self.calls += 1
        return self.body(xs)


class DeviceCache:
    """A kernel cache (`CompileOptions.cache`) handing out `DeviceKernel`s."""

    def __init__(self) -> None:
        self.kernels: list[DeviceKernel] = []

    def kernel_for(self, group: Any, target: str = "cpu") -> DeviceKernel:
        self.kernels.append(DeviceKernel(group))
        return self.kernels[-1]


def test_a_device_kernel_launch_is_the_same_event() -> None:
    cache = DeviceCache()
    compiled = fusec.compile(pointwise, cache=cache, program_cache=False)
    x, y = inputs((4, 8), (4, 8))
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = compiled(x, y)
    torch.testing.assert_close(out, pointwise(x, y))
    assert [k.calls for k in cache.kernels] == [1]
    assert fusec_events(prof) == {"fusec_sigmoid_mul_add_0": 1}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_launches_are_named_events() -> None:
    compiled = fusec.compile(pointwise, program_cache=False)
    x, y = (t.cuda() for t in inputs((256, 64), (256, 64)))
    compiled(x, y)
    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    with profile(activities=acts) as prof:
        out = compiled(x, y)
        torch.cuda.synchronize()
    torch.testing.assert_close(out, pointwise(x, y))
    assert fusec_events(prof) == {"fusec_sigmoid_mul_add_0": 1}


TRACED = textwrap.dedent(
    """
    import torch, fusec

    def f(x, y):
        return torch.sigmoid(x) * y + x

    x, y = torch.randn(8, 4), torch.randn(8, 4)
    fusec.compile(f, program_cache=False)(x, y)
    torch.compile(lambda a, b: torch.tanh(a) * b - a, backend="fusec")(x, y)
    """
)


@pytest.fixture(scope="module")
def torch_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The structured trace of one process compiling through both entry points."""
    out = tmp_path_factory.mktemp("torch_trace")
    env = {**os.environ, "TORCH_TRACE": str(out / "trace")}
    subprocess.run([sys.executable, "-c", TRACED], env=env, check=True, timeout=600)
    return out


def artifacts(trace_dir: Path) -> list[tuple[dict[str, Any], str]]:
    """(record, payload) of each artifact line in the trace's log files."""
    found = []
    for path in sorted((trace_dir / "trace").glob("*.log")):
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            start = line.find("{")  # after the glog-style prefix; payload lines start with a tab
            record = json.loads(line[start:]) if start >= 0 and line[0] != "\t" else {}
            if "artifact" in record:
                payload = []
                for more in lines[i + 1 :]:
                    if not more.startswith("\t"):
                        break
                    payload.append(more[1:])
                found.append((record, "\n".join(payload)))
    return found


def test_torch_trace_holds_fusecs_ir_and_kernels_for_both_entry_points(torch_trace: Path) -> None:
    found = artifacts(torch_trace)
    names = [r["artifact"]["name"] for r, _ in found]
    ours = ["fusec_imported_ir", "fusec_fused_ir", "fusec_kernels"]
    assert [n for n in names if n.startswith("fusec_")] == ours * 2
    by_name = {}
    for record, payload in found:
        by_name.setdefault(record["artifact"]["name"], []).append((record, payload))
    (plain, _), (dynamo, _) = by_name["fusec_kernels"]
    assert "frame_id" not in plain  # `fusec.compile` has no compile id
    assert (dynamo["frame_id"], dynamo["frame_compile_id"]) == (0, 0)
    (_, imported), _ = by_name["fusec_imported_ir"]
    assert "aten.sigmoid" in imported and "fusion.group" not in imported
    (_, fused), _ = by_name["fusec_fused_ir"]
    assert "fusion.group" in fused
    kernels = [json.loads(p) for _, p in by_name["fusec_kernels"]]
    assert [[k["event"] for k in ks] for ks in kernels] == [
        ["fusec_sigmoid_mul_add_0"],
        ["fusec_tanh_mul_sub_0"],
    ]
    assert all(len(k["group_key"]) == 64 for ks in kernels for k in ks)


def tlparse() -> str | None:
    local = Path(sys.executable).with_name("tlparse")
    return str(local) if local.exists() else shutil.which("tlparse")


@pytest.mark.skipif(tlparse() is None, reason="tlparse is not installed (pip install tlparse)")
def test_tlparse_lists_fusecs_artifacts_beside_dynamos(torch_trace: Path) -> None:
    out = torch_trace / "tl_out"
    logs = sorted(str(p) for p in (torch_trace / "trace").glob("*.log"))
    cmd = [str(tlparse()), *logs, "-o", str(out), "--no-browser", "--overwrite"]
    subprocess.run(cmd, check=True, timeout=300, capture_output=True)
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    # Dynamo's frame 0, compile 0 holds the backend's artifacts beside its own graph.
    dynamo = {f.split("/")[1] for f in files if f.startswith("-_0_0_0/")}
    assert any(f.startswith("dynamo_output_graph") for f in dynamo)
    for name in ("fusec_imported_ir", "fusec_fused_ir"):
        assert any(f.startswith(name) and f.endswith(".txt") for f in dynamo)
    assert any(f.startswith("fusec_kernels") and f.endswith(".json") for f in dynamo)
    assert "fusec_kernels" in (out / "index.html").read_text()
