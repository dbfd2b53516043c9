"""fusec's code generation: a fusion group to a kernel artifact (`kernel`),
the host program of IR (`host_program`), canonical IR text, the named pass
pipelines, and the PyTorch ops the host program runs for what does not fuse.

May import the dialects, passes, backends and runtime; never the frontend,
API, tools or observability layers. Importing it installs its kernel builder
into the runtime's kernel cache (`kernel_builder`), which imports no compiler.
"""

from fusec.codegen import kernel_builder as _kernel_builder  # noqa: F401 - installs it
