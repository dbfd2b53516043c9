"""fusec's dialects: `aten` (imported PyTorch graphs) and `fusion` (fused groups)."""
