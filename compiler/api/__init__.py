"""fusec's API layer: `fusec.compile` and its `CompiledFunction` (options,
specializations, the fast call path), warm start, the torch.compile backend,
`torch.export` programs, training through AOTAutograd and its partitioner.

May import every lower layer (dialects, passes, codegen, backends, runtime),
the frontend and observability; only `fusec.tools` may import it.
"""
