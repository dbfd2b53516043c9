"""One rank of `test_distributed.py`: trains a small residual MLP (LayerNorm, GELU)
eagerly and then through `torch.compile(backend="fusec")` under one of PyTorch's
data-parallel engines, on gloo, and saves what the test compares:

    python tests/distributed_training.py ddp|fsdp2 RANK WORLD_SIZE INIT_FILE OUT_FILE

- "ddp": `torch.compile(DistributedDataParallel(model))`; the model's parameters
  fill more than DDP's first 1 MiB bucket, so Dynamo's DDP optimizer splits the
  graph at the bucket boundary and fusec gets one graph per bucket.
- "fsdp2": `fully_shard` on each block and on the root, then `torch.compile(model)`;
  Dynamo runs FSDP2's hooks (all-gather, reduce-scatter) eagerly and hands fusec
  the graph between them: one per block and one for the root's own modules.

The out file holds the final full (unsharded) weights of both runs, and per
graph fusec compiled through AOTAutograd its kind and launches per call, and the
launches of `fusec.dynamo_graphs()`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

STEPS = 3


class Block(nn.Module):
    def __init__(self, width: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, hidden)
        self.down = nn.Linear(hidden, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(F.gelu(self.up(self.norm(x))))


class Model(nn.Module):
    def __init__(self, width: int, hidden: int, blocks: int):
        super().__init__()
        self.blocks = nn.Sequential(*(Block(width, hidden) for _ in range(blocks)))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.gelu(self.norm(self.blocks(x))))


def ddp(compiled: bool) -> tuple[nn.Module, Any, torch.optim.Optimizer]:
    from torch.nn.parallel import DistributedDataParallel

    torch.manual_seed(0)
    # 3 blocks of 128 -> 512 -> 128: 1.6 MB of f32 parameters, two 1 MiB buckets.
    model = DistributedDataParallel(Model(128, 512, 3), bucket_cap_mb=1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, (torch.compile(model, backend="fusec") if compiled else model), optimizer


def fsdp2(compiled: bool) -> tuple[nn.Module, Any, torch.optim.Optimizer]:
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = Model(64, 128, 2)
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    return model, (torch.compile(model, backend="fusec") if compiled else model), optimizer


def train(engine: str, rank: int, compiled: bool) -> dict[str, torch.Tensor]:
    model, step, optimizer = {"ddp": ddp, "fsdp2": fsdp2}[engine](compiled)
    width = 128 if engine == "ddp" else 64
    data = torch.Generator().manual_seed(rank)  # each rank its own batches
    for _ in range(STEPS):
        x, y = torch.randn(16, width, generator=data), torch.randn(16, 8, generator=data)
        F.mse_loss(step(x), y).backward()
        optimizer.step()
        optimizer.zero_grad()
    return {k: _full(v).detach().clone() for k, v in model.state_dict().items()}


def _full(t: torch.Tensor) -> torch.Tensor:
    """An FSDP2 parameter is a sharded DTensor: its full value on every rank."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def main(engine: str, rank: int, world: int, init_file: str, out_file: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        import fusec
        from fusec.api.training import compiled_graphs

        eager = train(engine, rank, compiled=False)
        fused = train(engine, rank, compiled=True)
        torch.save(
            {
                "eager": eager,
                "fused": fused,
                "graphs": [(g.kind, g.launches_per_call) for g in compiled_graphs()],
                "dynamo_graphs": [g.launches_per_call for g in fusec.dynamo_graphs()],
            },
            out_file,
        )
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5])
    # Everything this rank reports is saved and its process group destroyed: skip
    # the interpreter's finalization, where gloo's threads may still drop tensors
    # and take the GIL of a finalizing interpreter, aborting the process ("terminate
    # called without an active exception", pytorch/pytorch#179291): a CI run of
    # the FSDP2 test lost rank 1 that way after rank 0 had finished.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
