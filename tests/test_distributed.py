"""fusec under PyTorch's data-parallel engines, as PyTorch documents them for
`torch.compile`: two gloo processes on this machine (`distributed_training.py`
is what each rank runs) train eagerly and through `backend="fusec"` from the
same seed; after several optimizer steps every rank holds the eager run's
weights, and fusec compiled forward and backward graphs with fused kernels on
every rank (listed in `fusec.dynamo_graphs()`, which once missed every graph
compiled through AOTAutograd, so a DDP run looked as if fusec saw no graph)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(),
    reason="needs torch.distributed with gloo",
)

WORLD = 2
WORKER = Path(__file__).with_name("distributed_training.py")


def run_ranks(engine: str, tmp_path: Path) -> list[dict[str, Any]]:
    """Runs `WORLD` ranks of `distributed_training.py`; what each saved."""
    init = tmp_path / "init"  # a FileStore rendezvous: no port to race for
    outs = [tmp_path / f"rank{r}.pt" for r in range(WORLD)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), engine, str(r), str(WORLD), str(init), str(outs[r])],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(WORLD)
    ]
    logs = [p.communicate(timeout=300)[0] for p in procs]
    for r, p in enumerate(procs):
        assert p.returncode == 0, f"rank {r} failed:\n{logs[r][-4000:]}"
    return [torch.load(o) for o in outs]


def check(results: list[dict[str, Any]], min_graphs: int) -> None:
    for rank, got in enumerate(results):
        assert got["eager"].keys() == got["fused"].keys()
        for name, want in got["eager"].items():
            torch.testing.assert_close(
                got["fused"][name],
                want,
                rtol=1e-4,
                atol=1e-5,
                msg=lambda m, r=rank, n=name: f"rank {r} {n}: {m}",
            )
        kinds = [kind for kind, _ in got["graphs"]]
        assert kinds.count("forward") >= min_graphs and kinds.count("backward") >= min_graphs, kinds
        for kind in ("forward", "backward"):
            assert sum(n for k, n in got["graphs"] if k == kind) >= 2, (rank, kind, got["graphs"])
        # Each AOTAutograd graph is one of dynamo_graphs(), with the same launches.
        assert sorted(got["dynamo_graphs"]) == sorted(n for _, n in got["graphs"])
    # The ranks' weights agree with each other too (DDP all-reduces, FSDP2 all-gathers).
    for name, w in results[0]["fused"].items():
        torch.testing.assert_close(results[1]["fused"][name], w, rtol=0, atol=0)


def test_ddp_optimizer_splits_the_graph_and_each_part_fuses(tmp_path: Path) -> None:
    """`torch.compile(DistributedDataParallel(model))`: Dynamo's DDP optimizer splits
    the graph at the bucket boundary and hands fusec each part (two here)."""
    check(run_ranks("ddp", tmp_path), min_graphs=2)


def test_fully_shard_blocks_fuse_between_fsdp2_hooks(tmp_path: Path) -> None:
    """FSDP2 (`fully_shard` per block, then `torch.compile`) on CPU with gloo: the
    blocks' graphs between FSDP2's eager all-gathers and reduce-scatters fuse."""
    check(run_ranks("fsdp2", tmp_path), min_graphs=2)
