"""fusec's user-facing entry points: `fusec.compile` (`compiled`), its per-call
fast path (`fast_call`), and what they are built on."""
