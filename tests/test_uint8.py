"""uint8 in kernels: computed in i32, zero-extended, each uint8 result wrapped
to 0..255 as PyTorch's uint8 arithmetic wraps, Python-scalar operands
converted to uint8 first (`x // -3` divides by 253). Exact equality with eager,
and the graphs must run as kernels (`launches_per_call`)."""

from __future__ import annotations

import fusec
import pytest
import torch


def _u8(*shape: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    # Both ends of the range, so that sums, differences and products wrap.
    return torch.randint(0, 256, shape, generator=g).to(torch.uint8).to(torch.get_default_device())


def _same(got: tuple[torch.Tensor, ...], want: tuple[torch.Tensor, ...]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.is_floating_point():
            torch.testing.assert_close(g, w)
        else:
            assert torch.equal(g, w), (g, w)


CASES = {
    "wrap": lambda a, b: ((a + b) * 3, a - b, -a + 1, (a + b) > 100),
    "scalars_wrap": lambda a, b: (a // -3 + b, a - 300, a > -1, torch.where(a > 3, a, -1) + 0),
    "division": lambda a, b: (a // (b | 1), a % (b | 1), a / (b + 1)),
    "signed_mix": lambda a, b: (a + b.to(torch.int8) * 2, a > b.to(torch.int8), (a.to(torch.int8) - 1).to(torch.uint8) + b),
    "floats": lambda a, b: ((a.float() * 1.7).to(torch.uint8) + 1, (a.float() / 255 - 0.5) * 2),
    "max_min_clamp": lambda a, b: (torch.maximum(a, b) - 1, torch.minimum(a, b) + 1, a.clamp(10, 200) * 2, a.clamp(min=-1) + 0),
    "shifts_bits": lambda a, b: ((a << 3) + 1, (a >> 2) * 2, (a & b) ^ (a | 7), a.abs() + b),
    "bools": lambda a, b: ((a > b) * a + 1, (a > b) + a, torch.where(a > b, a, b) - 3),
    "pow": lambda a, b: (a**2 + 1, torch.pow(a, b % 4) * 1),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_uint8_ops_match_eager_in_a_kernel(name: str) -> None:
    fn = CASES[name]
    a, b = _u8(7, 33, seed=1), _u8(7, 33, seed=2)
    f = fusec.compile(fn)
    _same(f(a, b), fn(a, b))
    assert f.launches_per_call >= 1
    a2, b2 = _u8(3, 5, seed=3).t(), _u8(5, 3, seed=4)  # transposed: the tiled nest too
    _same(f(a2, b2), fn(a2, b2))


def test_uint8_reductions() -> None:
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = x + 7  # wraps before it is reduced
        return y.sum(1), y.amax(0), y.amin(1) + 1, y.sum(0, dtype=torch.uint8), (y.float() / 255).softmax(-1)

    x = _u8(9, 40, seed=5)
    f = fusec.compile(fn)
    _same(f(x), fn(x))
    assert f.launches_per_call >= 1
    assert f(x)[0].dtype == torch.int64  # sum of uint8 accumulates as int64, as eager


def test_image_normalization_fuses() -> None:
    """The usual input pipeline: uint8 pixels to normalized floats, one kernel."""

    def normalize(img: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
        return (img.float() / 255 - mean) / std

    img = _u8(2, 3, 16, 16, seed=6)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    f = fusec.compile(normalize)
    _same((f(img, mean, std),), (normalize(img, mean, std),))
    assert f.launches_per_call == 1
    cl = img.to(memory_format=torch.channels_last)
    _same((f(cl, mean, std),), (normalize(cl, mean, std),))
