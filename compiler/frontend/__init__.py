"""fusec's frontend: tracing a function to a torch.fx graph and importing fx
graphs (torch-level and ATen-level) into the `aten` dialect, with the tables
and handlers per op, the graph's values and the user's source lines.

May import the dialects, passes, codegen, backends and runtime; never the API,
tools or observability layers.
"""
