"""Every part of a cache entry is checked before use, not only its columns: the small values (`small`),
the args facts and the rank digests. A crafted or damaged one is deleted and the trace read (and cached)
anew, never a crash; an entry is opened without following a link and only if a regular file (a named pipe
at its path does not hang the open); a mapped entry truncated or rewritten after it was opened cannot
crash the process."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from conftest import find_sample
from test_run_summary import tiny_rank

from mlptui.render.summary_text import render_text
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.load import load_trace
from mlptui.trace.runs import digest_cache
from mlptui.trace.runs.run_summary import summarize_run


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    src = find_sample("mlp", "train")
    dst = tmp_path / src.name
    shutil.copyfile(src, dst)
    return dst


def _entry(path: Path) -> dict[str, np.ndarray]:
    with np.load(index_cache.entry_path(path), allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _json(cols: dict[str, np.ndarray], name: str) -> Any:
    return orjson.loads(cols[name].tobytes())


def _put(path: Path, cols: dict[str, np.ndarray], name: str, value: Any) -> None:
    cols = {**cols, name: np.frombuffer(orjson.dumps(value), dtype=np.uint8)}
    with open(index_cache.entry_path(path), "wb") as f:
        np.savez(f, allow_pickle=False, **cols)


def _seen(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """What a user sees of the trace: its summary as text and the args of its first ops."""
    trace = load_trace(path)
    return render_text(summarize(trace)), [trace.op_args(i) for i in range(min(20, len(trace.ops)))]


def _small_variants(small: dict[str, Any]) -> dict[str, Any]:
    meta = small["meta"]
    return {
        "not an object": [1, 2],
        "a part missing": {k: v for k, v in small.items() if k != "format"},
        "a part more": {**small, "extra": 1},
        "meta not an object": {**small, "meta": "x"},
        "meta.path planted": {**small, "meta": {**meta, "path": "/etc/passwd"}},
        "meta.file_bytes another size": {**small, "meta": {**meta, "file_bytes": meta["file_bytes"] + 1}},
        "meta.events negative": {**small, "meta": {**meta, "events": -5}},
        "meta.process_names a list": {**small, "meta": {**meta, "process_names": [1]}},
        "device a number": {**small, "device": 5},
        "devices of numbers": {**small, "devices": [1, 2]},
        "device name a number": {**small, "device": {**(small["device"] or {}), "name": 7}},
        "warnings a text": {**small, "warnings": "w"},
        "warnings of numbers": {**small, "warnings": [1]},
        "origin_us a text": {**small, "origin_us": "0"},
        "format a number": {**small, "format": 7},
    }


def _facts_variants(facts: dict[str, Any]) -> dict[str, Any]:
    return {
        "not an object": "facts",
        "suffix missing": {k: v for k, v in facts.items() if k != "suffix"},
        "suffix a number": {**facts, "suffix": 5},
        "cut a text": {**facts, "cut": "10", "suffix": "]}"},
        "cut past the file": {**facts, "cut": 1 << 60, "suffix": "]}"},
        "events negative": {**facts, "events": -1},
        "events huge": {**facts, "events": 1 << 62},
        "events a float": {**facts, "events": 1e3},
        "repair_utf8 a text": {**facts, "repair_utf8": "yes"},
    }


@pytest.mark.parametrize("part", ["small", "args"])
def test_every_crafted_json_part_is_deleted_and_rebuilt(cache_home: Path, trace_file: Path, part: str) -> None:
    expected = _seen(trace_file)                       # read, indexed and cached
    good = _entry(trace_file)
    variants = (_small_variants if part == "small" else _facts_variants)(_json(good, part))
    assert len(variants) >= 9
    for how, value in variants.items():
        _put(trace_file, good, part, value)
        assert index_cache.lookup(trace_file, "x") is None, how
        assert not index_cache.entry_path(trace_file).exists(), how          # deleted, not kept
        assert _seen(trace_file) == expected, how                             # read anew, not crashed
        assert index_cache.lookup(trace_file, "x") is not None, how           # and cached again


def test_an_entry_that_is_a_link_is_not_followed(cache_home: Path, trace_file: Path, tmp_path: Path) -> None:
    expected = _seen(trace_file)
    entry = index_cache.entry_path(trace_file)
    elsewhere = tmp_path / "elsewhere.npz"
    entry.rename(elsewhere)
    entry.symlink_to(elsewhere)
    assert index_cache.lookup(trace_file, "x") is None
    assert not os.path.lexists(entry) and elsewhere.exists()          # the link went, not what it points to
    assert _seen(trace_file) == expected


def test_a_named_pipe_at_the_entry_path_does_not_hang(cache_home: Path, trace_file: Path) -> None:
    """In a child process, so that the old behaviour (waiting forever for a writer) fails by timeout."""
    load_trace(trace_file)
    entry = index_cache.entry_path(trace_file)
    entry.unlink()
    os.mkfifo(entry)
    code = textwrap.dedent(f"""
        from mlptui.trace.parse import index_cache
        from mlptui.trace.parse.load import load_trace
        index_cache.MIN_BYTES = 0
        print(len(load_trace({str(trace_file)!r}).gpu))
    """)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(load_trace(trace_file).gpu) > 0
    assert entry.is_file()                              # the pipe replaced by a real entry


@pytest.mark.parametrize("change", ["truncate", "rewrite"])
def test_a_mapped_entry_changed_after_opening_cannot_crash(cache_home: Path, trace_file: Path, change: str) -> None:
    """The entry is mapped (map_above: 0), then truncated or overwritten in place; every column is read
    after that. Mapping the entry itself gives SIGBUS on the truncated pages."""
    load_trace(trace_file)
    entry = index_cache.entry_path(trace_file)
    code = textwrap.dedent(f"""
        import os
        from mlptui.trace.parse import index_cache
        from mlptui.trace.parse.load import load_trace
        index_cache.MIN_BYTES = 0
        index_cache.map_above = lambda: 0
        trace = load_trace({str(trace_file)!r})
        assert not trace.columns.op_ts.flags.owndata          # a view of a map, not a copy in memory
        with open({str(entry)!r}, "r+b") as f:
            if {change!r} == "truncate":
                f.truncate(0)
            else:
                f.write(os.urandom(os.fstat(f.fileno()).st_size))
        total = sum(float(c.sum()) for c in (trace.columns.op_ts, trace.columns.gpu_dur, trace.columns.op_parent))
        print(len(trace.gpu), sum(g.dur for g in trace.gpu), total)
    """)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, (out.returncode, out.stderr[-500:])
    fresh = load_trace(trace_file)
    gpu, dur, _ = out.stdout.split()
    assert int(gpu) == len(fresh.gpu) and float(dur) == pytest.approx(sum(g.dur for g in fresh.gpu))


def _digest_variants(digest: dict[str, Any]) -> dict[str, Any]:
    call = digest["calls"][0]
    return {
        "empty": {},
        "rank a text": {**digest, "rank": "zero"},
        "compute_us a text": {**digest, "compute_us": "x"},
        "steps not pairs": {**digest, "steps": [["ProfilerStep#1"]]},
        "a call row too short": {**digest, "calls": [call[:3]]},
        "a call's start a text": {**digest, "calls": [[*call[:5], "late", *call[6:]]]},
        "a call's duration negative": {**digest, "calls": [[*call[:6], -1.0, call[7]]]},
        "world_size a text": {**digest, "world_size": "4"},
        "a field more": {**digest, "extra": 1},
        "a path not a path": {**digest, "path": [1, 2]},
        "a path's collective not a call": {**digest, "path": {**digest["path"], "calls": [[len(digest["calls"]),
                                                                                           0.0, 1.0]]}},
        "a path's length negative": {**digest, "path": {**digest["path"], "length_us": -1.0}},
    }


def test_every_crafted_rank_digest_is_deleted_and_rebuilt(cache_home: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    files = []
    for r in range(2):
        (run / f"rank-{r}.pt.trace.json").write_bytes(tiny_rank(r, 2, arrive=10.0 + 20 * r))
        files.append((r, run / f"rank-{r}.pt.trace.json"))
    expected = summarize_run(files, workers=0)
    assert expected.report is not None and not expected.failed
    path = files[0][1]
    entry = digest_cache.entry_path(path)
    good = orjson.loads(entry.read_bytes())
    assert good["digest"]["path"]["length_us"] > 0          # the critical path is carried
    assert summarize_run(files, workers=0).cached == 2
    for how, digest in _digest_variants(good["digest"]).items():
        entry.write_bytes(orjson.dumps({**good, "digest": digest}))
        assert digest_cache.lookup(path, index_cache.file_key(path)) is None, how
        assert not entry.exists(), how
        again = summarize_run(files, workers=0)                   # digested anew, not crashed
        assert again.report == expected.report and again.cached == 1, how
        assert digest_cache.lookup(path, index_cache.file_key(path)) == good["digest"], how


def test_a_mapped_entry_is_copied_through_the_process_where_the_kernel_cannot(
        cache_home: Path, trace_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _seen(trace_file)

    def cannot(*args: object) -> int:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(index_cache, "map_above", lambda: 0)
    monkeypatch.setattr(index_cache.os, "copy_file_range", cannot)
    trace = load_trace(trace_file)
    assert not trace.columns.op_ts.flags.owndata                  # mapped, from the copy made by hand
    assert _seen(trace_file) == expected
