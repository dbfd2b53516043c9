"""Patterns of random graphs (`random_graphs.py`) that fused code got wrong
when found by hand (issue 31); `hazard(b)` appends one of them to the graph
being built, drawn from the builder's hazard stream:

- `cat`: a `torch.cat` of values computed by pointwise ops, with an in-place
  write to one part before the cat, to a part after it, or to the cat's result
  (then a part is read again), e.g.

      v3 = torch.sin(x0)
      v4 = torch.cos(x0)
      (v3[None]).add_(2)
      v6 = torch.cat([v3, v4], 0)

- `contiguous`: `.contiguous()` of a transposed, sliced or permuted view (of an
  input, mostly), then an in-place write to the copy, which must not reach the
  source: `v2 = x0.transpose(-1, -2).contiguous()` then `v2.mul_(x1)`;
- `half_scalar`: one op of an exact float16/bfloat16 value with a Python scalar
  far from 1 (`x0 / 100000.0`, `x1 * 1e10`, `x0 + 60000.0`), then an explicit
  cast (`.float()`, `.double()`, `.to(torch.int64)`, `.to(torch.bool)`): eager
  computes the op in float32 and rounds once to the half type, and the cast
  sees that rounded value (overflow to inf, underflow to zero, integer parts);
  a float result is scaled back (`v6 = v5 * 100000.0`) so that an underflow shows
  above the half type's tolerance;
- `trig`: `sin`/`cos` of a value whose lanes hold signed zeros, infinities,
  NaNs and huge values next to each other (the inputs with `special` set), then
  `1 / v`, which turns the sign of a zero sine into the sign of an infinity.
"""

from __future__ import annotations

import math

import torch
from random_graphs import FLOATS, HALVES, Value, _Builder, inplace

SMALL = (1e-8, 1e-5, 3e-5, 1e-10)
"""Scalars a half type rounds to zero or to a few bits of a subnormal."""
LARGE = (1e5, 1e10, 6e4, 3e4, 700.0, 2049.0)
"""Scalars a half type rounds to inf (float16) or by a large absolute step."""
HALF_MAX = {torch.float16: 65504.0, torch.bfloat16: 3.3e38}


def hazard(b: _Builder) -> bool:
    kinds = ["cat", "cat", "contiguous", "contiguous", "half_scalar", "half_scalar", "trig"]
    if any(v.dtype in FLOATS and math.isinf(v.bound) for v in b.values):
        kinds += ["trig"] * 3  # the values sin/cos got wrong are there: use them
    kind = b.rnd.choice(kinds)
    return {"cat": _cat, "contiguous": _contiguous, "half_scalar": _half_scalar, "trig": _trig}[kind](b)


def _produced(v: Value) -> bool:
    """Computed by the graph (not one of its inputs)."""
    return v.name.startswith("v")


def _read_again(b: _Builder, v: Value) -> bool:
    """A use of `v` after a write, so that what the write did to it is returned."""
    return b.emit(f"{v.name} * 1", v.exact, v.bound, v.nan)


def _cat(b: _Builder) -> bool:
    rnd = b.rnd
    x = b.pick(lambda v: _produced(v) and v.example.dim() >= 1 and v.example.numel() > 0)
    if x is None:
        return False
    d = rnd.randrange(x.example.dim())

    def joins(v: Value) -> bool:
        """Same dtype and the same sizes as `x` but along `d`."""
        a, c = v.example.shape, x.example.shape
        return v.dtype == x.dtype and len(a) == len(c) and all(s == t for i, (s, t) in enumerate(zip(a, c, strict=True)) if i != d)

    parts = [x] + [p for p in (b.pick(joins) for _ in range(rnd.randint(1, 2))) if p is not None]
    rnd.shuffle(parts)
    written = rnd.choice([p for p in parts if _produced(p)])
    when = rnd.choice(["before", "before", "before", "after", "result"])
    if when == "before":
        inplace(b, written)
    names = ", ".join(p.name for p in parts)
    expr = rnd.choice([f"torch.cat([{names}], {d})", f"torch.cat(({names},), dim={d})"])
    exact = all(p.exact for p in parts)
    if not b.emit(expr, exact, max(p.bound for p in parts), any(p.nan for p in parts)):
        return False
    cat = b.values[-1]
    if when == "after" and inplace(b, written):
        return _read_again(b, written)
    if when == "result" and inplace(b, cat):
        return _read_again(b, written)
    return True


def _contiguous(b: _Builder) -> bool:
    rnd = b.rnd
    viewable = lambda v: v.example.dim() >= 1 and v.example.numel() > 0  # noqa: E731
    x = (b.pick(lambda v: viewable(v) and not _produced(v)) if rnd.random() < 0.7 else None) or b.pick(viewable)
    if x is None:
        return False
    n, rank = x.name, x.example.dim()
    views = [f"{n}[..., ::2]", f"{n}[..., 1:]"]
    if rank >= 2:
        views += [f"{n}.transpose(-1, -2)", f"{n}.transpose(0, {rank - 1})", f"{n}.mT"]
    if rank == 2:
        views += [f"{n}.t()"]
    if rank == 3:
        views += [f"{n}.permute(2, 0, 1)"]
    call = rnd.choice([".contiguous()", ".contiguous()", ".contiguous(memory_format=torch.contiguous_format)"])
    if not b.emit(rnd.choice(views) + call, x.exact, x.bound, x.nan):
        return False
    copy = b.values[-1]
    if not any(inplace(b, copy) for _ in range(3)):
        return True
    # An input is compared after the call; a value computed here is returned
    # only if something reads it after the write.
    return _read_again(b, x) if _produced(x) else True


def _half_scalar(b: _Builder) -> bool:
    rnd = b.rnd
    x = b.pick(lambda v: v.dtype in HALVES and v.exact)
    if x is None:
        # A cast of an exact float32/float64 value to a half type rounds as eager does.
        src = b.pick(lambda v: v.dtype in (torch.float32, torch.float64) and v.exact and v.bound <= 64)
        if src is None or not b.emit(f"{src.name}.{rnd.choice(['half', 'bfloat16'])}()", True, src.bound, src.nan):
            return False
        x = b.values[-1]
    n = x.name
    op = rnd.choice(["*", "*", "/", "+", "-"])
    s = rnd.choice(SMALL + LARGE if op in "*/" else (6e4, 1e5, 2049.0, 1e-8, 3e4)) * rnd.choice([1, -1])
    scale = {"*": abs(s), "/": 1 / abs(s)}.get(op, 1.0)
    expr = rnd.choice({
        "*": [f"{n} * {s!r}", f"{s!r} * {n}", f"torch.mul({n}, {s!r})"],
        "/": [f"{n} / {s!r}", f"torch.div({n}, {s!r})", f"{n}.div({s!r})"],
        "+": [f"{n} + {s!r}", f"{s!r} + {n}", f"torch.add({n}, 1.0, alpha={s!r})"],
        "-": [f"{n} - {s!r}", f"{s!r} - {n}", f"torch.sub({n}, 1.0, alpha={s!r})"],
    }[op])  # fmt: skip
    bound = x.bound * scale if op in "*/" else x.bound + abs(s) + 1
    overflows = not bound < HALF_MAX[x.dtype]
    if overflows:
        bound = math.inf
    nan = x.nan or overflows  # inf - inf, 0 * inf downstream
    if not b.emit(expr, False, bound, nan):
        return False
    v = b.values[-1]
    casts = ["float()", "double()", "to(torch.float32)", "to(torch.bool)", "bool()"]
    if not nan and bound < 1e15:  # a cast of inf or NaN to an integer is undefined in C++
        casts += ["to(torch.int64)", "long()", "int()"]
    cast = rnd.choice(casts)
    target = {"float()": torch.float32, "double()": torch.float64, "to(torch.float32)": torch.float32,
              "to(torch.bool)": torch.bool, "bool()": torch.bool, "to(torch.int64)": torch.int64,
              "long()": torch.int64, "int()": torch.int32}[cast]  # fmt: skip
    if target == torch.int32 and bound >= 2**31:
        return True
    if not b.emit(f"{v.name}.{cast}", True, 1.0 if target == torch.bool else bound, nan and target in FLOATS, rounded=True):
        return True
    w = b.values[-1]
    if target in (torch.float32, torch.float64) and scale < 1e-2 and not nan and rnd.random() < 0.7:
        # Back to the operand's magnitude, where the half type's tolerance applies.
        back = f"{w.name} * {abs(s)!r}" if op == "/" else f"{w.name} / {abs(s)!r}"
        b.emit(back, True, x.bound * 1.01)
    return True


def _trig(b: _Builder) -> bool:
    rnd = b.rnd
    # Exact operands only (or small ones): sin of a rounded large value, such as
    # `1 / cos(x)` near a pole, moves by far more than the tolerance when its
    # operand moves by one ulp, and fused transcendentals are within an ulp of
    # eager's, not bit-equal (random graph 2390: `1 / sin(1 / cos(x))`).
    x = b.pick(lambda v: v.dtype in FLOATS and v.exact and math.isinf(v.bound)) or b.pick(
        lambda v: v.dtype in FLOATS and (v.exact and v.bound < 1e30 or v.bound <= 10.0)
    )
    if x is None:
        return False
    fn = rnd.choice(["sin", "sin", "cos"])
    if not b.emit(rnd.choice([f"torch.{fn}({x.name})", f"{x.name}.{fn}()"]), False, 1.0, x.nan):
        return False
    v = b.values[-1]
    if rnd.random() < 0.8:
        return b.emit(f"1 / {v.name}", False, math.inf, True)
    return True
