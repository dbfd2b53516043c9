"""fusec: a fusion compiler for PyTorch graphs, built MLIR-style on xDSL."""

__version__ = "0.1.0"
