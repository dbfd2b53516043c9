"""Random pointwise graphs for differential testing against eager PyTorch.

`generate(seed)` gives a `RandomGraph`: the Python source of a function of 1-4
tensors with 2-30 pointwise ops (broadcasting, mixed dtypes f32/f64/f16/bf16/
int/uint8/bool, views: transpose, slicing, unsqueeze, `x[None]`, `expand_as`, chunk
pieces; in-place ops, also through views and on inputs; no-op casts; integer
division, by zero too; Python-scalar operands, comparisons of half tensors with
Python floats), and input makers for several calls: two at the example shape,
then calls at other shapes of the same rank (sizes change, size-1 dims mostly
stay 1), with contiguous, transposed, sliced and stride-0 (expanded) inputs.

The generator builds each graph by running it: every op is applied to example
tensors as it is chosen, so its dtype and shape are PyTorch's, and an op eager
rejects (an in-place result that does not fit, say) is simply not chosen.
What fusion may legitimately change is kept out: half-precision values that came
out of arithmetic (fused code rounds once, eager after every op) are not
compared, floored or cast to integers, and magnitudes stay where no type
overflows differently; each value carries `exact` and `bound` for that.

Views to new sizes (`view`/`reshape`/`flatten`) are not generated: their sizes
are baked in at import (issue 11 makes them symbolic).

Now and then (`HAZARD_RATE` of the ops, `SPECIAL_RATE` of the float inputs)
a graph also draws the patterns fused code once got wrong (issue 31; see
`random_graph_hazards.py`): cats around in-place writes, `.contiguous()` copies
written to, half ops with extreme Python scalars then explicit casts, and inputs
mixing -0.0 with inf, NaN and huge values into sin/cos. Those draws come from
a stream of their own, so a seed that draws none gives the graph it gave before.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

FLOATS = (torch.float32, torch.float64, torch.float16, torch.bfloat16)
HALVES = (torch.float16, torch.bfloat16)
INTS = (torch.int64, torch.int32, torch.uint8)
INPUT_DTYPES = (
    (torch.float32, 6),
    (torch.float64, 2),
    (torch.float16, 2),
    (torch.bfloat16, 2),
    (torch.int64, 2),
    (torch.int32, 1),
    (torch.uint8, 1),
    (torch.bool, 1),
)
HAZARD_RATE = 0.06
"""Chance that an op is one of `random_graph_hazards`' patterns."""
SPECIAL_RATE = 0.12
"""Chance that a float input mixes in signed zeros, infinities, NaNs and huge values."""
LAYOUTS = ("contiguous", "contiguous", "contiguous", "transposed", "sliced", "expanded")


@dataclass
class Value:
    """A tensor of the graph being built: its name, example value, and what is
    known of it for every input (`exact`: eager and fused code compute it alike;
    `bound`: |x| <= bound, NaN aside)."""

    name: str
    example: torch.Tensor
    exact: bool
    bound: float
    nan: bool = False
    halfy: bool = False
    """Depends on a half-precision value eager rounded and fused code did not:
    off by a half-type ulp whatever its own dtype, so never compared."""

    @property
    def dtype(self) -> torch.dtype:
        return self.example.dtype


@dataclass
class InputSpec:
    """How to make one input: dtype, the size-1 pattern of its dims (aligned to
    the right of the graph's full shape) and a layout."""

    dtype: torch.dtype
    dims: tuple[int, ...]
    """Indices into the full shape; -1 marks a dim of size 1."""
    layout: str
    special: int = 0
    """Nonzero: some elements are special values (`SPECIALS`), drawn from their
    own generator salted by this number."""

    def make(self, full: tuple[int, ...], rng: torch.Generator) -> torch.Tensor:
        shape = tuple(1 if d < 0 else full[d] for d in self.dims)
        if self.layout == "expanded":
            # Size-1 dims of the source broadcast to the full size with stride 0.
            src = _values((1,) * len(shape), self.dtype, rng, self.special)
            return src.expand(shape) if all(s >= 1 for s in shape) else src
        if self.layout == "transposed" and len(shape) >= 2:
            t = _values((*shape[:-2], shape[-1], shape[-2]), self.dtype, rng, self.special)
            return t.transpose(-1, -2)
        if self.layout == "sliced":
            t = _values((*shape[:-1], shape[-1] * 2), self.dtype, rng, self.special)
            return t[..., ::2]
        return _values(shape, self.dtype, rng, self.special)


SPECIALS = (-0.0, -0.0, -0.0, 0.0, math.inf, -math.inf, math.nan, 1e30, -1e30, 3e5)


def _values(shape: tuple[int, ...], dtype: torch.dtype, rng: torch.Generator, special: int = 0) -> torch.Tensor:
    """Values from the CPU generator `rng`, on torch's default device; with
    `special`, about a third of a float tensor's elements are `SPECIALS`, the
    first one -0.0 and another one infinite, NaN or huge."""
    cpu = torch.device("cpu")
    if dtype == torch.bool:
        x = torch.randint(0, 2, shape, generator=rng, device=cpu).bool()
    elif dtype in INTS:
        # Small integers: zeros (division by zero) and negatives are frequent.
        x = torch.randint(-4, 5, shape, generator=rng, device=cpu).to(dtype)
    else:
        x = torch.rand(shape, generator=rng, dtype=torch.float64, device=cpu) * 6 - 3
        if special:
            # Their own generator: the other elements are those of a plain input.
            g = torch.Generator().manual_seed(rng.initial_seed() * 64 + special)
            pick = torch.randint(len(SPECIALS), shape, generator=g)
            mask = torch.rand(shape, generator=g, dtype=torch.float64) < 0.35
            x = torch.where(mask, torch.tensor(SPECIALS, dtype=torch.float64)[pick], x)
            if x.numel() >= 2:
                # A signed zero next to a huge or non-finite lane, even in small tensors.
                flat = x.view(-1)
                flat[0] = -0.0
                big = SPECIALS[4 + int(torch.randint(len(SPECIALS) - 4, (), generator=g))]
                flat[1 + int(torch.randint(x.numel() - 1, (), generator=g))] = big
        x = x.to(dtype)
    return x.to(torch.get_default_device())


@dataclass
class RandomGraph:
    seed: int
    source: str
    fn: Callable[..., Any]
    specs: list[InputSpec]
    shapes: list[tuple[int, ...]]
    """The full shape of each call (the first is the example's)."""
    half: torch.dtype | None = None
    """The least precise float type the graph computes in: float outputs get
    its tolerance (fused code keeps half intermediates in f32 where eager
    rounds them, and an f64 value that passed through f32 carries f32's ulp)."""

    def inputs(self, call: int) -> list[torch.Tensor]:
        rng = torch.Generator().manual_seed(self.seed * 1000 + call)
        full = self.shapes[min(call, len(self.shapes) - 1)]
        return [s.make(full, rng) for s in self.specs]


@dataclass
class _Builder:
    rnd: random.Random
    hazards: random.Random
    values: list[Value] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    outputs: list[Value] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)

    def pick(self, pred: Callable[[Value], bool] = lambda v: True) -> Value | None:
        live = [v for v in self.values if pred(v)]
        if not live:
            return None
        # Prefer recent values: longer chains, more fusion.
        return live[min(len(live) - 1, int(self.rnd.expovariate(0.5)))] if self.rnd.random() < 0.6 else self.rnd.choice(live)

    def _restore(self, saved: dict[str, torch.Tensor]) -> bool:
        """Undoes what a rejected op wrote (an in-place op may have written before
        raising); False, for `emit` to return."""
        for v in self.values:
            try:
                v.example.copy_(saved[v.name])
            except RuntimeError:  # an expanded value cannot be written (nor was it)
                pass
        return False

    def emit(
        self, expr: str, exact: bool, bound: float, nan: bool = False, in_place: Value | None = None,
        rounded: bool = False,
    ) -> bool:
        """Runs `expr` on the examples; keeps it (as a new value, or as a write
        to `in_place`) if eager accepts it and it stays a tensor we can compare.
        `rounded`: `expr` is an explicit cast of a half value one op made from
        exact values, which rounds it as eager did (the result is not `halfy`)."""
        name = f"v{len(self.lines)}"
        by_name = {v.name: v for v in self.values}
        deps = [by_name[n] for n in re.findall(r"\b[xv]\d+\b", expr) if n in by_name]
        saved = {v.name: v.example.clone() for v in self.values}
        try:
            result = eval(expr, {"torch": torch, "F": F}, self.env)  # noqa: S307
        except Exception:  # noqa: BLE001 - eager rejects it: choose another op
            return self._restore(saved)
        if not isinstance(result, torch.Tensor) or result.numel() > 4096:
            return False
        if result.dtype in HALVES and any(d.dtype != result.dtype for d in deps):
            # Eager rounds a mixed op (uint8 - bf16) to the half type; fused code
            # computes it in f32. Its rounding error grows with the operands: keep
            # them small, as a half type's own inputs are.
            exact = False
            if max(d.bound for d in deps) > 64:
                return self._restore(saved)
        halfy = not rounded and (any(d.halfy for d in deps) or (result.dtype in HALVES and not exact))
        if result.dtype == torch.uint8:  # wraps to 0..255 whatever it computed
            bound = 255.0
        if in_place is not None:
            self.lines.append(f"    {expr}")
            in_place.halfy = in_place.halfy or halfy or (in_place.dtype in HALVES and not exact)
            in_place.exact = in_place.exact and exact
            in_place.bound = max(in_place.bound, bound)
            in_place.nan = in_place.nan or nan
            return True
        self.lines.append(f"    {name} = {expr}")
        self.env[name] = result
        v = Value(name, result, exact, bound, nan, halfy)
        self.values.append(v)
        return True


def _scalar(rnd: random.Random, dtype: torch.dtype) -> str:
    if dtype == torch.bool or rnd.random() < 0.1:
        return rnd.choice(["True", "False"])
    if dtype in INTS and rnd.random() < 0.7:
        return str(rnd.randint(-3, 3))
    # Floats that half types do not represent exactly.
    return repr(rnd.choice([0.1, 0.5, -0.25, 1 / 3, 0.7, 2.0, -1.5, 0.0, 1e-3]))


def _fits(v: Value, bound: float) -> bool:
    """A result bounded by `bound` does not overflow `v`'s type differently."""
    if v.dtype in HALVES:
        return bound < 1e3
    if v.dtype in FLOATS:
        return bound < 1e30
    return bound < 1e6


def _is_float(v: Value) -> bool:
    return v.dtype in FLOATS


def _comparable(v: Value) -> bool:
    """Comparing, flooring or truncating `v` gives eager's answer when fused."""
    return v.exact or (v.dtype in (torch.float32, torch.float64) and not v.halfy)


def _op(b: _Builder) -> bool:
    # The hazards draw from their own stream: a graph that draws none is the
    # graph its seed gave before they existed.
    if b.hazards.random() < HAZARD_RATE:
        from random_graph_hazards import hazard

        b.rnd, rnd = b.hazards, b.rnd
        try:
            return hazard(b)
        finally:
            b.rnd = rnd
    rnd = b.rnd
    x = b.pick()
    assert x is not None
    kind = rnd.choice(
        ["unary"] * 5 + ["binary"] * 6 + ["scalar"] * 4 + ["compare"] * 3 + ["cast"] * 3
        + ["view"] * 4 + ["inplace"] * 3 + ["div"] * 2 + ["where"] + ["chunk"] + ["clamp"]
    )  # fmt: skip
    n = x.name
    fl = _is_float(x)
    if kind == "unary":
        if not fl:
            op = rnd.choice(["abs", "neg"]) if x.dtype != torch.bool else "logical_not"
            return b.emit(f"torch.{op}({n})", x.exact, x.bound + 1)
        choices = {
            "torch.exp({})": (False, math.exp(min(x.bound, 80))),
            "torch.tanh({})": (False, 1.0),
            "torch.sigmoid({})": (False, 1.0),
            "torch.sin({})": (False, 1.0),
            "torch.cos({})": (False, 1.0),
            "torch.abs({})": (x.exact, x.bound),
            "torch.neg({})": (x.exact, x.bound),
            "torch.relu({})": (x.exact, x.bound),
            "torch.sqrt({})": (False, math.sqrt(x.bound) + 1),
            "torch.log1p(torch.abs({}))": (False, math.log1p(x.bound) + 1),
            "F.silu({})": (False, x.bound + 1),
            "F.gelu({})": (False, x.bound + 1),
            "F.leaky_relu({}, " + rnd.choice(["0.0", "0.2", "0.01"]) + ")": (False, x.bound),
            "torch.erf({})": (False, 1.0),
        }  # fmt: skip
        if x.nan:
            # may hold +inf: eager's gelu(inf) is NaN on its vectorized path, inf on its scalar one
            del choices["F.gelu({})"]
        if math.isinf(x.bound):  # special values: only into sin/cos (see random_graph_hazards)
            choices = {k: v for k, v in choices.items() if k.startswith(("torch.sin", "torch.cos"))}
        expr, (exact, bound) = rnd.choice(list(choices.items()))
        if not _fits(x, bound):
            return False
        nan = x.nan or "sqrt" in expr
        return b.emit(expr.format(n), exact and not nan, bound, nan)
    if kind in ("binary", "scalar"):
        op = rnd.choice(["+", "-", "*", "/"] + (["**"] if kind == "scalar" else []))
        if kind == "binary":
            y = b.pick(lambda v: v is not x)
            if y is None:
                return False
            other, ybound, yexact = y.name, y.bound, y.exact
        else:
            other = _scalar(rnd, x.dtype)
            ybound, yexact = abs(float(eval(other))), True
            if op == "**":
                if x.dtype == torch.bool:
                    return False
                other = rnd.choice(["2", "3", "0.5", "-1", "-0.5", "2.0", "-2"])
                if x.dtype in INTS and other.startswith("-") or "." in other and not fl:
                    return False
        bound = {"+": x.bound + ybound, "-": x.bound + ybound, "*": x.bound * ybound,
                 "/": math.inf, "**": x.bound ** 3 + 1}[op]  # fmt: skip
        if op in ("/", "**") and fl and x.dtype in HALVES:
            return False
        if op == "/":
            bound = 1e30  # division by small values; no half types (above)
        expr = f"{n} {op} {other}" if rnd.random() < 0.8 or op == "**" else f"{other} {op} {n}"
        exact = x.exact and yexact and x.dtype not in HALVES and op != "**"
        nan = x.nan or op in ("/", "**")
        if not _fits(x, bound):
            return False
        if rnd.random() < 0.2 and op in "+-*/" and kind == "binary":
            fn = {"+": "torch.add", "-": "torch.sub", "*": "torch.multiply", "/": "torch.divide"}[op]
            expr = f"{fn}({n}, {other})"
        return b.emit(expr, exact, bound, nan)
    if kind == "compare":
        if not _comparable(x):
            return False
        op = rnd.choice(["<", "<=", ">", ">=", "==", "!="])
        # Equality of two computed floats: fused sin/exp/... are within an ulp of
        # eager's (MKL's) but not bit for bit, so `sin(x) == sin(x)` with one side
        # in a kernel and one through PyTorch is not eager's answer (an ordering
        # flips only at a tie with that ulp; equality of inexact values is one).
        equality = op in ("==", "!=")
        y = None if equality and not x.exact else b.pick(
            lambda v: v is not x and _comparable(v) and (v.exact or not equality)
        )
        other = y.name if y is not None and rnd.random() < 0.5 else _scalar(rnd, x.dtype)
        if rnd.random() < 0.3:
            fn = {"<": "lt", "<=": "le", ">": "gt", ">=": "ge", "==": "eq", "!=": "ne"}[op]
            return b.emit(f"{n}.{fn}({other})", True, 1.0)
        return b.emit(f"({n} {op} {other})", True, 1.0)
    if kind == "cast":
        to = rnd.choice(["float", "double", "half", "bfloat16", "int", "long", "bool", "to(torch.float32)", "to(torch.int64)", "to(torch.uint8)"])
        if to == "to(torch.uint8)" and fl:  # C++'s float -> uint8 is undefined out of range
            return False
        if to in ("int", "long", "to(torch.int64)") and fl and (x.nan or x.bound > 1e6 or not _comparable(x)):
            return False
        if to == "bool" and fl and not _comparable(x):
            return False
        if to in ("half", "bfloat16") and x.bound > 1e3:
            return False
        target = {"float": torch.float32, "double": torch.float64, "half": torch.float16,
                  "bfloat16": torch.bfloat16, "int": torch.int32, "long": torch.int64,
                  "bool": torch.bool, "to(torch.float32)": torch.float32,
                  "to(torch.int64)": torch.int64, "to(torch.uint8)": torch.uint8}[to]  # fmt: skip
        # A cast to a half type rounds exactly as eager; from one it is exact.
        exact = x.exact or (target in HALVES and x.dtype in (torch.float32, torch.float64))
        bound = 1.0 if target == torch.bool else x.bound
        return b.emit(f"{n}.{to}()" if not to.startswith("to(") else f"{n}.{to}", exact, bound, x.nan and target in FLOATS)
    if kind == "view":
        rank = x.example.dim()
        choices = ["none", "unsqueeze"]
        if rank >= 2:
            choices += ["transpose", "t"]
        if rank >= 1 and x.example.shape[-1] >= 2:
            choices += ["slice", "step"]
        big = b.pick(lambda v: v.example.dim() >= rank and _broadcasts_to(x.example, v.example))
        if big is not None and big is not x:
            choices += ["expand_as"]
        how = rnd.choice(choices)
        expr = {
            "none": f"{n}[None]",
            "unsqueeze": f"{n}.unsqueeze({rnd.randint(0, rank)})",
            "transpose": f"{n}.transpose(0, {rank - 1})",
            "t": f"{n}.transpose(-1, -2)",
            "slice": f"{n}[..., 1:]",
            "step": f"{n}[..., ::2]",
            "expand_as": f"{n}.expand_as({big.name if big else n})",
        }[how]
        return b.emit(expr, x.exact, x.bound, x.nan)
    if kind == "inplace":
        target = b.pick(lambda v: v.example.numel() > 0)
        return target is not None and inplace(b, target)
    if kind == "div":
        if x.dtype not in INTS:
            return False
        y = b.pick(lambda v: v is not x and v.dtype in INTS)
        other = y.name if y is not None and rnd.random() < 0.7 else rnd.choice(["2", "-3", "0"])
        mode = rnd.choice(["//", "trunc", "floor"])
        expr = f"{n} // {other}" if mode == "//" else f"torch.div({n}, {other}, rounding_mode='{mode}')"
        return b.emit(expr, True, x.bound)
    if kind == "where":
        c = b.pick(lambda v: v.dtype == torch.bool)
        y = b.pick(lambda v: v is not x)
        if c is None:
            return False
        other = y.name if y is not None and rnd.random() < 0.6 else _scalar(rnd, x.dtype)
        yb = y.bound if y is not None and other == y.name else 3.0
        ye = y.exact if y is not None and other == y.name else True
        return b.emit(f"torch.where({c.name}, {n}, {other})", x.exact and ye, max(x.bound, yb), x.nan)
    if kind == "chunk":
        rank = x.example.dim()
        if rank == 0:
            return False
        d = rnd.randrange(rank)
        k = rnd.choice([2, 3, x.example.shape[d] or 1])
        piece = rnd.choice([0, -1])
        return b.emit(f"{n}.chunk({k}, {d})[{piece}] * 1", x.exact, x.bound, x.nan)
    if kind == "clamp":
        if x.dtype == torch.bool:
            return False
        lo = rnd.choice(["min=0.0", "min=-0.5", "max=0.5", "min=True", "min=-1, max=1", "max=-0.0"])
        if not fl and "." in lo:
            return False
        return b.emit(f"torch.clamp({n}, {lo})", x.exact, max(x.bound, 1.0), x.nan)
    return False


def inplace(b: _Builder, target: Value) -> bool:
    """An in-place op on `target`, directly or through a view of it."""
    rnd = b.rnd
    t = target.name
    if rnd.random() < 0.4 and target.example.dim() >= 1:
        # Through a view of it.
        view = rnd.choice([f"{t}[None]", f"{t}[..., :1]", f"{t}.unsqueeze(0)"]
                          + ([f"{t}.transpose(-1, -2)"] if target.example.dim() >= 2 else []))  # fmt: skip
        t = f"({view})"
    tfloat = target.dtype in FLOATS
    if tfloat and target.dtype not in HALVES:
        op = rnd.choice(["add_", "mul_", "sub_", "sigmoid_", "tanh_", "relu_", "clamp_", "div_"])
    elif tfloat:
        op = rnd.choice(["relu_", "neg_", "abs_", "clamp_"])
    elif target.dtype == torch.bool:
        op = rnd.choice(["logical_not_", "logical_and_"])
    else:
        op = rnd.choice(["add_", "mul_", "sub_", "neg_", "abs_", "clamp_"])
    if math.isinf(target.bound) and op in ("sigmoid_", "tanh_"):
        return False  # inf/NaN lanes (special inputs) go only where eager's result is plain
    y = b.pick(lambda v: v is not target)
    if op in ("add_", "mul_", "sub_", "div_", "logical_and_"):
        arg = y.name if y is not None and rnd.random() < 0.6 else _scalar(rnd, target.dtype)
        if arg in ("True", "False") and op != "logical_and_":
            arg = "2"
        bound = target.bound + (y.bound if y is not None and arg == y.name else 3)
        if op == "mul_":
            bound = target.bound * (y.bound if y is not None and arg == y.name else 3)
        if op == "div_":
            bound = 1e30
        if not _fits(target, bound):
            return False
        exact = (target.dtype not in HALVES) and target.exact and (y is None or arg != y.name or y.exact)
        return b.emit(f"{t}.{op}({arg})", exact, bound, in_place=target, nan=op == "div_")
    if op == "clamp_":
        lo = rnd.choice(["-1", "0", "0.5"]) if tfloat else rnd.choice(["-1", "0", "1"])
        return b.emit(f"{t}.clamp_(min={lo})", target.exact, target.bound, in_place=target)
    exact = target.exact and op in ("relu_", "neg_", "abs_", "logical_not_")
    return b.emit(f"{t}.{op}()", exact, max(target.bound, 1.0), in_place=target)


def _broadcasts_to(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dim() > b.dim():
        return False
    return all(s == 1 or s == t for s, t in zip(reversed(a.shape), reversed(b.shape), strict=False))


def generate(seed: int) -> RandomGraph:
    rnd = random.Random(seed)
    hazards = random.Random(f"hazards {seed}")
    rank = rnd.randint(1, 3)
    full = tuple(rnd.choice([1, 2, 3, 4, 5]) for _ in range(rank))
    dtypes, weights = zip(*INPUT_DTYPES, strict=True)
    specs: list[InputSpec] = []
    for _ in range(rnd.randint(1, 4)):
        r = rnd.randint(1, rank)
        dims = tuple(-1 if rnd.random() < 0.25 else rank - r + i for i in range(r))
        layout = rnd.choice(LAYOUTS)
        if layout == "expanded" and all(full[d] == 1 for d in dims if d >= 0):
            layout = "contiguous"
        dtype = rnd.choices(dtypes, weights)[0]
        special = len(specs) + 1 if dtype in FLOATS and hazards.random() < SPECIAL_RATE else 0
        specs.append(InputSpec(dtype, dims, layout, special))
    # Later calls: other sizes, same rank; size-1 dims mostly stay 1.
    shapes = [full]
    for _ in range(2):
        shapes.append(
            tuple((1 if rnd.random() < 0.9 else rnd.randint(2, 6)) if s == 1 else rnd.randint(1, 6) for s in full)
        )
    graph_rng = torch.Generator().manual_seed(seed * 1000)
    b = _Builder(rnd, hazards)
    names = [f"x{i}" for i in range(len(specs))]
    for name, spec in zip(names, specs, strict=True):
        ex = spec.make(full, graph_rng)
        b.env[name] = ex
        bound = math.inf if spec.special else 255.0 if ex.dtype == torch.uint8 else 3.0
        b.values.append(Value(name, ex, True, bound, nan=bool(spec.special)))
    n_ops = rnd.randint(2, 30)
    tries = 0
    while len(b.lines) < n_ops and tries < n_ops * 20:
        tries += 1
        _op(b)
    produced = [v for v in b.values if v.name.startswith("v")] or b.values[:1]
    # Every value nothing else reads is returned, so no op is dead: fusec drops
    # dead ops, an integer division by zero among them, where eager raises.
    read: set[str] = set()
    for line in b.lines:
        mentioned = re.findall(r"\b[xv]\d+\b", line)
        # `vK = f(...)` reads what f takes; `(view of vK).op_(...)` writes vK
        # (not a use that keeps it alive) and reads its arguments.
        read.update(mentioned[1:])
    outs = [v for v in produced if v.name not in read] or produced[-1:]
    source = f"def graph_{seed}({', '.join(names)}):\n" + "\n".join(b.lines)
    source += f"\n    return ({', '.join(v.name for v in outs)},)\n"
    scope: dict[str, Any] = {"torch": torch, "F": F}
    exec(compile(source, f"<random graph {seed}>", "exec"), scope)  # noqa: S102
    dtypes_used = {v.dtype for v in b.values}
    least = [t for t in (torch.bfloat16, torch.float16, torch.float32) if t in dtypes_used]
    half = least[0] if least else None
    return RandomGraph(seed, source, scope[f"graph_{seed}"], specs, [*shapes[:1], *shapes], half)


TOLERANCE = {
    torch.float16: {"rtol": 2e-2, "atol": 2e-2},
    torch.bfloat16: {"rtol": 8e-2, "atol": 8e-2},
    torch.float32: {"rtol": 2e-4, "atol": 2e-4},
    torch.float64: {"rtol": 1e-9, "atol": 1e-9},
}


def compare(got: Any, want: Any, what: str, half: torch.dtype | None = None) -> None:
    """Same structure, dtypes, shapes; values within the dtype's tolerance (or
    `half`'s, for f32/f64 values, when the graph computes in that less precise
    type)."""
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list) and len(got) == len(want), f"{what}: arity"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            compare(g, w, f"{what}[{i}]", half)
        return
    assert isinstance(got, torch.Tensor), f"{what}: {type(got).__name__}"
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    tol = TOLERANCE.get(want.dtype, {"rtol": 0, "atol": 0})
    if half is not None and want.dtype in TOLERANCE and want.dtype not in HALVES:
        tol = TOLERANCE[half]
    torch.testing.assert_close(got, want, equal_nan=True, msg=lambda m: f"{what}: {m}", **tol)
