"""fusec's observability: `fusec.explain` reports, `FUSEC_LOGS` channels, the
HTML fusion graph and its layout, Model Explorer export and step profiling.

May import the frontend, codegen, and every lower layer; imported by the API
and tools layers (and lazily, only to report, by nothing below them).
"""
