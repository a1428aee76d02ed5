"""The kernels' launch columns come from the load's one decode of the file: neither the first open nor a
reopen from the index cache reads the file's args again for them, the warm report is the cold one to the
byte, and a damaged launch column in the cache entry is never trusted."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import find_sample

from mlptui.trace.analysis.kernels.kernel_figures import KernelFigures, kernel_figures
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.model import KERNEL, Trace
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.args_store import ArgsStore
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


def _registers_of_the_file(path: Path) -> list[int]:
    """Each kernel's `registers per thread`, read from the file with the stdlib parser, in time order."""
    doc = orjson.loads(gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes())
    kernels = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"),
                     key=lambda e: e["ts"])
    return [e["args"]["registers per thread"] for e in kernels]


def test_neither_open_reads_the_args_again(cache_home: Path, trace_file: Path) -> None:
    first, cold = _figures(trace_file)
    assert not _store(first).loaded                        # read in the load's decode, not from the file again
    second, warm = _figures(trace_file)
    assert index_cache.has_entry(trace_file)
    assert not _store(second).loaded                       # ... and kept in the index entry
    _same_figures(cold, warm)
    regs = second.columns.gpu_registers[second.columns.gpu_is((KERNEL,))]
    assert regs.tolist() == _registers_of_the_file(trace_file)


def test_the_warm_summary_is_the_cold_one_to_the_byte(cache_home: Path, trace_file: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cold = load_trace(trace_file)
    cold_json = orjson.dumps(summarize(cold))
    warm = load_trace(trace_file)
    warm_json = orjson.dumps(summarize(warm))
    assert not _store(cold).loaded and not _store(warm).loaded
    assert warm_json == cold_json
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    assert orjson.dumps(summarize(load_trace(trace_file))) == cold_json


@pytest.mark.parametrize("column", ["gpu_registers", "gpu_threads", "gpu_grid_blocks", "gpu_occupancy_pct"])
@pytest.mark.parametrize("how", ["short", "dtype"])
def test_a_damaged_launch_column_is_not_trusted(cache_home: Path, trace_file: Path, column: str, how: str) -> None:
    _, cold = _figures(trace_file)
    entry = index_cache.entry_path(trace_file)
    with np.load(entry, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    arrays[column] = arrays[column][:-1] if how == "short" else arrays[column].astype(np.float32)
    with open(entry, "wb") as f:
        np.savez(f, allow_pickle=False, **arrays)
    again, figures = _figures(trace_file)                 # indexed from the file anew
    _same_figures(cold, figures)
    last, warm = _figures(trace_file)                      # the entry was rewritten and holds
    _same_figures(cold, warm)


def test_a_file_changed_after_the_open_keeps_the_figures_it_was_loaded_with(cache_home: Path,
                                                                            trace_file: Path) -> None:
    trace = load_trace(trace_file)
    trace_file.write_bytes(trace_file.read_bytes() + b"\n")
    figures = kernel_figures(trace)
    assert not _store(trace).loaded                       # the changed file is not read
    assert np.isfinite(figures.theoretical).any()


def test_nothing_is_written_beside_the_trace(cache_home: Path, trace_file: Path) -> None:
    _figures(trace_file)
    _figures(trace_file)
    assert [p.name for p in trace_file.parent.iterdir()] == [trace_file.name]
    assert [p.name for p in index_cache.cache_dir().iterdir()] == [index_cache.entry_path(trace_file).name]
