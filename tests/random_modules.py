"""Random small `nn.Module` stacks for differential tests of modes (training
flag, grad mode) and buffers: `random_module(seed)` gives a `Sequential` of
Linear or Conv2d layers with BatchNorm (random momentum, `None` included: a
cumulative average that reads `num_batches_tracked`), `Dropout(p=0)` and
activations, and an input maker for each call, e.g. for one seed:

    Sequential(Linear(6, 5), BatchNorm1d(5, momentum=None), GELU(), Dropout(p=0.0),
               Linear(5, 3), Tanh())

Both are functions of the seed alone (weights come from a forked generator),
so a test and a subprocess build the same module.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import torch
from torch import nn

ACTIVATIONS: tuple[Callable[[], nn.Module], ...] = (
    nn.ReLU, nn.GELU, nn.SiLU, nn.Tanh, nn.Sigmoid, lambda: nn.LeakyReLU(0.1),
)  # fmt: skip


def random_module(seed: int) -> tuple[nn.Module, Callable[[int], torch.Tensor]]:
    """A module of 1-3 blocks (the first with BatchNorm) and `make(call)`, the input of call `call` (batch
    of 2-6, so that BatchNorm's training statistics exist)."""
    rnd = random.Random(seed)
    conv = rnd.random() < 0.4
    width = rnd.randint(2, 6)
    first, layers = width, []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for block in range(rnd.randint(1, 3)):
            out = rnd.randint(2, 6)
            layers.append(nn.Conv2d(width, out, 3, padding=1) if conv else nn.Linear(width, out))
            if block == 0 or rnd.random() < 0.6:
                bn = nn.BatchNorm2d if conv else nn.BatchNorm1d
                layers.append(bn(out, momentum=rnd.choice([0.1, 0.5, None]), affine=rnd.random() < 0.7))
            layers.append(rnd.choice(ACTIVATIONS)())
            if rnd.random() < 0.4:
                layers.append(nn.Dropout(p=0.0))
            width = out
        model = nn.Sequential(*layers)
    side = rnd.randint(2, 5)

    def make(call: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(seed * 1000 + call)
        batch = 2 + (seed + call) % 5
        shape = (batch, first, side, side) if conv else (batch, first)
        return torch.randn(shape, generator=g)

    return model, make


def state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every buffer and parameter, by name: what a call may update."""
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}
