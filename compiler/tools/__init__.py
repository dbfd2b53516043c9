"""fusec's command-line tools: `fusec-opt` (xdsl-opt with fusec's dialects and
passes), its help text, the `--emit` targets, diagnostics and
`--view-fusion-graph`.

The top layer: may import every other layer; nothing imports it.
"""
