"""The fast path of a `CompiledFunction` call: one generated function per
specialization that checks a call's arguments against its key and runs its
host program, with no key built and no dictionary looked up.

It reads the function it serves only through `FastPathOwner` (its key,
placeholders, size checks, parameters and modes, and `program_failed` for a
program that raises), which `CompiledFunction` implements.

`CompiledFunction.__call__` computes a specialization key per call (a tuple per
argument: dtype, device, size-1 dims, contiguity, autograd) and looks it up.
Once a call has run a compiled specialization, `fast_path` writes out that key
as flat checks over attribute reads, so the next call with the same kinds of
arguments goes straight to the program; any difference (another dtype, a new
size-1 dim, grad mode, a keyword argument) returns `MISS` and the call takes
the full path, which then installs the fast path of the key it found:

    def fast(args):
        if len(args) != 2 or grad_enabled() is not G:
            return MISS
        a0, a1 = args
        if not (SEEN.check(a0, a1) or checked(a0, a1)):
            return MISS
        skipped = program.skipped_launches
        try:
            results = run(args)
        except Exception as e:
            return failed(args, e)            # eager decides, as on the full path
        n = LAUNCHES - (program.skipped_launches - skipped)
        program.last_launches = owner.launches_per_call = n
        owner.last = spec
        return fill(results)

`SEEN` is a C++ check (`torch._C._dynamo.guards.TensorGuards`: 0.2-0.3 µs for
two tensors, where the checks in Python take about 0.5 µs a tensor) of the exact type, dtype,
device, dispatch keys, requires_grad, sizes and strides of a call that had this
key: exact sizes and strides imply every part of the key (size-1 dims,
contiguity, the classes of sizes). Only a call it rejects pays for the key's
own checks, in Python, which a call of other sizes still passes:

    def checked(a0, a1):
        if not (type(a0) is Tensor and a0.dtype is D0 and a0.is_cpu
                and a0.layout is STRIDED and not a0.is_nested):
            return False
        z0 = a0.shape
        if not (len(z0) == 2 and z0[0] != 1 and z0[1] != 1 and a0.is_contiguous()
                and not a0.requires_grad):
            return False
        ...                                   # a1 alike
        n0 = z0[1]                            # how a chunk cuts dim 1:
        if n0 not in SIZES0 and not same_class(n0, C0, K0, SIZES0):
            return False                      # sizes seen in its class are a set
        remember(a0, a1)                      # SEEN checks these sizes from now on
        return True

A graph Dynamo handed over with symbolic sizes (`guarded_by_dynamo`, see
`fusec.api.backend`) varies in sizes from call to call, but Dynamo's guards hold
its dtypes, devices, tensor types, requires_grad and grad mode: its fast path
checks, inline, only the key's shape parts (rank, size-1 dims, contiguity, the
classes of sizes), and has no `SEEN`.

A module's program reads the `training` flags of its modules' tree the trace
baked in (`CompiledFunction.modes`): the fast path checks them
(`M0.training is T0 and ...`), and a call after `model.eval()` takes the full
path, which traces the module again in its new modes.

A program without kernels (every op left to ATen, none fused by PyTorch:
`HostProgram.improves_on_original`) runs as the original function
(`ORIGINAL(a0, a1)`, no host program): the call then costs what eager costs
plus the checks.

Where every guard of the program that could skip a kernel is one the key
implies (`HostProgram.launches_fixed`), the launch count is the constant
`LAUNCHES` and the `skipped` bookkeeping is left out.

Every check the key makes is kept, or implied by the C++ check or (for
graphs from Dynamo) by Dynamo's guards, so the fast path runs a program only
for calls the full path would have run it for. Guards (`fusion.guard`) of function
arguments whose checks the key implies are not checked again: the fast path
runs the program's `run_passing` variant, where they are `True`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch
from fusec.api.specialization_key import TensorSpec
from fusec.runtime import host_code

MISS: Any = object()
"""What a fast path returns when the call is not for its specialization."""

_MAX_PARAMETERS = 16
"""Modules with more parameters than this keep the full path under grad mode
(each parameter's `requires_grad` would be one more check per call)."""


_MAX_SIZES = 256
"""Sizes a fast path remembers per size check as being in its class."""


def _same_class(n: int, cut: tuple[str, tuple[int, ...]], want: Any, sizes: set[int]) -> bool:
    """Whether size `n` is in class `want` under `cut` (kind, params); if so it
    joins `sizes`, the set the fast path tests first."""
    from fusec.frontend.size_checks import classify

    if classify(*cut, n) != want:
        return False
    if len(sizes) < _MAX_SIZES:
        sizes.add(n)
    return True


class FastPathOwner(Protocol):
    """What a fast path reads of the function it serves (`CompiledFunction`)
    when it is made, and calls back when a call needs the full path's answer."""

    options: Any
    """The `CompileOptions` (`cuda_graphs`, `use_kernels`)."""
    original: Any
    """The function compiled: a program without kernels runs it instead."""
    guarded_by_dynamo: bool
    exact_shapes: bool
    """Keys hold exact shapes rather than size-1 dims."""
    size_checks: tuple[Any, ...]
    """The `SizeCheck`s whose classes of sizes end a key (unless `exact_shapes`)."""
    module_parameters: tuple[torch.Tensor, ...]
    mode_modules: tuple[torch.nn.Module, ...]
    modes: tuple[bool, ...]
    default_dtype: torch.dtype
    launches_per_call: int
    last: Any

    def placeholders(self) -> list[tuple[str, Any]] | None:
        """(name, default) per graph input; None when calls cannot bind to them."""
        ...

    def key(self, args: Sequence[Any]) -> Any:
        """The specialization key of a call."""
        ...

    def program_failed(self, key: Any, spec: Any, args: Sequence[Any], error: Exception) -> Any:
        """A program raised: eager decides the result (or the error)."""
        ...

    def __call__(self, *args: Any) -> Any: ...


def fast_path(
    owner: FastPathOwner, key: Any, spec: Any, args: Sequence[Any], *, trusted: bool = False
) -> Callable[..., Any] | None:
    """The generated fast path of `spec` for calls whose key is `key` (a key of
    `owner`, a `CompiledFunction`; `args` a call that had it), or None when its
    key has parts flat checks do not cover (autograd, values other than tensors
    and scalars).

    `trusted`: every call is known to have `key` (Dynamo's guards on a graph of
    static shapes, `fusec.api.backend`), so the checks are left out and the result
    takes the arguments as they come (`fast(*args)`, never `MISS`); parameters'
    `requires_grad` is still checked, and a call that fails it, or any call after
    the program failed, takes the full path."""
    program = spec.program
    params = owner.placeholders()
    if (
        program is None
        or spec.training is not None
        or spec.unconfirmed
        or owner.options.cuda_graphs
        or not isinstance(key, tuple)
        or not isinstance(key[0], bool)
        or params is None
    ):
        return None
    grad = key[0]
    dynamo = owner.guarded_by_dynamo
    n = len(params)
    checks = owner.size_checks if owner.size_checks and not owner.exact_shapes else ()
    arg_specs = key[1 : 1 + n]
    if len(arg_specs) != n or len(key) != 1 + n + (1 if checks else 0) or len(args) != n:
        return None
    if grad and len(owner.module_parameters) > _MAX_PARAMETERS:
        return None
    env: dict[str, Any] = {
        "MISS": MISS,
        # `nn.Parameter` too: AOTAutograd hands a model's parameters to the forward
        # and backward graphs as they are (under no_grad), and a check of
        # `type(a) is Tensor` sent every training call down the full path.
        "PLAIN": _PLAIN,
        "STRIDED": torch.strided,
        "grad_enabled": torch.is_grad_enabled,
        "G": grad,
        "program": program,
        "run": program.generated_run(),  # or, below, the run that skips guards the checks imply
        "owner": owner,
        "spec": spec,
        "fill": spec.fill,
        "LAUNCHES": program.launches,
        "same_class": _same_class,
        "BROKEN": False,
    }
    tensors: list[str] = []
    ranks: dict[int, int] = {}
    # The key's checks: scalars' types inline, tensors' in `checked`.
    scalar_lines: list[str] = []
    checked = ["def checked(...):"]  # its parameters once known
    for i, s in enumerate(arg_specs):
        a = f"a{i}"
        if isinstance(s, type) and s in (bool, int, float):
            scalar_lines.append(f"    if type({a}) is not {s.__name__}:")
            scalar_lines.append("        return MISS")
            continue
        if not _is_tensor_spec(s):
            return None  # a value, an unhashable argument, ...: the full path decides
        tensors.append(a)
        dtype, device, shape, contiguous, _ = s
        env[f"D{i}"] = dtype
        if device.type == "cpu" and device.index is None:
            on_device = f"{a}.is_cpu"
        else:
            env[f"DEV{i}"] = device
            on_device = f"{a}.device == DEV{i}"
        if not dynamo:
            checked.append(
                f"    if not (type({a}) in PLAIN and {a}.dtype is D{i} and {on_device}"
                f" and {a}.layout is STRIDED and not {a}.is_nested):"
            )
            checked.append("        return False")
        z = f"z{i}"
        checked.append(f"    {z} = {a}.shape")
        if owner.exact_shapes:
            env[f"S{i}"] = shape
            conds = [f"{z} == S{i}"]
        else:
            conds = [f"len({z}) == {len(shape)}"]
            conds += [f"{z}[{d}] {'==' if one else '!='} 1" for d, one in enumerate(shape)]
        conds.append(f"{'' if contiguous else 'not '}{a}.is_contiguous()")
        if grad and not dynamo:
            conds.append(f"not {a}.requires_grad")
        checked.append(f"    if not ({' and '.join(conds)}):")
        checked.append("        return False")
        ranks[i] = len(shape)
    classes = key[-1] if checks else ()
    for k, (c, want) in enumerate(zip(checks, classes, strict=True)):
        if c.kind == "value":
            # A float Dynamo passes as a 0-dim tensor, baked into the program: its
            # value, per call (only where these checks run inline on every call;
            # `SEEN` would skip them for tensors it has seen, whatever they hold).
            if not dynamo or ranks.get(c.arg) != 0 or want is None:
                return None
            env[f"K{k}"] = want
            checked.append(f"    if repr(a{c.arg}.item()) != K{k}:")
            checked.append("        return False")
            continue
        if c.arg not in ranks or c.dim >= ranks[c.arg]:
            if want is not None:  # `SizeCheck.of` is None for these arguments
                return None
            continue
        env[f"K{k}"], env[f"C{k}"], env[f"SIZES{k}"] = want, (c.kind, c.params), set()
        checked.append(f"    n{k} = z{c.arg}[{c.dim}]")
        checked.append(
            f"    if n{k} not in SIZES{k} and not same_class(n{k}, C{k}, K{k}, SIZES{k}):"
        )
        checked.append("        return False")
    listed = ", ".join(tensors)
    inline = [line.replace("return False", "return MISS") for line in checked[1:]]
    checked[0] = f"def checked({listed}):"
    checked += [f"    remember({listed})", "    return True"]
    env["remember"] = functools.partial(_remember, env)
    tensor_args = [args[int(a[1:])] for a in tensors]
    env["SEEN"] = _tensor_guard(tensor_args) if tensors and not dynamo else None

    if trusted:
        lines = ["def fast(*args):", "    if BROKEN:", "        return owner(*args)"]
    else:
        lines = ["def fast(args):"]
        grad_mode = "" if dynamo else " or grad_enabled() is not G"
        lines.append(f"    if len(args) != {n}{grad_mode}:")
        lines.append("        return MISS")
        if n:
            lines.append("    " + "".join(f"a{i}, " for i in range(n)) + "= args")
        lines += scalar_lines
        if dynamo:  # sizes vary from call to call: the key's shape checks, inline
            lines += inline
            checked = []
        elif tensors:
            lines.append(f"    if not (SEEN.check({listed}) or checked({listed})):")
            lines.append("        return MISS")
    if not dynamo and not trusted:
        # `torch.set_default_dtype` after compiling: factory calls follow it.
        env["DEFAULT_DTYPE"], env["DD"] = torch.get_default_dtype, owner.default_dtype
        lines += ["    if DEFAULT_DTYPE() is not DD:", "        return MISS"]
    if owner.mode_modules and not trusted:
        # `model.eval()` after compiling: the program baked the modes in.
        for k, (m, t) in enumerate(zip(owner.mode_modules, owner.modes, strict=True)):
            env[f"M{k}"], env[f"T{k}"] = m, t
        modes = " and ".join(f"M{k}.training is T{k}" for k in range(len(owner.modes)))
        lines += [f"    if not ({modes}):", "        return MISS"]
    if grad and owner.module_parameters:
        for k, p in enumerate(owner.module_parameters):
            env[f"P{k}"] = p
        grads = " or ".join(f"P{k}.requires_grad" for k in range(len(owner.module_parameters)))
        lines.append(f"    if {grads}:")
        lines.append("        return owner(*args)" if trusted else "        return MISS")
    env["failed"] = functools.partial(_failed, owner, spec, env)
    if not program.improves_on_original() and owner.options.use_kernels and not trusted:
        # Everything is left to ATen: the original is what the program would do
        # (`use_kernels=False` asks for the program, to test it).
        env["ORIGINAL"] = owner.original
        lines += [
            "    if owner.last is not spec:",  # the counts are 0 while it stays the last
            "        program.last_launches = owner.launches_per_call = 0",
            "        owner.last = spec",
            f"    return ORIGINAL({', '.join(f'a{i}' for i in range(n))})",
        ]
        source = "\n".join(lines)
        if tensors and checked and not trusted:
            source += "\n" + "\n".join(checked)
        return host_code.define(source, env, "fast", "fast_call")
    passing: frozenset[int] = frozenset()
    if spec.args_are_inputs == n:
        inputs = "args"
        passing = _passing_guards(program, arg_specs, owner.exact_shapes)
        if passing:
            env["run"] = program.run_passing(passing)
    else:
        for k, g in enumerate(spec.getters):
            env[f"g{k}"] = g
        inputs = "(" + "".join(f"g{k}(args), " for k in range(len(spec.getters))) + ")"
    fixed = program.launches_fixed(passing)
    if not fixed:
        lines.append("    skipped = program.skipped_launches")
    lines += [
        "    try:",
        f"        results = run({inputs})",
        "    except Exception as e:",
        "        return failed(args, e)",
    ]
    if fixed:
        lines.append("    program.last_launches = owner.launches_per_call = LAUNCHES")
    else:
        lines.append("    n = LAUNCHES - (program.skipped_launches - skipped)")
        lines.append("    program.last_launches = owner.launches_per_call = n")
    lines += ["    owner.last = spec", "    return fill(results)"]
    if tensors and not trusted:
        lines += checked  # empty where the checks are inline
    return host_code.define("\n".join(lines), env, "fast", "fast_call")


_PLAIN = (torch.Tensor, torch.nn.Parameter)
"""The tensor types a fast path takes: `nn.Parameter` too, since AOTAutograd
hands a model's parameters to its forward and backward graphs as they are."""

_MAX_REMEMBERED = 16
"""How many times a fast path's C++ check is made again for new sizes; past
that, calls of other sizes than the last remembered pay for both checks."""


def _tensor_guard(tensors: Sequence[torch.Tensor]) -> Any:
    """A C++ check that tensors have exactly the type, dtype, device, dispatch
    keys, requires_grad, sizes and strides of `tensors` (`check(*tensors)`),
    or one that never passes where PyTorch has none or a tensor is a subclass."""
    if _TensorGuards is None or any(type(t) not in _PLAIN for t in tensors):
        return _NEVER
    # None: every size and stride is static, checked for equality.
    return _TensorGuards(*tensors, dynamic_dims_sizes=None, dynamic_dims_strides=None)


def _remember(env: dict[str, Any], *tensors: torch.Tensor) -> None:
    """Tensors that passed the key's own checks: `SEEN` checks their sizes
    and strides from now on (a bounded number of times)."""
    made = env.get("REMEMBERED", 0)
    if made < _MAX_REMEMBERED:
        env["REMEMBERED"] = made + 1
        env["SEEN"] = _tensor_guard(tensors)


class _Never:
    """The check of a fast path without a C++ one: the key's own checks decide."""

    @staticmethod
    def check(*tensors: Any) -> bool:
        return False


_NEVER = _Never()

try:  # C++ tensor checks, as Dynamo's guards make them; importing them loads no Python
    from torch._C._dynamo.guards import TensorGuards as _TensorGuards
except ImportError:  # a torch without them: the checks run in Python
    _TensorGuards = None


def _failed(
    owner: FastPathOwner, spec: Any, env: dict[str, Any], args: Sequence[Any], error: Exception
) -> Any:
    """A program that raised on the fast path: as on the full path (eager runs
    and decides the error; the specialization runs eagerly from now on, and a
    trusted fast path sends every later call to the full path)."""
    env["BROKEN"] = True
    owner.last = spec
    return owner.program_failed(owner.key(args), spec, args, error)


def _passing_guards(program: Any, arg_specs: Sequence[Any], exact: bool) -> frozenset[int]:
    """The program's top-level guard steps that every call passing the fast
    path's checks passes: guards of function arguments, or of transposes and
    permutations of them (`_view_specs`), each of whose checks (dtype, rank,
    size-1 dims, contiguity, device) the key implies."""
    specs = _view_specs(program, arg_specs)
    passing = []
    for j, step in enumerate(program.steps):
        if step.kind != "guard" or not all(s in specs for s in step.ins):
            continue
        checks = program.guard_checks(j)
        if all(_implies(specs[s], c, exact) for s, c in zip(step.ins, checks, strict=True)):
            passing.append(j)
    return frozenset(passing)


_PERMUTING = ("transpose", "permute", "reinterpret")
"""The torch step kinds whose result's key part follows from their input's."""


def _contiguous(sizes: Sequence[int], strides: Sequence[int]) -> bool:
    """`Tensor.is_contiguous()` of these sizes and strides."""
    expected = 1
    for size, stride in zip(reversed(sizes), reversed(strides), strict=True):
        if size == 0:
            return True
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def _view_specs(program: Any, arg_specs: Sequence[Any]) -> dict[int, Any]:
    """Key parts by slot: the arguments' own, and what the key implies of a
    top-level transpose or permute of a tensor argument (its sizes reordered,
    its contiguity unknown: only `layout=any` guards of it pass) or of a view of
    one made from sizes and strides (both known). A transposed
    input's guard then no longer runs per call:

        %t = aten.transpose %a dim0 = 0 dim1 = 1     # a: f32[64,32], key-checked
        %ok = fusion.guard (%t : ... <ones = [], layout = any, device = "cpu">)
        -> %ok known true: f32[32,64] not known contiguous, on the cpu
    """
    specs = {slot: arg_specs[i] for i, slot in enumerate(program.arg_slots)}
    for step in program.steps:
        recipe = step.recipe
        if not (step.kind == "torch" and recipe and recipe[1].step.kind in _PERMUTING):
            continue
        if len(step.ins) != 1 or len(step.outs) != 1 or step.ins[0] not in specs:
            continue
        spec = specs[step.ins[0]]
        if not _is_tensor_spec(spec):
            continue
        dtype, device, shape, _, rest = spec
        rank, op = len(shape), recipe[1]
        if op.step.kind == "reinterpret":
            # A view made from sizes and strides (exact shapes): both are known.
            ((sizes, strides, _),) = op.prop("views")
            contiguous = _contiguous(sizes, strides)
            specs[step.outs[0]] = TensorSpec(dtype, device, tuple(sizes), contiguous, rest)
            continue
        if rank == 0:
            continue
        if op.name == "aten.transpose":
            a, b = op.prop("dim0") % rank, op.prop("dim1") % rank
            perm = list(range(rank))
            perm[a], perm[b] = b, a
        else:
            perm = [d % rank for d in op.prop("dims") or ()]
            if sorted(perm) != list(range(rank)):
                continue
        specs[step.outs[0]] = TensorSpec(dtype, device, tuple(shape[d] for d in perm), False, rest)
    return specs


def _is_tensor_spec(spec: Any) -> bool:
    """Whether a key part is a tensor's (`specialization_key.TensorSpec`)."""
    return isinstance(spec, TensorSpec)


def _implies(spec: Any, check: Any, exact: bool) -> bool:
    """Whether every argument of key part `spec` passes `check` (a guard's
    `InputCheck`, as its `matches` tests it)."""
    if not _is_tensor_spec(spec):
        return False
    dtype, device, shape, contiguous, _ = spec
    ones = tuple(n == 1 for n in shape) if exact else tuple(shape)
    where = str(device) if check.full_device else device.type
    return (
        dtype == check.dtype
        and len(ones) == check.ndim
        and ones == check.ones
        and (contiguous or not check.contiguous)
        and where == check.device
    )
