"""fusec's passes, one per file. `FUSEC_PASSES` maps each pass name (as used in
`fusec-opt -p`) to a loader, so the tool imports only the passes a pipeline names."""

from collections.abc import Callable

from xdsl.passes import ModulePass

FUSEC_PASSES: dict[str, Callable[[], type[ModulePass]]] = {}


def _outline_groups() -> type[ModulePass]:
    from fusec.passes.outline_groups import OutlineGroupsPass

    return OutlineGroupsPass


def _lower_group_to_loops() -> type[ModulePass]:
    from fusec.passes.lower_group_to_loops import LowerGroupToLoopsPass

    return LowerGroupToLoopsPass


FUSEC_PASSES["outline-groups"] = _outline_groups
FUSEC_PASSES["lower-group-to-loops"] = _lower_group_to_loops

def _loader(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        import importlib

        return getattr(importlib.import_module(f"fusec.passes.{module}"), cls)

    return load


for _name, _module, _cls in (
    ("convert-arith-to-llvm", "convert_arith_to_llvm", "ConvertArithToLLVMPass"),
    ("convert-memref-to-llvm", "convert_memref_to_llvm", "ConvertMemrefToLLVMPass"),
    ("convert-cf-to-llvm", "convert_cf_to_llvm", "ConvertCfToLLVMPass"),
    ("convert-func-to-llvm", "convert_func_to_llvm", "ConvertFuncToLLVMPass"),
    ("convert-math-to-libm", "convert_math_to_libm", "ConvertMathToLibmPass"),
):
    FUSEC_PASSES[_name] = _loader(_module, _cls)


def _fuse() -> type[ModulePass]:
    from fusec.passes.fuse import FusePass

    return FusePass


def _print_canonical_keys() -> type[ModulePass]:
    from fusec.passes.canonical_key import PrintCanonicalKeysPass

    return PrintCanonicalKeysPass


FUSEC_PASSES["fuse"] = _fuse
FUSEC_PASSES["print-canonical-keys"] = _print_canonical_keys


def _convert_math_to_llvm() -> type[ModulePass]:
    from fusec.passes.convert_math_to_llvm import ConvertMathToLLVMPass

    return ConvertMathToLLVMPass


FUSEC_PASSES["convert-math-to-llvm"] = _convert_math_to_llvm


for _name, _module, _cls in (
    ("decompose", "decompose", "DecomposePass"),
    ("broadcasting-chunk", "broadcasting_chunk", "BroadcastingChunkPass"),
    ("lower-broadcasting-chunk", "lower_broadcasting_chunk", "LowerBroadcastingChunkPass"),
):
    FUSEC_PASSES[_name] = _loader(_module, _cls)
