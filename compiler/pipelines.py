"""Named pass pipelines: what `fusec-opt --fuse` and `--emit=<stage>` stand for.

Each is a `-p` pipeline string, so `fusec-opt --fuse x.mlir` is exactly
`fusec-opt -p <FUSE_PIPELINE> x.mlir`.
"""

FUSE_PIPELINE = ""
"""The default fusion pipeline (the fusion passes fill it in)."""

EMIT_PIPELINES: dict[str, tuple[str, str]] = {}
"""`--emit` stage -> (passes to append after the user's pipeline, output target)."""
