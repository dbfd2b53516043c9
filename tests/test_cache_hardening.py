"""The kernel cache cannot be poisoned or go stale (issue 15, points 1-5): entries
are data checked against their key, the directory is private, reads refuse what
is not a regular file, the fingerprint covers every source that shapes code, a
stuck lock times out, and an unusable directory only turns the disk cache off."""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import fusec
import pytest
import torch
from fusec.dialects.fusion import GroupOp
from fusec.runtime import cache as cache_mod
from fusec.runtime.cache import KernelCache
from fusec.runtime.entries import CorruptEntry, read_bytes_safely, remove_stale_tmp

ROOT = Path(__file__).resolve().parent.parent


def add_tail(x, y):
    return torch.sigmoid(x + y)


def mul_tail(x, y):
    return torch.sigmoid(x * y)


def args() -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(4, 3), torch.randn(4, 3)


def entry_files(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "kernels").rglob("*.bin"))


def group_of(fn) -> GroupOp:
    f = fusec.compile(fn, use_kernels=False)
    f(*args())
    [group] = [op for op in f.last.imported.module.walk() if isinstance(op, GroupOp)]
    return group


def check(fn, x, y) -> fusec.api.compiled.CompiledFunction:
    f = fusec.compile(fn)
    torch.testing.assert_close(f(x, y), fn(x, y))
    assert f.launches_per_call == 1
    return f


# ---------------------------------------------------------------------- 1: data, not pickle


def test_a_pickled_entry_is_never_unpickled(cache_dir, tmp_path):
    x, y = args()
    check(add_tail, x, y)
    [entry] = entry_files(cache_dir)
    assert entry.read_bytes().startswith(b"FUSEC-E2\n")
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    payload = pickle.dumps(Exploit())
    # The old format: magic, sha256, length, pickle; a planted file in either shape.
    import hashlib

    old = b"FUSEC-K1" + hashlib.sha256(payload).digest() + len(payload).to_bytes(8, "little")
    for planted in (old + payload, payload):
        entry.write_bytes(planted)
        cache_mod.reset()
        check(add_tail, x, y)
        assert not marker.exists(), "a cache entry ran code"
        stats = fusec.cache_stats()
        assert (stats["corrupt_entries"], stats["kernels_compiled"]) == (1, 1)


def test_cache_directory_is_private(cache_dir):
    check(add_tail, *args())
    for d in (cache_dir, cache_dir / "kernels", entry_files(cache_dir)[0].parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    assert stat.S_IMODE(entry_files(cache_dir)[0].stat().st_mode) == 0o600


@pytest.mark.parametrize("problem", ["world-writable", "group-writable", "foreign"])
def test_an_unsafe_directory_is_not_used(cache_dir, caplog, problem):
    cache_dir.mkdir(mode=0o700)
    if problem == "foreign":
        if os.getuid() != 0:
            pytest.skip("chown to another user needs root")
        os.chown(cache_dir, 4242, 4242)
    else:
        os.chmod(cache_dir, 0o777 if problem == "world-writable" else 0o770)
    with caplog.at_level(logging.WARNING, logger="fusec"):
        check(add_tail, *args())
        check(mul_tail, *args())
    assert entry_files(cache_dir) == []
    warnings = [r for r in caplog.records if "not using the cache directory" in r.message]
    assert len(warnings) == 1
    assert fusec.cache_stats()["disk_writes"] == 0


def _planted(cache_dir: Path, kind: str) -> tuple[Path, Path]:
    """Compiles once, then replaces the entry by a `kind` file; (entry, saved copy)."""
    check(add_tail, *args())
    [entry] = entry_files(cache_dir)
    saved = cache_dir.parent / "saved.bin"
    shutil.copy(entry, saved)
    entry.unlink()
    if kind == "symlink":
        entry.symlink_to(saved)
    elif kind == "fifo":
        os.mkfifo(entry)
    elif kind == "directory":
        entry.mkdir()
    cache_mod.reset()
    return entry, saved


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_entries_that_are_not_regular_files_are_refused(cache_dir, kind):
    entry, _ = _planted(cache_dir, kind)
    done: list[object] = []
    x, y = args()
    worker = threading.Thread(target=lambda: done.append(check(add_tail, x, y)), daemon=True)
    worker.start()
    worker.join(60)
    if worker.is_alive() and kind == "fifo":
        with open(entry, "wb"):  # release the blocked reader before failing
            pass
    assert done, f"reading a {kind} entry blocked"
    stats = fusec.cache_stats()
    assert (stats["disk_hits"], stats["corrupt_entries"], stats["kernels_compiled"]) == (0, 1, 1)


def test_safe_read_refuses_oversized_files_without_reading(tmp_path):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(1 << 30)  # sparse: nothing is written or read
    with pytest.raises(CorruptEntry, match="more than"):
        read_bytes_safely(big, max_bytes=1 << 20)
    if os.getuid() == 0:
        dev = tmp_path / "zero"
        os.mknod(dev, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero never ends
        with pytest.raises(CorruptEntry, match="not a regular file"):
            read_bytes_safely(dev)
    assert read_bytes_safely(tmp_path / "missing") is None


# ---------------------------------------------------------------------- 2: fingerprint


def test_fingerprint_covers_every_source_that_shapes_code():
    files = {p.resolve() for p in cache_mod.fingerprint_sources()}
    expected = [
        *(ROOT / "dialects").rglob("*.py"),
        *(ROOT / "passes").rglob("*.py"),
        *(ROOT / "compiler" / n for n in ("codegen/kernel.py", "backends/llvm_jit.py", "backends/ptx.py")),
        *(ROOT / "runtime" / n for n in ("operands.py", "cpu.py", "cuda.py")),
    ]
    missing = [str(p) for p in expected if p.resolve() not in files]
    assert not missing
    versions = " ".join(cache_mod.fingerprint_versions())
    for name in ("fusec", "xdsl", "llvmlite"):
        assert name + " " in versions


def test_fingerprint_changes_with_a_lowering_edit_or_an_upgrade(tmp_path):
    sources = cache_mod.fingerprint_sources()
    versions = cache_mod.fingerprint_versions()
    base = cache_mod.fingerprint_of(sources, versions)
    assert cache_mod.source_fingerprint() == base
    lowering = next(p for p in sources if p.name == "lower_group_to_loops.py")
    edited = tmp_path / lowering.name
    edited.write_bytes(lowering.read_bytes() + b"\n# a changed lowering\n")
    changed = [edited if p == lowering else p for p in sources]
    assert cache_mod.fingerprint_of(changed, versions) != base
    upgraded = [v.replace("xdsl ", "xdsl 999.") for v in versions]
    assert cache_mod.fingerprint_of(sources, upgraded) != base


def test_an_entry_of_another_fingerprint_is_rebuilt(cache_dir):
    group = group_of(add_tail)
    old = KernelCache(directory=cache_dir, fingerprint="old-fusec")
    assert old.kernel_for(group) is not None
    [entry] = entry_files(cache_dir)
    new = KernelCache(directory=cache_dir, fingerprint="new-fusec")
    # Same file name (as if the key ignored the fingerprint): the header still says.
    new_path = new.path(new.key(group))
    new_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(entry, new_path)
    assert new.kernel_for(group) is not None
    assert (new.stats.disk_hits, new.stats.corrupt_entries, new.stats.kernels_compiled) == (0, 1, 1)


# ---------------------------------------------------------------------- 3: entry tied to its key


def test_swapped_entries_are_rebuilt_not_run(cache_dir):
    x, y = args()
    check(add_tail, x, y)
    [add_entry] = entry_files(cache_dir)
    check(mul_tail, x, y)
    [mul_entry] = [e for e in entry_files(cache_dir) if e != add_entry]
    add_bytes, mul_bytes = add_entry.read_bytes(), mul_entry.read_bytes()
    add_entry.write_bytes(mul_bytes)
    mul_entry.write_bytes(add_bytes)
    cache_mod.reset()
    check(add_tail, x, y)
    check(mul_tail, x, y)
    stats = fusec.cache_stats()
    assert (stats["disk_hits"], stats["corrupt_entries"], stats["kernels_compiled"]) == (0, 2, 2)


def test_an_entry_naming_a_missing_kernel_is_rebuilt(cache_dir):
    from fusec.runtime.entries import decode_entry, write_entry

    x, y = args()
    check(add_tail, x, y)
    [entry] = entry_files(cache_dir)
    header, payload = decode_entry(entry.read_bytes())
    header = {k: v for k, v in header.items() if not k.startswith("payload_")}
    write_entry(entry, {**header, "name": "fusec_0000000000000000"}, payload)
    cache_mod.reset()
    check(add_tail, x, y)
    assert fusec.cache_stats()["corrupt_entries"] == 1


# ---------------------------------------------------------------------- 4: lock timeout, stale tmp

_HOLD_LOCK = textwrap.dedent(
    """
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


def test_a_stuck_lock_holder_times_out_and_fusion_goes_on(cache_dir, caplog, monkeypatch):
    monkeypatch.setenv("FUSEC_CACHE_LOCK_TIMEOUT", "1")
    cache_mod.reset()
    group = group_of(add_tail)
    cache = cache_mod.default_cache()
    assert cache.lock_timeout == 1.0
    path = cache._disk_path(cache.key(group))
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, str(path) + ".lock", "120"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        start = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="fusec"):
            check(add_tail, *args())
        assert time.monotonic() - start < 60
    finally:
        holder.kill()
        holder.wait()
    assert any("held the cache lock" in r.message for r in caplog.records)
    stats = fusec.cache_stats()
    assert (stats["lock_timeouts"], stats["kernels_compiled"], stats["disk_writes"]) == (1, 1, 0)


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_temporary_files_of_killed_writers_are_removed(cache_dir):
    group = group_of(add_tail)
    cache = cache_mod.default_cache()
    path = cache._disk_path(cache.key(group))
    path.parent.mkdir(parents=True, exist_ok=True)
    dead = path.parent / f"{path.name}.{_dead_pid()}.x1y2z3.tmp"
    dead.write_bytes(b"half an entry")
    mine = path.parent / f"{path.name}.{os.getpid()}.a1b2c3.tmp"
    mine.write_bytes(b"being written")
    check(add_tail, *args())
    assert not dead.exists() and mine.exists()
    assert fusec.cache_stats()["stale_tmp_removed"] == 1
    mine.unlink()


def test_remove_stale_tmp_keeps_live_writers(tmp_path):
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        keep = tmp_path / f"k.bin.{live.pid}.aaaaaa.tmp"
        drop = tmp_path / f"k.bin.{_dead_pid()}.bbbbbb.tmp"
        other = tmp_path / "k.bin"
        for p in (keep, drop, other):
            p.write_bytes(b"x")
        assert remove_stale_tmp(tmp_path, "k.bin.") == 1
        assert keep.exists() and not drop.exists() and other.exists()
    finally:
        live.kill()
        live.wait()


# ---------------------------------------------------------------------- 5: unusable directory


@pytest.mark.parametrize("kind", ["file", "unwritable-parent"])
def test_an_unusable_directory_keeps_fusion_on(cache_dir, monkeypatch, tmp_path, kind, caplog):
    if kind == "file":
        target = tmp_path / "a-file"
        target.write_text("not a directory")
    else:
        target = tmp_path / "a-file-parent"
        target.write_text("x")
        target = target / "cache"  # its parent is a file: cannot be created
    monkeypatch.setenv("FUSEC_CACHE_DIR", str(target))
    cache_mod.reset()
    with caplog.at_level(logging.WARNING, logger="fusec"):
        f = check(add_tail, *args())
    assert f.launches_per_call == 1
    stats = fusec.cache_stats()
    assert (stats["kernels_compiled"], stats["build_failures"], stats["disk_writes"]) == (1, 0, 0)
    assert any("memory only" in r.message for r in caplog.records)


def test_an_entry_serves_other_sizes_of_its_key(cache_dir):
    check(add_tail, torch.randn(4, 3), torch.randn(4, 3))
    cache_mod.reset()
    check(add_tail, torch.randn(7, 5), torch.randn(7, 5))
    stats = fusec.cache_stats()
    assert (stats["disk_hits"], stats["corrupt_entries"], stats["kernels_compiled"]) == (1, 0, 0)


def test_a_ptx_entry_round_trips_as_data(cache_dir):
    from toolchains import cuda_toolchain_or_skip

    cuda_toolchain_or_skip()
    group = group_of(add_tail)
    first = KernelCache(directory=cache_dir)
    built = first.kernel_for(group, "sm_80")
    assert built is not None and first.stats.disk_writes == 1
    [entry] = entry_files(cache_dir)
    assert b".entry " + built.artifact.name.encode() in entry.read_bytes()
    second = KernelCache(directory=cache_dir)
    loaded = second.kernel_for(group, "sm_80")
    assert (second.stats.disk_hits, second.stats.kernels_compiled) == (1, 0)
    assert loaded.artifact == built.artifact
    # An sm_80 entry is not a CPU kernel, even under the CPU key's file name.
    cpu_path = second.path(second.key(group, "cpu"))
    cpu_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(entry, cpu_path)
    assert second.kernel_for(group, "cpu") is not None
    assert (second.stats.corrupt_entries, second.stats.kernels_compiled) == (1, 1)


# ---------------------------------------------------------------------- 6: content bound to key

_RUN_TAIL = textwrap.dedent(
    """
    import sys, torch, fusec
    sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
    from reference_models import lstm_tail
    from cache_cases import check_outputs, tail_args
    args = tail_args()
    f = fusec.compile(lstm_tail)
    check_outputs(f(*args), lstm_tail(*args))
    print("ok", f.launches_per_call, fusec.cache_stats()["kernels_compiled"])
    """
)


def run_tail(cache_dir: Path) -> subprocess.CompletedProcess[str]:
    """The LSTM tail in a fresh process on `cache_dir` (a crash there cannot kill
    pytest), with `FUSEC_LOGS=cache`."""
    env = {**os.environ, "FUSEC_CACHE_DIR": str(cache_dir), "FUSEC_LOGS": "cache"}
    return subprocess.run(
        [sys.executable, "-c", _RUN_TAIL, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_an_edited_host_entry_with_a_valid_header_is_refused(cache_dir):
    """An entry whose program returns an input slot (a wrong value) and whose
    header is well formed but not made by this cache (no MAC): a miss."""
    from reference_models import lstm_tail

    from tests.cache_cases import check_outputs, entry_files, rewrite_entry, tail_args

    args = tail_args()
    fusec.compile(lstm_tail)(*args)
    (entry,) = entry_files(cache_dir, "host")

    def return_an_input(header, payload):
        d = json.loads(payload)
        d["program"]["outs"] = [d["program"]["args"][0]] * len(d["program"]["outs"])
        return header, json.dumps(d).encode()

    rewrite_entry(entry, return_an_input, mac=False)
    cache_mod.reset()
    g = fusec.compile(lstm_tail)
    check_outputs(g(*args), lstm_tail(*args))
    assert g.launches_per_call == 1


def _edit_signature(change):
    def edit(header, payload):
        header["signature"] = change(header["signature"])
        return header, payload

    return edit


def _rank_plus_two(sig):
    sig["rank"] += 2
    for out in sig["outputs"]:
        out["static_shape"] = [1, 1, *out["static_shape"]]
    return sig


def _fewer_operands(sig):
    sig["operands"] = sig["operands"][:-1]
    return sig


@pytest.mark.parametrize("change", [_rank_plus_two, _fewer_operands])
def test_a_kernel_entry_with_an_edited_signature_is_rebuilt_not_run(cache_dir, change):
    """Even MAC'd (as only this user could), a signature that does not describe
    the kernel's parameters is a miss: the warm start loads kernels by key."""
    from tests.cache_cases import entry_files, rewrite_entry

    first = run_tail(cache_dir)
    assert first.returncode == 0 and "ok 1" in first.stdout, first.stderr
    for entry in entry_files(cache_dir, "kernel"):
        rewrite_entry(entry, _edit_signature(change), mac=True)
    second = run_tail(cache_dir)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "ok 1 1" in second.stdout, second.stdout + second.stderr[-3000:]
    assert "refused kernel entry" in second.stderr or "parameters" in second.stderr


@pytest.mark.parametrize("payload", [b"not an object file", b"\x7fELF\x02\x01\x01" + b"\xff" * 200])
def test_an_object_entry_that_is_not_an_object_never_reaches_llvm(cache_dir, payload):
    from tests.cache_cases import entry_files, rewrite_entry

    first = run_tail(cache_dir)
    assert first.returncode == 0 and "ok 1" in first.stdout, first.stderr
    objects = entry_files(cache_dir, "object")
    assert objects
    for entry in objects:
        rewrite_entry(entry, lambda h, _: (h, payload), mac=True)
    for k in entry_files(cache_dir, "kernel") + entry_files(cache_dir, "host"):
        k.unlink()  # the kernel is built again, its object looked up
    second = run_tail(cache_dir)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "ok 1" in second.stdout
    assert "refused object entry" in second.stderr
