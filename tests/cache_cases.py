"""The program-cache and warm-start tests' case: inputs of the LSTM cell's
pointwise tail (`reference_models.lstm_tail`) and comparing its outputs with
eager's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch


class CompileCounts:
    """Counts imports (fx graph -> IR) and pipeline runs: a warm start makes none."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        import fusec.frontend.importer
        from fusec.api import specializing

        self.imports = self.pipelines = 0
        real_import, real_pipeline = fusec.frontend.importer.import_fx, specializing.run_pipeline

        def import_fx(*a: Any, **k: Any) -> Any:
            self.imports += 1
            return real_import(*a, **k)

        def run_pipeline(*a: Any, **k: Any) -> Any:
            self.pipelines += 1
            return real_pipeline(*a, **k)

        monkeypatch.setattr(fusec.frontend.importer, "import_fx", import_fx)
        monkeypatch.setattr(specializing, "run_pipeline", run_pipeline)


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
