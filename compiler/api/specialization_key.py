"""The specialization key of a `CompiledFunction` call: what a compiled
program is specialized on, per argument.

    f(x: f32[4, 1], y: f32[4], 2.0) under no_grad
    -> (False,                                     # grad mode
        TensorSpec(float32, cpu, (False, True), True, False),
        TensorSpec(float32, cpu, (False,), True, False),
        float,                                      # a scalar's type
        (class of dim 1 of x, ...))                 # only with size checks

A tensor's part is a `TensorSpec`: its dtype, device, which dims are 1 (or its
exact shape, once the graph reads sizes), contiguity and whether autograd needs
it. Calls autograd records get `("autograd", *training parts)`: exact shapes
and strides, since AOTAutograd traces static shapes. A container of tensors is
keyed by its structure, never by the tensors themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import torch

if TYPE_CHECKING:
    from fusec.api.warm_start import GraphFacts


class TensorSpec(NamedTuple):
    """A tensor argument's part of a key."""

    dtype: torch.dtype
    device: torch.device
    shape: tuple[Any, ...]
    """Per dim, whether it is 1 (it broadcasts); the exact sizes under `exact`."""
    contiguous: bool
    grad: bool
    """Autograd needs it (grad mode on and `requires_grad`)."""


def specialization_key(
    args: Sequence[Any],
    parameters: Sequence[torch.Tensor],
    exact: bool,
    size_checks: Sequence[Any],
) -> tuple[Any, ...]:
    """The key of a call with `args` (see the module docstring); `parameters`
    are the module's, `size_checks` the `fusec.frontend.size_checks.SizeCheck`s whose
    classes of sizes are part of the key (unless `exact`)."""
    grad = torch.is_grad_enabled()
    if grad and needs_grad(args, [p for p in parameters if p.requires_grad]):
        # AOTAutograd traces static shapes and fixes non-tensor arguments.
        return ("autograd", *[training_spec(a) for a in args])
    key: tuple[Any, ...] = (grad, *[arg_spec(a, grad, exact) for a in args])
    if size_checks:
        # Exact shapes hold every size class, not a value a program bakes in.
        checks = [c for c in size_checks if c.kind == "value"] if exact else size_checks
        if checks:
            key += (tuple(c.of(args) for c in checks),)
    return key


def call_key(args: Sequence[Any], parameters: Sequence[torch.Tensor]) -> tuple[Any, ...]:
    """What a call is exactly, as far as a compiled program can tell: its key
    with exact shapes, and the values of its integer arguments (Dynamo passes a
    symbolic size as an int). A program that raised is known to fail only at this.

        f(x: f32[4, 7], 7) -> ((False, TensorSpec(float32, cpu, (4, 7), ...), int), (None, 7))
    """
    values = tuple(a if isinstance(a, int) else None for a in args)
    return (specialization_key(args, parameters, True, ()), values)


def arg_spec(a: Any, grad: bool, exact: bool) -> Any:
    if holds_tensor(a):
        # By structure, never by the tensors themselves: a key must not keep a
        # call's tensors alive, nor compare them (`==` on tensors is elementwise).
        return _container_spec(a, lambda x: arg_spec(x, grad, exact))
    if isinstance(a, torch.Tensor):
        shape = a.shape
        return TensorSpec(
            a.dtype,
            a.device,
            tuple(shape) if exact else tuple([s == 1 for s in shape]),
            a.is_contiguous(),
            grad and a.requires_grad,
        )
    if isinstance(a, bool | int | float):
        return type(a)
    try:
        hash(a)
    except TypeError:
        return ("unhashable", id(a))
    return ("value", a)


def training_spec(a: Any) -> Any:
    if holds_tensor(a):
        return _container_spec(a, training_spec)
    if isinstance(a, torch.Tensor):
        return (a.dtype, a.device, tuple(a.shape), a.stride(), a.requires_grad)
    try:
        hash(a)
    except TypeError:
        return ("unhashable", id(a))
    return (type(a), a)


def holds_tensor(a: Any) -> bool:
    """A tuple, list or dict with a tensor somewhere inside (`fn((x, y))`)."""
    if not isinstance(a, tuple | list | dict):
        return False
    items = a.values() if isinstance(a, dict) else a
    return any(isinstance(x, torch.Tensor) or holds_tensor(x) for x in items)


def _container_spec(a: Any, spec: Callable[[Any], Any]) -> Any:
    """The key of a container argument: its type, keys and each item's `spec`."""
    if isinstance(a, dict):
        return ("container", type(a), tuple((_plain_key(k), spec(v)) for k, v in a.items()))
    return ("container", type(a), tuple(spec(x) for x in a))


def _plain_key(k: Any) -> Any:
    try:
        hash(k)
    except TypeError:
        return ("unhashable", id(k))
    return k


def container_argument(args: Sequence[Any]) -> str | None:
    """Why a call runs eagerly when an argument is a container of tensors: the
    import would take it for a constant (its tensors' values baked into the
    program), so only tensors and scalars passed directly are compiled."""
    for i, a in enumerate(args):
        if holds_tensor(a):
            return (
                f"argument {i} is a {type(a).__name__} holding tensors; fusec compiles "
                "tensors and scalars passed as arguments themselves"
            )
    return None


def describe_inputs(args: Sequence[Any], facts: GraphFacts | None = None) -> str:
    """`f32[4,1] cpu, int` - what a specialization is for; a size the program
    takes at run time (a `?` dim of a graph with symbolic sizes) is `?`:
    `f32[?,16] cpu`."""
    dynamic = {} if facts is None else facts.dynamic
    out = []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            dt = str(a.dtype).removeprefix("torch.")
            grad = " grad" if a.requires_grad else ""
            layout = "" if a.is_contiguous() else " strided"
            dims = dynamic.get(i, ())
            sizes = [
                "?" if len(dims) == a.dim() and dims[d] else str(n) for d, n in enumerate(a.shape)
            ]
            out.append(f"{dt}[{','.join(sizes)}] {a.device}{layout}{grad}")
        else:
            out.append(type(a).__name__)
    return ", ".join(out)


_FIELDS = dict(
    zip(
        TensorSpec._fields,
        ("dtype", "device", "size-1 dims", "contiguity", "requires_grad"),
        strict=True,
    )
)
"""How `why_new` names each part of a `TensorSpec`."""


def why_new(key: Any, known: Sequence[Any]) -> str:
    """Why `key` is a new specialization: the first, or what differs from the
    nearest known one (per input: dtype, device, size-1 dims, contiguity, grad)."""
    if not known:
        return "first call"
    best: list[str] | None = None
    for other in known:
        if len(other) != len(key):
            diffs = [f"{len(key) - 1} inputs instead of {len(other) - 1}"]
        else:
            diffs = []
            if other[0] != key[0]:
                diffs.append("grad mode " + ("on" if key[0] else "off"))
            for i, (a, b) in enumerate(zip(key[1:], other[1:], strict=True)):
                if _same(a, b):
                    continue
                if isinstance(a, TensorSpec) and isinstance(b, TensorSpec):
                    for name, x, y in zip(_FIELDS.values(), a, b, strict=True):
                        if x != y:
                            diffs.append(f"input {i} {name} {_show(x)} (was {_show(y)})")
                else:
                    diffs.append(f"input {i} is {_show(a)} (was {_show(b)})")
        if best is None or len(diffs) < len(best):
            best = diffs
    return "new inputs: " + "; ".join(best or ["a different specialization"])


def _same(a: Any, b: Any) -> bool:
    """`a == b` for two key entries; entries whose `==` raises or is not a bool
    (a user's hashable object) count as different."""
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - only the message of a new specialization is at stake
        return False


def _show(x: Any) -> str:
    if isinstance(x, tuple) and all(isinstance(v, bool) for v in x):
        return "[" + ",".join("1" if v else "n" for v in x) + "]"
    if isinstance(x, type):
        return x.__name__
    return str(x).removeprefix("torch.")


def arg_kind(spec: Any) -> Any:
    """A specialization entry less what guards check: "tensor", or the scalar type."""
    if isinstance(spec, TensorSpec):
        return "tensor"
    return spec


def needs_grad(args: Sequence[Any], params: Sequence[torch.Tensor]) -> bool:
    return bool(params) or any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
