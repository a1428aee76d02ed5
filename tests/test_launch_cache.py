"""The kernels' launch columns kept in the index cache: a reopened trace reads them from its companion
entry instead of re-reading the file's args, with the same report to the byte; a damaged, stale or
foreign companion is recomputed, and the cache's rules (off switch, small traces, unwritable folder,
nothing beside the trace) hold for it as for the index entry."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import find_sample

from mlptui.trace.analysis.kernel_figures import KernelFigures, kernel_figures
from mlptui.trace.analysis.summary import summarize
from mlptui.trace.analysis.tables import tables
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.args_store import ArgsStore
from mlptui.trace.parse.launch import event_launches
from mlptui.trace.parse.load import load_trace


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    src = find_sample("mlp", "eager")
    folder = tmp_path / "traces"
    folder.mkdir()
    dst = folder / src.name
    shutil.copyfile(src, dst)
    return dst


def _store(trace: Trace) -> ArgsStore:
    store = trace._args
    assert isinstance(store, ArgsStore)
    return store


def _figures(path: Path) -> tuple[Trace, KernelFigures]:
    trace = load_trace(path)
    return trace, kernel_figures(trace)


def _same_figures(a: KernelFigures, b: KernelFigures) -> None:
    for name in ("blocks_per_sm", "occupancy_pct", "theoretical"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert np.isfinite(a.blocks_per_sm).any() and np.isfinite(a.theoretical).any()


def test_a_reopened_trace_reads_its_launches_from_the_cache(cache_home: Path, trace_file: Path) -> None:
    first, cold = _figures(trace_file)
    assert _store(first).loaded                           # computed from the file's args ...
    companion = index_cache.companion_path(trace_file, "launch")
    assert companion.is_file() and companion.parent == index_cache.entry_path(trace_file).parent
    assert companion.name.endswith(".launch.npz")         # ... and kept beside the index entry
    second, warm = _figures(trace_file)
    assert "ops" not in second.__dict__                   # the index came from the cache too
    assert not _store(second).loaded                      # the file's args were never re-read
    _same_figures(cold, warm)


def test_the_warm_summary_is_the_cold_one_to_the_byte(cache_home: Path, trace_file: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cold = load_trace(trace_file)
    cold_json = orjson.dumps(summarize(cold))
    assert _store(cold).loaded
    warm = load_trace(trace_file)
    warm_json = orjson.dumps(summarize(warm))
    assert not _store(warm).loaded                        # the whole summary, not only the figures
    assert warm_json == cold_json
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    assert orjson.dumps(summarize(load_trace(trace_file))) == cold_json


def _damage(entry: Path, how: str) -> None:
    data = entry.read_bytes()
    if how == "garbage":
        entry.write_bytes(b"not a numpy archive")
    elif how == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif how == "flipped":
        mid = len(data) // 2
        entry.write_bytes(data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1:])
    elif how == "empty":
        entry.write_bytes(b"")
    else:                       # a readable archive of the right key, with a column of the wrong length
        with np.load(entry, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
        arrays[how] = arrays[how][:-1]
        with open(entry, "wb") as f:
            np.savez(f, allow_pickle=False, **arrays)


@pytest.mark.parametrize("how", ["garbage", "truncated", "flipped", "empty", "threads", "rows_events"])
def test_a_damaged_companion_is_ignored_and_rewritten(cache_home: Path, trace_file: Path, how: str) -> None:
    _, cold = _figures(trace_file)
    companion = index_cache.companion_path(trace_file, "launch")
    _damage(companion, how)
    again, figures = _figures(trace_file)
    assert _store(again).loaded                           # recomputed from the file
    _same_figures(cold, figures)
    last, warm = _figures(trace_file)
    assert not _store(last).loaded                        # rewritten, and read back next time
    _same_figures(cold, warm)


def test_a_companion_for_other_rows_is_a_miss(cache_home: Path, trace_file: Path) -> None:
    _figures(trace_file)
    trace = load_trace(trace_file)
    t = tables(trace)
    events, kernel = t.gpu_event.tolist(), t.gpu_is((KERNEL,)).tolist()
    k = kernel.index(True)
    # the same events with one not taken for a kernel: its launch must be unknown, not the cached one
    cols = event_launches(trace, events, [*kernel[:k], False, *kernel[k + 1:]])
    assert _store(trace).loaded
    assert cols.threads[k] == -1 and np.isnan(cols.grid_blocks[k])
    assert (cols.threads[[i for i, is_kernel in enumerate(kernel) if is_kernel and i != k]] >= 0).all()


def test_a_companion_of_other_launch_code_is_a_miss(cache_home: Path, trace_file: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _, cold = _figures(trace_file)
    monkeypatch.setitem(index_cache._COMPANION_CODE, "launch", "another launch decoder")
    trace, figures = _figures(trace_file)
    assert "ops" not in trace.__dict__                    # the index entry still holds
    assert _store(trace).loaded
    _same_figures(cold, figures)


def test_a_changed_file_replaces_its_companion(cache_home: Path, trace_file: Path) -> None:
    _, cold = _figures(trace_file)
    data = gzip.decompress(trace_file.read_bytes()) if trace_file.name.endswith(".gz") else trace_file.read_bytes()
    assert b'"registers per thread": ' in data
    trace_file.write_bytes(data.replace(b'"registers per thread": ', b'"registers per thread": 1'))
    changed, figures = _figures(trace_file)
    assert _store(changed).loaded                         # the old companion is not this file's
    assert not np.array_equal(cold.theoretical, figures.theoretical, equal_nan=True)
    again, warm = _figures(trace_file)
    assert not _store(again).loaded                       # the new content's columns were kept
    _same_figures(figures, warm)


def test_a_file_changed_after_the_open_is_not_cached(cache_home: Path, trace_file: Path) -> None:
    trace = load_trace(trace_file)                        # writes the index entry only
    companion = index_cache.companion_path(trace_file, "launch")
    assert not companion.exists()
    trace_file.write_bytes(trace_file.read_bytes() + b"\n")
    figures = kernel_figures(trace)
    assert _store(trace).problem is not None              # the args are not re-read from another file
    assert not np.isfinite(figures.theoretical).any()
    assert not companion.exists()


def test_no_cache_env_var_neither_reads_nor_writes_the_companion(cache_home: Path, trace_file: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    _figures(trace_file)
    assert not index_cache.companion_path(trace_file, "launch").exists()
    assert not (cache_home / "mlptui").exists()
    monkeypatch.delenv("MLPTUI_NO_CACHE")
    _, cold = _figures(trace_file)
    assert index_cache.companion_path(trace_file, "launch").is_file()
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    off, figures = _figures(trace_file)
    assert _store(off).loaded                             # not read either
    _same_figures(cold, figures)


def test_nothing_is_written_beside_the_trace(cache_home: Path, trace_file: Path) -> None:
    _figures(trace_file)
    _figures(trace_file)
    assert [p.name for p in trace_file.parent.iterdir()] == [trace_file.name]
    assert index_cache.companion_path(trace_file, "launch").is_file()


def test_small_traces_and_an_unwritable_folder_get_no_companion(tmp_path: Path, trace_file: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLPTUI_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert trace_file.stat().st_size < index_cache.MIN_BYTES
    _, small = _figures(trace_file)
    assert not index_cache.companion_path(trace_file, "launch").exists()
    assert not (tmp_path / "xdg").exists()
    blocker = tmp_path / "a-file-not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)
    trace, figures = _figures(trace_file)
    assert _store(trace).loaded
    _same_figures(small, figures)
    assert blocker.read_text() == ""
