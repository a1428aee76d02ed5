"""The index cache: a second open reads the same Trace from the user's cache folder; a changed file, a
damaged entry or an unwritable folder never gives a wrong or failed load."""

from __future__ import annotations

import mmap
import os
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import find_sample

from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.model import Trace
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.load import load_trace


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    src = find_sample("mlp", "eager")
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


def _same(a: Trace, b: Trace) -> None:
    assert b.ops == a.ops and len(b.ops) > 0
    assert b.gpu == a.gpu and len(b.gpu) > 0
    assert (b.steps, b.threads, b.streams) == (a.steps, a.threads, a.streams)
    assert (b.device, b.devices, b.meta, b.warnings, b.origin_us) == (a.device, a.devices, a.meta, a.warnings,
                                                                      a.origin_us)
    assert b.manifest == a.manifest
    assert orjson.dumps(summarize(b)) == orjson.dumps(summarize(a))
    for k in (0, len(a.gpu) // 2, len(a.gpu) - 1):
        assert b.gpu_args(k) == a.gpu_args(k) != {}


def test_second_open_reads_the_cache_and_gives_the_same_trace(cache_home: Path, trace_file: Path) -> None:
    first = load_trace(trace_file)
    entry = index_cache.entry_path(trace_file)
    assert entry.is_file() and entry.parent == cache_home / "mlptui" / "index"
    assert not any(p.name != trace_file.name for p in trace_file.parent.iterdir() if p.is_file())
    assert index_cache.lookup(trace_file, "x") is not None
    second = load_trace(trace_file)
    assert not second.objects_made          # read from the cache: ops are made on first use
    _same(first, second)


def test_a_big_entry_is_mapped_from_disk_not_read(cache_home: Path, trace_file: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry larger than the memory allows (here: any) is opened as a map of the file: the columns are
    views of it, read-only, and the trace is the one the first open gave."""
    first = load_trace(trace_file)
    monkeypatch.setattr(index_cache, "map_above", lambda: 0)
    mapped = load_trace(trace_file)
    for col in (mapped.columns.op_ts, mapped.columns.gpu_dur, mapped.columns.op_parent):
        assert not col.flags.owndata and not col.flags.writeable
        assert isinstance(getattr(col.base, "obj", col.base), mmap.mmap)
    _same(first, mapped)
    entry = index_cache.entry_path(trace_file)
    with np.load(entry, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    arrays["op_parent"] = arrays["op_parent"] + len(arrays["op_parent"])      # points outside the ops
    with open(entry, "wb") as f:
        np.savez(f, allow_pickle=False, **arrays)
    _same(first, load_trace(trace_file))                                      # damaged: indexed anew


def test_a_changed_file_is_indexed_again(cache_home: Path, trace_file: Path) -> None:
    first = load_trace(trace_file)
    kernel = next(g.name for g in first.gpu if g.cat == "kernel")
    data = trace_file.read_bytes()
    if data[:2] == b"\x1f\x8b":
        import gzip
        data = gzip.decompress(data)
    trace_file.write_bytes(data.replace(kernel.encode(), b"renamed_kernel_for_the_test"))
    assert index_cache.lookup(trace_file, "x") is None
    again = load_trace(trace_file)
    assert "renamed_kernel_for_the_test" in {g.name for g in again.gpu}
    assert kernel not in {g.name for g in again.gpu}
    assert not load_trace(trace_file).objects_made     # and the new content is cached in turn


def test_a_new_cache_format_or_indexer_invalidates(cache_home: Path, trace_file: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    load_trace(trace_file)
    assert index_cache.lookup(trace_file, "x") is not None
    monkeypatch.setattr(index_cache, "FORMAT", index_cache.FORMAT + 1)
    assert index_cache.lookup(trace_file, "x") is None
    monkeypatch.setattr(index_cache, "FORMAT", index_cache.FORMAT - 1)
    monkeypatch.setattr(index_cache, "_CODE", "another indexer")
    assert index_cache.lookup(trace_file, "x") is None


def _last_value_byte(entry: Path) -> int:
    """The offset of the last byte of the largest column's values in the entry (a stored .npz member)."""
    import zipfile

    with zipfile.ZipFile(entry) as zf:
        info = max(zf.infolist(), key=lambda i: i.file_size)
    with entry.open("rb") as f:
        f.seek(info.header_offset + 26)
        name_len, extra_len = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
    return info.header_offset + 30 + name_len + extra_len + info.file_size - 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped"])
def test_a_damaged_entry_is_ignored_and_rewritten(cache_home: Path, trace_file: Path, damage: str) -> None:
    first = load_trace(trace_file)
    entry = index_cache.entry_path(trace_file)
    data = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(b"not a numpy archive")
    elif damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    else:   # one byte of a column's values (not of a zip header field no reader checks)
        at = _last_value_byte(entry)
        entry.write_bytes(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])
    assert index_cache.lookup(trace_file, "x") is None
    again = load_trace(trace_file)
    _same(first, again)
    assert index_cache.lookup(trace_file, "x") is not None        # rewritten


def test_an_unwritable_cache_folder_still_loads(tmp_path: Path, trace_file: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file-not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)
    trace = load_trace(trace_file)
    assert len(trace.gpu) > 0
    assert not index_cache.remember(trace_file, trace)
    if os.geteuid() != 0:          # root writes anywhere; a read-only folder only stops other users
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        monkeypatch.setenv("XDG_CACHE_HOME", str(ro))
        assert len(load_trace(trace_file).gpu) == len(trace.gpu)
        assert not index_cache.remember(trace_file, trace)


def test_no_cache_env_var_turns_it_off(cache_home: Path, trace_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    load_trace(trace_file)
    assert not index_cache.entry_path(trace_file).exists()
    assert not (cache_home / "mlptui" / "index").exists()


def test_small_traces_are_not_cached(tmp_path: Path, trace_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    load_trace(trace_file)
    assert trace_file.stat().st_size < index_cache.MIN_BYTES
    assert not index_cache.entry_path(trace_file).exists()
