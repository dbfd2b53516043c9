"""The in-memory kernel table: kernels by cache key, held only while in use.

A loaded CPU kernel owns an MCJIT engine (its machine code, about 2 MiB of
native memory with its LLVM module), and a GPU kernel a loaded CUDA module. A
table of strong references kept every kernel any compiled function ever used
for the life of the process: 200 compiled functions made and dropped kept over
200 MiB. The programs that launch a kernel hold it; this table holds it
weakly, so it goes with the last program that uses it, while functions alive
at the same time still share one kernel (and count memory hits):

    table["k1"] = kernel            # a program holds `kernel` too
    table.get("k1") is kernel       # True while that program lives
    del program, kernel; gc.collect()
    table.get("k1") is None         # True: a later compile loads it from disk

Values that cannot be weakly referred to (a test's stand-in kernels: strings,
tuples) are held strongly, as before.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, MutableMapping
from typing import Any


class KernelTable(MutableMapping[str, Any]):
    """A dict of kernels whose values are weak references where they can be."""

    def __init__(self) -> None:
        self._weak: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
        self._strong: dict[str, Any] = {}

    def __getitem__(self, key: str) -> Any:
        value = self._weak.get(key)
        if value is not None:
            return value
        return self._strong[key]

    def __setitem__(self, key: str, value: Any) -> None:
        try:
            self._weak[key] = value
        except TypeError:  # not weakly referable
            self._weak.pop(key, None)
            self._strong[key] = value
        else:
            self._strong.pop(key, None)

    def __delitem__(self, key: str) -> None:
        found = self._strong.pop(key, None) is not None
        found = self._weak.pop(key, None) is not None or found
        if not found:
            raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        yield from list(self._weak.keys())
        yield from list(self._strong)

    def __len__(self) -> int:
        return len(self._weak) + len(self._strong)
