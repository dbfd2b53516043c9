"""fusec's code generation: a fusion group to a kernel artifact (`kernel`),
canonical IR and its text, the named pass pipelines, and the PyTorch ops the
host program runs for what does not fuse.

May import the dialects, passes, backends and runtime; never the frontend,
API, tools or observability layers.
"""
