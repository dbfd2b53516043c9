"""Every directory the caches use is private (issue 31, item 11): created 0700
whatever the umask, refused with a warning naming it (then memory only) when
group or others can write it or another user owns it; entry files of another
user or writable by others are misses."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import fusec
import pytest
from fusec.runtime import cache as cache_mod
from fusec.runtime import cache_dirs
from reference_models import lstm_tail

from tests.cache_cases import check_outputs, entry_files, tail_args

KINDS = ("kernel", "program", "object", "host")


def run_tail() -> fusec.api.compiled.CompiledFunction:
    args = tail_args()
    f = fusec.compile(lstm_tail)
    check_outputs(f(*args), lstm_tail(*args))
    assert f.launches_per_call == 1
    return f


def test_every_directory_is_0700_and_every_file_0600_under_umask_000(tmp_path, monkeypatch):
    root = tmp_path / "deep" / "er" / "cache"
    monkeypatch.setenv("FUSEC_CACHE_DIR", str(root))
    cache_mod.reset()
    old = os.umask(0)
    try:
        run_tail()
    finally:
        os.umask(old)
    for kind in ("kernel", "program", "host"):
        assert entry_files(root, kind), kind
    for d in (tmp_path / "deep", tmp_path / "deep" / "er", root, *root.rglob("*")):
        mode = stat.S_IMODE(d.stat().st_mode)
        if d.is_dir():
            assert mode == 0o700, (d, oct(mode))
        else:
            assert mode == 0o600, (d, oct(mode))


@pytest.mark.parametrize("kind", ["program", "host", "kernel"])  # objects: as programs
@pytest.mark.parametrize("mode", [0o777, 0o757, 0o770])
def test_a_kind_directory_others_can_write_is_refused(cache_dir, caplog, kind, mode):
    cache_dir.mkdir(mode=0o700)
    unsafe = cache_dir / f"{kind}s"
    unsafe.mkdir()
    os.chmod(unsafe, mode)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        run_tail()
        cache_mod.reset()
        run_tail()
    assert list(unsafe.rglob("*")) == []
    named = [r for r in caplog.records if str(unsafe) in r.getMessage()]
    assert named, [r.getMessage() for r in caplog.records]
    assert "memory only" in named[0].getMessage()
    # (Objects are written only when this process JITs new code.)
    others = [k for k in KINDS if k not in (kind, "object")]
    assert all(entry_files(cache_dir, k) for k in others)


def test_a_directory_of_another_user_is_refused(cache_dir, caplog, monkeypatch):
    """Ownership, as the tests run as root: this process claims another uid."""
    cache_dir.mkdir(mode=0o700)
    (cache_dir / "hosts").mkdir(mode=0o700)
    real = os.getuid()
    monkeypatch.setattr(os, "getuid", lambda: real + 4242)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        run_tail()
    assert any(
        str(cache_dir) in r.getMessage() and "owned by uid" in r.getMessage()
        for r in caplog.records
    )
    assert list((cache_dir / "hosts").rglob("*")) == []


def test_a_shard_directory_others_can_write_is_not_written(cache_dir):
    run_tail()
    (entry,) = entry_files(cache_dir, "host")
    entry.unlink()
    os.chmod(entry.parent, 0o777)
    cache_mod.reset()
    run_tail()
    assert not entry.exists()


@pytest.mark.parametrize("kind", ["kernel", "program", "host"])  # objects: as hosts
def test_an_entry_file_others_can_write_is_a_miss(cache_dir, kind, caplog):
    run_tail()
    entries = entry_files(cache_dir, kind)
    assert entries
    for e in entries:
        os.chmod(e, 0o666)
    if kind == "program":  # read only when there is no host entry
        for e in entry_files(cache_dir, "host"):
            e.unlink()
    cache_mod.reset()
    with caplog.at_level(logging.INFO, logger="fusec.cache"):
        run_tail()
    assert any("not private" in r.getMessage() for r in caplog.records)


def test_the_secret_is_private(cache_dir):
    run_tail()
    secret = cache_dir / cache_dirs.SECRET_NAME
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert len(secret.read_bytes()) == cache_dirs.SECRET_BYTES
    os.chmod(secret, 0o644)
    cache_mod.reset()
    with pytest.raises(PermissionError, match="readable by group or others"):
        cache_dirs.secret(cache_dir)


def test_make_private_dirs_under_umask_000(tmp_path: Path):
    old = os.umask(0)
    try:
        cache_dirs.make_private_dirs(tmp_path / "a" / "b" / "c")
    finally:
        os.umask(old)
    for d in ("a", "a/b", "a/b/c"):
        assert stat.S_IMODE((tmp_path / d).stat().st_mode) == 0o700


@pytest.mark.skipif(os.getuid() != 0, reason="chown to another user needs root")
def test_a_kind_directory_of_another_user_is_refused(cache_dir, caplog):
    cache_dir.mkdir(mode=0o700)
    foreign = cache_dir / "hosts"
    foreign.mkdir(mode=0o700)
    os.chown(foreign, 4242, 4242)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        run_tail()
    assert any(
        str(foreign) in r.getMessage() and "owned by uid 4242" in r.getMessage()
        for r in caplog.records
    )
    assert list(foreign.rglob("*")) == []


def test_a_damaged_secret_is_made_again(cache_dir):
    cache_dir.mkdir(mode=0o700)
    damaged = cache_dir / cache_dirs.SECRET_NAME
    damaged.write_bytes(b"short")
    os.chmod(damaged, 0o600)
    made = cache_dirs.secret(cache_dir)
    assert len(made) == cache_dirs.SECRET_BYTES and damaged.read_bytes() == made


def test_a_planted_fifo_secret_is_refused_without_blocking(cache_dir):
    cache_dir.mkdir(mode=0o700)
    os.mkfifo(cache_dir / cache_dirs.SECRET_NAME, 0o600)
    with pytest.raises(PermissionError, match="not a regular file"):
        cache_dirs.secret(cache_dir)
    run_tail()  # memory only, fusion on
