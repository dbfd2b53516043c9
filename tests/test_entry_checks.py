"""A cache entry's payload is what its kind says before anything runs it
(issue 31, item 12): kernel signatures against their code, object files
against this machine."""

from __future__ import annotations

import dataclasses
import struct

import pytest
import torch
from fusec.runtime.entry_checks import (
    BadPayload,
    check_kernel,
    expected_parameters,
    kernel_parameter_count,
    object_problem,
)
from fusec.runtime.kernel_signature import CatExit, KernelSignature, OperandSpec, OutputSpec


def built_artifact(target: str = "cpu"):
    import fusec
    from fusec.codegen.kernel import build_kernel
    from fusec.dialects.fusion import GroupOp

    f = fusec.compile(lambda x, y: torch.sigmoid(x + y) * 2, use_kernels=False)
    f(torch.randn(4, 3), torch.randn(4, 3))
    [group] = [op for op in f.last.imported.module.walk() if isinstance(op, GroupOp)]
    return build_kernel(group, target=target)


@pytest.mark.parametrize("target", ["cpu", "sm_80"])
def test_a_built_kernel_passes_and_its_parameters_are_counted(target):
    a = built_artifact(target)
    check_kernel(a.name, target, a.code, a.signature)
    assert kernel_parameter_count(a.code, a.name, target) == expected_parameters(
        a.signature, target
    )


BASE = KernelSignature(
    rank=2,
    inputs=("tensor<4x3xf32>", "f64"),
    operands=(OperandSpec(0, (), "f32"),),
    scalars=((1, "f64"),),
    outputs=(OutputSpec("f32", (4, 3)),),
)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"rank": -1}, "rank"),
        ({"rank": 1000}, "rank"),
        ({"operands": (OperandSpec(5, (), "f32"),)}, "reads input 5"),
        ({"operands": (OperandSpec(1, (), "f32"),)}, "does not fit rank"),
        ({"scalars": ((0, "f64"),)}, "is the tensor"),
        ({"scalars": ((1, "f128"),)}, "bad scalar"),
        ({"outputs": (OutputSpec("f32", (1, 1, 4, 3)),)}, "past rank"),
        ({"exits": (CatExit(0, 0, (3,)),)}, "concat exit"),
        ({"reduce_dims": (2,)}, "reduce dims"),
        ({"lanes": 0}, "lanes"),
    ],
)
def test_inconsistent_signatures_are_refused(change, message):
    bad = dataclasses.replace(BASE, **change)
    params = ", ".join(["i64 %a"] * expected_parameters(bad, "cpu"))
    code = f"define void @k({params}) {{\n  ret void\n}}\n".encode()
    with pytest.raises(BadPayload, match=message):
        check_kernel("k", "cpu", code, bad)


def test_a_signature_that_does_not_describe_the_code_is_refused():
    a = built_artifact()
    for sig in (
        dataclasses.replace(a.signature, rank=a.signature.rank + 2),
        dataclasses.replace(a.signature, operands=a.signature.operands[:-1]),
        dataclasses.replace(a.signature, zero_division_flag=True),
    ):
        with pytest.raises(BadPayload, match="parameters"):
            check_kernel(a.name, "cpu", a.code, sig)
    with pytest.raises(BadPayload, match="not defined"):
        check_kernel("fusec_0000", "cpu", a.code, a.signature)


def host_object() -> bytes:
    import llvmlite.binding as llvm
    from fusec.backends.llvm_jit import _new_host_target_machine

    mod = llvm.parse_assembly("define i32 @f(i32 %x) {\n  ret i32 %x\n}\n")
    return _new_host_target_machine().emit_object(mod)


def test_object_files_are_checked_before_llvm():
    obj = host_object()
    assert object_problem(obj) is None
    assert object_problem(b"not an object file" * 10) == "not an ELF file"
    assert "past the end" in (object_problem(obj[: len(obj) // 2]) or "")
    shared = obj[:16] + struct.pack("<H", 3) + obj[18:]  # ET_DYN
    assert "not a relocatable object" in (object_problem(shared) or "")
    other = obj[:18] + struct.pack("<H", 40) + obj[20:]  # EM_ARM
    assert "machine" in (object_problem(other) or "")
    bad_sizes = obj[:0x3A] + struct.pack("<H", 0xFFFF) + obj[0x3C:]
    assert object_problem(bad_sizes) == "bad ELF header sizes"
