"""fusec's passes, one per file. `FUSEC_PASSES` maps each pass name (as used in
`fusec-opt -p`) to a loader, so the tool imports only the passes a pipeline names."""

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass

_PASSES: tuple[tuple[str, str, str], ...] = (
    # (pass name, module in fusec.passes, class)
    ("functionalize", "functionalize", "FunctionalizePass"),
    ("batch-argument-writes", "batch_argument_writes", "BatchArgumentWritesPass"),
    ("fold-transpose-pairs", "fold_transpose_pairs", "FoldTransposePairsPass"),
    ("decompose", "decompose", "DecomposePass"),
    ("raise-linear", "raise_linear", "RaiseLinearPass"),
    ("raise-attention", "raise_attention", "RaiseAttentionPass"),
    ("decompose-reductions", "decompose_reductions", "DecomposeReductionsPass"),
    ("sink-views", "sink_views", "SinkViewsPass"),
    ("slice-pointwise", "slice_pointwise", "SlicePointwisePass"),
    ("attention-query-layout", "attention_query_layout", "AttentionQueryLayoutPass"),
    ("fuse-gathers", "fuse_gathers", "FuseGathersPass"),
    ("fuse-scatters", "fuse_scatters", "FuseScattersPass"),
    ("broadcasting-chunk", "broadcasting_chunk", "BroadcastingChunkPass"),
    ("lower-broadcasting-chunk", "lower_broadcasting_chunk", "LowerBroadcastingChunkPass"),
    ("hoist-reductions", "hoist_reductions", "HoistReductionsPass"),
    ("fuse", "fuse", "FusePass"),
    (
        "remove-outputs-used-only-in-size",
        "remove_outputs_used_only_in_size",
        "RemoveOutputsUsedOnlyInSizePass",
    ),
    ("fuse-concat-exits", "fuse_concat_exits", "FuseConcatExitsPass"),
    ("share-group-kernels", "share_group_kernels", "ShareGroupKernelsPass"),
    ("fold-matmul-bias", "fold_matmul_bias", "FoldMatmulBiasPass"),
    ("concat-matmul-sum", "concat_matmul_sum", "ConcatMatmulSumPass"),
    ("batch-shared-matmul", "batch_shared_matmul", "BatchSharedMatmulPass"),
    ("guard", "guard", "GuardPass"),
    ("print-canonical-keys", "canonical_key", "PrintCanonicalKeysPass"),
    ("outline-groups", "outline_groups", "OutlineGroupsPass"),
    ("lower-group-to-loops", "lower_group_to_loops", "LowerGroupToLoopsPass"),
    ("sincos-fast-path", "sincos_fast_path", "SinCosFastPathPass"),
    ("convert-arith-to-llvm", "convert_arith_to_llvm", "ConvertArithToLLVMPass"),
    ("convert-math-to-llvm", "convert_math_to_llvm", "ConvertMathToLLVMPass"),
    ("convert-memref-to-llvm", "convert_memref_to_llvm", "ConvertMemrefToLLVMPass"),
    ("convert-vector-to-llvm", "convert_vector_to_llvm", "ConvertVectorToLLVMPass"),
    ("convert-cf-to-llvm", "convert_cf_to_llvm", "ConvertCfToLLVMPass"),
    ("convert-func-to-llvm", "convert_func_to_llvm", "ConvertFuncToLLVMPass"),
)


def _loader(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(importlib.import_module(f"fusec.passes.{module}"), cls)

    return load


FUSEC_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    name: _loader(module, cls) for name, module, cls in _PASSES
}
