"""fusec's observability: `fusec.explain`'s reports, `FUSEC_LOGS` channels, the
HTML fusion graph and its layout, Model Explorer export and step profiling.

May import the frontend and every lower layer (codegen, passes, dialects,
runtime, backends); imported by the API and tools layers, never below them.
"""
