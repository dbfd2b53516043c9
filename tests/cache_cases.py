"""The program-cache and warm-start tests' case: inputs of the LSTM cell's
pointwise tail (`reference_models.lstm_tail`) and comparing its outputs with
eager's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch


def tail_args() -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(4, 32, generator=gen), torch.randn(4, 8, generator=gen)]


def check_outputs(got: Sequence[torch.Tensor], want: Sequence[torch.Tensor]) -> None:
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w)


def entry_files(cache_dir: Path, kind: str) -> list[Path]:
    """The entries of one kind ("kernel", "program", "object", "host")."""
    return sorted((cache_dir / f"{kind}s").rglob("*.bin"))


def rewrite_entry(
    entry: Path,
    change: Callable[[dict[str, Any], bytes], tuple[dict[str, Any], bytes]],
    mac: bool,
) -> None:
    """Rewrites a cache entry with a well-formed header (payload size and sha256
    recomputed): `change(header, payload)` gives the new ones. With `mac`, the
    header is MAC'd with the cache's own secret, as only this user could (the
    payload checks must catch it); without, as anyone else would forge it."""
    from fusec.runtime import cache_dirs, entries

    header, payload = entries.decode_entry(entry.read_bytes())
    header = {
        k: v for k, v in header.items() if k not in ("mac", "payload_bytes", "payload_sha256")
    }
    header, payload = change(header, payload)
    secret = cache_dirs.secret(entry.parents[2]) if mac else None
    extra = () if secret is None else (secret,)
    entry.write_bytes(entries.encode_entry(header, payload, *extra))
