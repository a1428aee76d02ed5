"""The index cache never trusts an entry: a damaged column of any kind is found, the entry deleted and
the trace indexed and cached anew; an edit in place that keeps size and mtime is never served stale;
the folder stays under its cap (least recently used entries go first); `mlptui cache` shows and clears."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import find_sample

from mlptui.trace.parse import cache_folder, index_cache
from mlptui.trace.parse.load import load_trace


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    """A training sample (steps, memory events, several threads and streams) with a stream sync and two
    counter samples added as Kineto 2026 writes them (tests/kineto_2026.py), so every column has rows."""
    import gzip

    import kineto_2026

    src = find_sample("mlp", "train")
    doc = orjson.loads(gzip.decompress(src.read_bytes()))
    ts = min(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X")
    marks = [e for e in kineto_2026.events()["traceEvents"] if e.get("cat") in ("cuda_sync", "hardware_counters")]
    for k, e in enumerate(marks[:3]):
        doc["traceEvents"].append({**e, "ts": ts + 10.0 * k})
    dst = tmp_path / src.name
    dst.write_bytes(gzip.compress(orjson.dumps(doc)))
    return dst


def _entry(path: Path) -> dict[str, np.ndarray]:
    with np.load(index_cache.entry_path(path), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _rewrite(path: Path, cols: dict[str, np.ndarray]) -> None:
    with open(index_cache.entry_path(path), "wb") as f:
        np.savez(f, allow_pickle=False, **cols)


_OTHER = {np.dtype(np.int64): np.int32, np.dtype(np.float64): np.float32, np.dtype(np.bool_): np.uint8,
          np.dtype(np.uint8): np.int64}


_NAN_MEANS_UNKNOWN = {"gpu_grid_blocks", "gpu_blocks_per_sm", "gpu_occupancy_pct"}


def _damages(name: str, col: np.ndarray) -> dict[str, np.ndarray]:
    """Ways to damage one column that a reader must notice: another dtype, a row more, a bad value."""
    out = {"dtype": col.astype(_OTHER[col.dtype]),
           "length": np.concatenate([col, col[:1] if len(col) else np.zeros(1, col.dtype)])}
    # NaN is a launch column's "not known" (mlptui.trace.store), and a block's threads may be any count
    if len(col) and col.dtype == np.float64 and name not in _NAN_MEANS_UNKNOWN:
        bad = col.copy()
        bad[len(bad) // 2] = np.nan
        out["nan"] = bad
    if len(col) and col.dtype == np.int64 and not name.endswith(("_pid", "_tid", "_device", "_stream",
                                                                   "_external_id", "_correlation")):
        for label, value in (("negative", -7), ("huge", 1 << 40) if name != "gpu_threads" else ("huge", (1 << 63) - 1)):
            bad = col.copy()
            bad[len(bad) // 2] = value
            out[label] = bad
    return out


def test_every_column_damaged_is_discarded_and_rebuilt(cache_home: Path, trace_file: Path) -> None:
    first = load_trace(trace_file)
    good = _entry(trace_file)
    expected = (len(first.ops), len(first.gpu), len(first.steps), len(first.memory),
                [g.name for g in first.gpu], [o.parent for o in first.ops], first.marks)
    assert len(first.memory) and len(first.steps) > 1 and len(first.threads) > 1 and len(first.marks) == 3
    tried = 0
    for name in sorted(good):
        if name in ("key", "args"):
            continue
        for how, bad in _damages(name, good[name]).items():
            _rewrite(trace_file, {**good, name: bad})
            assert index_cache.lookup(trace_file, "x") is None, (name, how)
            assert not index_cache.entry_path(trace_file).exists(), (name, how)     # deleted, not kept
            tried += 1
            if how != "length":
                continue
            again = load_trace(trace_file)                                          # indexed anew
            assert (len(again.ops), len(again.gpu), len(again.steps), len(again.memory),
                    [g.name for g in again.gpu], [o.parent for o in again.ops], again.marks) == expected, (name, how)
            assert index_cache.lookup(trace_file, "x") is not None                  # and cached again
    assert tried > 3 * (len(good) - 2)


def test_an_unknown_or_missing_column_is_not_trusted(cache_home: Path, trace_file: Path) -> None:
    load_trace(trace_file)
    good = _entry(trace_file)
    _rewrite(trace_file, {**good, "op_extra": np.zeros(3)})
    assert index_cache.lookup(trace_file, "x") is None
    load_trace(trace_file)
    _rewrite(trace_file, {k: v for k, v in good.items() if k != "gpu_op"})
    assert index_cache.lookup(trace_file, "x") is None


def test_an_edit_in_place_keeping_size_and_mtime_is_never_served_stale(cache_home: Path, trace_file: Path) -> None:
    import gzip

    data = gzip.decompress(trace_file.read_bytes())
    plain = trace_file.with_suffix("")          # .pt.trace.json
    plain.write_bytes(data)
    first = load_trace(plain)
    assert index_cache.lookup(plain, "x") is not None
    kernel = next(g.name for g in first.gpu if g.cat == "kernel")
    st = os.stat(plain)
    time.sleep(0.02)                            # past the clock tick of the last write
    at = data.index(kernel.encode(), len(data) // 2)      # an edit in the middle of the file
    with open(plain, "r+b") as f:
        f.seek(at)
        f.write(b"Z" * 6)
    os.utime(plain, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = os.stat(plain)
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    assert index_cache.lookup(plain, "x") is None
    again = load_trace(plain)
    assert "ZZZZZZ" + kernel[6:] in {g.name for g in again.gpu}


def test_the_folder_stays_under_its_cap_least_recently_used_first(cache_home: Path, trace_file: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    copies = []
    for i in range(5):
        p = trace_file.with_name(f"copy{i}.pt.trace.json.gz")
        shutil.copyfile(trace_file, p)
        copies.append(p)
    load_trace(copies[0])
    one = index_cache.entry_path(copies[0]).stat().st_size
    monkeypatch.setenv("MLPTUI_CACHE_MAX_MB", "0")
    monkeypatch.setattr(cache_folder, "cap_bytes", lambda: int(2.5 * one))   # room for two entries
    folder = index_cache.cache_dir()
    os.utime(index_cache.entry_path(copies[0]), (1000, 1000))
    for i, p in enumerate(copies[1:4], start=1):
        load_trace(p)
        os.utime(index_cache.entry_path(p), (1000 + i, 1000 + i))        # distinct use times
        assert sum(g.bytes for g in cache_folder.usage(folder)) <= 2.5 * one
    assert {p.name[:5] for p in copies if index_cache.entry_path(p).exists()} == {"copy2", "copy3"}
    load_trace(copies[2])                                                 # a hit: copy2 is now the latest used
    load_trace(copies[4])                                                 # written: copy3 goes
    assert {p.name[:5] for p in copies if index_cache.entry_path(p).exists()} == {"copy2", "copy4"}


def test_a_relative_xdg_cache_home_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert index_cache.cache_dir() == tmp_path / "home" / ".cache" / "mlptui" / "index"


def test_the_cache_command_shows_and_clears(cache_home: Path, trace_file: Path) -> None:
    load_trace(trace_file)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    show = subprocess.run([sys.executable, "-m", "mlptui.cli", "cache"], capture_output=True, text=True, env=env,
                          timeout=30)
    folder = index_cache.cache_dir()
    size = sum(p.stat().st_size for p in folder.iterdir())
    assert show.returncode == 0 and str(folder) in show.stdout
    shown = f"{size / 1024:.1f} KiB" if size < 1 << 20 else f"{size / (1 << 20):.1f} MiB"
    assert f"1 trace(s), 1 file(s), {shown} of a 2.0 GiB cap" in show.stdout
    clear = subprocess.run([sys.executable, "-m", "mlptui.cli", "cache", "clear"], capture_output=True, text=True,
                           env=env, timeout=30)
    assert clear.returncode == 0 and "removed 1 file(s)" in clear.stdout
    assert not any(folder.iterdir())


def test_the_key_is_a_stat_of_the_whole_file(cache_home: Path, trace_file: Path) -> None:
    key = index_cache.file_key(trace_file)
    st = os.stat(trace_file)
    assert (key["size"], key["mtime_ns"], key["ctime_ns"], key["inode"], key["device"]) == (
        st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)
    assert orjson.loads(orjson.dumps(key)) == key
