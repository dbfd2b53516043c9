"""What a cache entry's payload must be before anything runs it.

An entry's MAC (`fusec.runtime.entries`) says this cache wrote it for its key;
these checks say its content is what its kind claims, so that a damaged or
forged entry that got past the MAC is still a miss, never a crash:

- a kernel's signature is self-consistent (operands read inputs that exist,
  scalars are scalar inputs, exits name outputs, dims are below the rank) and
  describes the very parameter list of the function its code defines
  (`kernel_parameter_count`): a signature with its rank raised or an operand
  dropped would pass the wrong arguments, and the kernel would read and write
  out of bounds;
- an object file is a relocatable ELF64 for this machine whose section table
  and sections lie inside the file (`object_problem`), before LLVM's loader,
  which aborts the process on a malformed one, sees it.
"""

from __future__ import annotations

import os
import re
import struct
import sys
from typing import Any

MAX_RANK = 64
SCALAR_TYPES = ("f64", "i64", "i1")


class BadPayload(ValueError):
    """The payload is not what its entry's kind says it is."""


def _rank_of(type_text: str) -> int:
    """Rank of `tensor<4x?xf32>` (2), -1 for a scalar type."""
    m = re.fullmatch(r"tensor<(.*)>", type_text)
    return -1 if m is None else len(m.group(1).split("x")) - 1


def check_signature(sig: Any) -> None:
    """`BadPayload` unless `sig` (a `KernelSignature`) is self-consistent."""
    if not isinstance(sig.rank, int) or not 0 <= sig.rank <= MAX_RANK:
        raise BadPayload(f"rank {sig.rank!r}")
    n_inputs = len(sig.inputs)
    if not all(isinstance(t, str) for t in sig.inputs):
        raise BadPayload("inputs are not type names")
    for op in sig.operands:
        if not isinstance(op.input, int) or not 0 <= op.input < n_inputs:
            raise BadPayload(f"an operand reads input {op.input!r} of {n_inputs}")
        if not 0 <= _rank_of(sig.inputs[op.input]) <= sig.rank:
            raise BadPayload(f"operand input {sig.inputs[op.input]} does not fit rank {sig.rank}")
    for index, dtype in sig.scalars:
        if not isinstance(index, int) or not 0 <= index < n_inputs or dtype not in SCALAR_TYPES:
            raise BadPayload(f"bad scalar ({index!r}, {dtype!r})")
        if _rank_of(sig.inputs[index]) != -1:
            raise BadPayload(f"scalar {index} is the tensor {sig.inputs[index]}")
    for out in sig.outputs:
        if len(out.static_shape) > max(sig.rank, 1):
            raise BadPayload(f"output of rank {len(out.static_shape)} past rank {sig.rank}")
    n_out = len(sig.outputs)
    for ex in sig.exits:
        if not ex.parts or not all(isinstance(p, int) and 0 <= p < n_out for p in ex.parts):
            raise BadPayload(f"a concat exit names outputs {ex.parts!r} of {n_out}")
        if not isinstance(ex.dim, int) or not 0 <= ex.dim < max(sig.rank, 1):
            raise BadPayload(f"a concat exit along dim {ex.dim!r}")
    if not all(isinstance(d, int) and 0 <= d < sig.rank for d in sig.reduce_dims):
        raise BadPayload(f"reduce dims {sig.reduce_dims!r} past rank {sig.rank}")
    if not isinstance(sig.lanes, int) or sig.lanes < 1:
        raise BadPayload(f"lanes {sig.lanes!r}")


def expected_parameters(sig: Any, target: str) -> int:
    """How many parameters the kernel's function takes (`KernelSignature`'s
    argument order): index range or element count, sizes, pointer and strides
    per operand and output, scalars, the zero-division flag."""
    lrank = max(sig.rank, 1)
    head = 2 if target == "cpu" else 1
    mems = (len(sig.operands) + len(sig.outputs)) * (1 + lrank)
    return head + lrank + mems + len(sig.scalars) + int(bool(sig.zero_division_flag))


def kernel_parameter_count(code: bytes, name: str, target: str) -> int | None:
    """The number of parameters of function `name` as `code` (LLVM IR for
    "cpu", PTX otherwise) defines it; None when it is not defined."""
    quoted = re.escape(name.encode())
    head = (
        rb"define [^\n]*@\"?" + quoted + rb"\"?\("
        if target == "cpu"
        else rb"\.entry\s+" + quoted + rb"\s*\("
    )
    m = re.search(head, code)
    if m is None:
        return None
    # Parameter attributes have parentheses of their own (`captures(none)`):
    # count the commas at depth 1 up to the list's closing parenthesis.
    depth, commas, empty = 1, 0, True
    for c in code[m.end() : m.end() + (1 << 20)]:
        if c == ord("("):
            depth += 1
        elif c == ord(")"):
            depth -= 1
            if depth == 0:
                return 0 if empty else commas + 1
        elif c == ord(",") and depth == 1:
            commas += 1
        if not chr(c).isspace():
            empty = False
    return None


def check_kernel(name: str, target: str, code: bytes, sig: Any) -> None:
    """`BadPayload` unless `sig` is self-consistent and `code` defines `name`
    with the parameters `sig` passes."""
    check_signature(sig)
    found = kernel_parameter_count(code, name, target)
    if found is None:
        raise BadPayload(f"kernel {name} is not defined in the entry's code")
    want = expected_parameters(sig, target)
    if found != want:
        raise BadPayload(f"kernel {name} takes {found} parameters, its signature passes {want}")


_ELF_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}
_SHT_NOBITS = 8


def object_problem(obj: bytes) -> str | None:
    """Why `obj` is not a relocatable ELF64 object for this machine whose
    section table and sections lie inside it, or None when it is one."""
    if len(obj) < 64 or obj[:4] != b"\x7fELF":
        return "not an ELF file"
    if obj[4] != 2 or obj[5] != (1 if sys.byteorder == "little" else 2) or obj[6] != 1:
        return "not a 64-bit ELF of this byte order"
    order = "<" if obj[5] == 1 else ">"
    e_type, e_machine = struct.unpack_from(order + "HH", obj, 16)
    if e_type != 1:
        return f"ELF type {e_type}, not a relocatable object"
    machine = os.uname().machine if hasattr(os, "uname") else ""
    want = _ELF_MACHINES.get(machine.lower())
    if want is not None and e_machine != want:
        return f"ELF machine {e_machine}, not this one ({want})"
    (shoff,) = struct.unpack_from(order + "Q", obj, 0x28)
    ehsize, _, _, shentsize, shnum, shstrndx = struct.unpack_from(order + "HHHHHH", obj, 0x34)
    if ehsize != 64 or shentsize != 64 or shnum == 0 or shstrndx >= shnum:
        return "bad ELF header sizes"
    if shoff + shnum * shentsize > len(obj):
        return "section table past the end of the file"
    for i in range(shnum):
        sh = struct.unpack_from(order + "IIQQQQIIQQ", obj, shoff + i * shentsize)
        sh_type, offset, size, link = sh[1], sh[4], sh[5], sh[6]
        if sh_type != _SHT_NOBITS and offset + size > len(obj):
            return f"section {i} past the end of the file"
        if link >= shnum:
            return f"section {i} links to section {link} of {shnum}"
    return None
