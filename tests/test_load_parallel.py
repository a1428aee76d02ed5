"""A big plain trace file is decoded by several processes at once (mlptui.trace.parse.decode_parallel). Cut into
ranges of a few KiB and decoded by a real worker process beside this one, every sample and corpus trace,
and files built to mislead the cutting, load to the very Trace the sequential decode gives; what the
parallel path cannot read (a truncated file, bad UTF-8, a range too dense in objects, a file replaced
after it was opened) is left to the sequential path, which repairs or refuses it with its reason."""

from __future__ import annotations

import gzip
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from fuzz import hostile
from test_load_pieces import _events, _same

from mlptui.base.errors import TraceError
from mlptui.trace.model import Trace
from mlptui.trace.parse import decode_parallel
from mlptui.trace.parse import load as load_module
from mlptui.trace.parse.load import load_trace

CORPUS = ROOT.parent / "shared" / "corpus"
FILES = sorted(p for p in [*(ROOT / "sample_traces").glob("*.json.gz"), *CORPUS.rglob("*.json*")]
               if p.is_file() and p.stat().st_size < 1_300_000)


def _plain(path: Path, tmp_path: Path) -> Path:
    """The trace as a plain file (the parallel path reads plain files only)."""
    data = path.read_bytes()
    if data[:2] != b"\x1f\x8b":
        return path
    plain = tmp_path / path.name.removesuffix(".gz")
    plain.write_bytes(gzip.decompress(data))
    return plain


def _load_both(path: Path, monkeypatch: pytest.MonkeyPatch, workers: int = 1) -> tuple[Trace | str, Trace | str, bool]:
    """(decoded in about 64 ranges (4 KiB or more) by `workers` worker processes (one: with this process;
    more: this process receives their parts as they are made), decoded sequentially, whether the ranges
    were used)."""
    used: list[bool] = []

    def spied(real: Any) -> Any:
        def spy(*args: Any, **kwargs: Any) -> Any:
            out = real(*args, **kwargs)
            used.append(out is not None)
            return out
        return spy

    def one() -> Trace | str:
        try:
            return load_trace(path)
        except TraceError as exc:
            return f"TraceError: {exc}"
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    monkeypatch.setattr(decode_parallel, "TASK_BYTES", max(4096, path.stat().st_size // 64))
    monkeypatch.setattr(load_module, "decode_file_in_parallel", spied(decode_parallel.decode_file_in_parallel))
    monkeypatch.setattr(load_module, "decode_bytes_in_parallel", spied(decode_parallel.decode_bytes_in_parallel))
    monkeypatch.setattr(load_module, "workers_for", lambda size: workers)
    parallel = one()
    monkeypatch.setattr(load_module, "workers_for", lambda size: 0)
    sequential = one()
    assert not multiprocessing.active_children()        # every worker was waited for
    return parallel, sequential, any(used)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_traces(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = _plain(path, tmp_path)
    parallel, sequential, used = _load_both(plain, monkeypatch, workers=1 + FILES.index(path) % 2)
    _same(parallel, sequential)
    assert used or isinstance(sequential, str) or plain.stat().st_size < 2 * 4096


@pytest.mark.parametrize("path", [p for p in FILES if p.read_bytes()[:2] == b"\x1f\x8b"], ids=lambda p: p.name)
def test_gzip_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gzip trace is inflated here, then decoded from memory by workers forked after it (they share the
    bytes): only where this process runs no other thread."""
    parallel, sequential, used = _load_both(path, monkeypatch, workers=1 + FILES.index(path) % 2)
    _same(parallel, sequential)
    assert used or isinstance(sequential, str) or threading.active_count() > 1


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / f"{name.replace(' ', '_')}.json"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("shape", ["keys after the array", "bare array", "traceEvents in a string first",
                                   "truncated", "bad utf-8", "long tail after the array", "dense"])
def test_files_that_mislead_the_cutting(shape: str, workers: int, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    evs = _events(300)
    doc: dict[str, Any] = {"schemaVersion": 1}
    if shape == "traceEvents in a string first":
        doc["traceName"] = '"traceEvents": [ {"ph": "X"}, '
    doc["traceEvents"] = evs
    doc["deviceProperties"] = [{"id": 0, "name": "GPU }, ]", "numSms": 132}]
    if shape == "long tail after the array":      # 20 KiB after the array that look like event ends: a cut
                                                   # falls there, and the sequential path decodes the file
        doc["distributedInfo"] = {"rank": 0, "pg_config": [{"ranks": [i]} for i in range(2000)]}
    data = json.dumps(evs if shape == "bare array" else doc).encode()
    if shape == "truncated":
        data = data[: len(data) * 2 // 3]
    elif shape == "bad utf-8":
        at = data.index(b"op150")
        data = data[:at] + b"\xff" + data[at + 1:]
    elif shape == "dense":                         # '{' every few bytes: refused, by the sequential path
        data = b'{"traceEvents": [' + b", ".join([b"{}"] * 500_000) + b"]}"
    parallel, sequential, used = _load_both(_write(tmp_path, shape, data), monkeypatch, workers)
    _same(parallel, sequential)
    readable = shape in ("keys after the array", "bare array", "traceEvents in a string first")
    assert used == readable
    if readable or shape == "long tail after the array":
        assert isinstance(parallel, Trace) and len(parallel.ops) == 300 and len(parallel.gpu) == 300
        assert (parallel.device or {}).get("numSms") == (None if shape == "bare array" else 132)
    if shape == "truncated":
        assert isinstance(parallel, Trace) and "ends early" in parallel.warnings[0]
    if shape == "dense":
        assert isinstance(parallel, str) and "JSON objects in" in parallel


@pytest.mark.parametrize("name", sorted(hostile.cases()))
def test_hostile_files(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parallel, sequential, _ = _load_both(_write(tmp_path, name, hostile.cases()[name]), monkeypatch, workers=2)
    _same(parallel, sequential)


def test_a_file_replaced_after_it_was_opened_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "first", json.dumps({"traceEvents": _events(300)}).encode())
    opened = os.stat(path)
    other = _write(tmp_path, "second", json.dumps({"traceEvents": _events(200)}).encode())
    os.replace(other, path)
    monkeypatch.setattr(decode_parallel, "TASK_BYTES", 4096)
    assert decode_parallel.decode_file_in_parallel(path, opened, 1) is None
    decoded = decode_parallel.decode_file_in_parallel(path, os.stat(path), 1)
    assert decoded is not None and decoded.n_events == 400


def test_how_many_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    big = 1 << 30
    monkeypatch.setattr(decode_parallel, "_busy_cpus", lambda: 0)
    assert decode_parallel.workers_for(decode_parallel.MIN_FILE_BYTES - 1) == 0
    cpus = len(os.sched_getaffinity(0))
    assert decode_parallel.workers_for(big) == cpus - 1
    monkeypatch.setattr(decode_parallel, "_busy_cpus", lambda: 1)    # another process keeps one CPU busy
    assert decode_parallel.workers_for(big) == max(0, cpus - 2)
    monkeypatch.setattr(decode_parallel, "_busy_cpus", lambda: 0)
    monkeypatch.setenv("MLPTUI_DECODE_WORKERS", "0")
    assert decode_parallel.workers_for(big) == 0
    monkeypatch.setenv("MLPTUI_DECODE_WORKERS", "1")
    monkeypatch.setattr(decode_parallel, "_busy_cpus", lambda: cpus)      # a setting is taken as it is
    assert decode_parallel.workers_for(big) == min(1, cpus - 1)
    monkeypatch.setenv("MLPTUI_DECODE_WORKERS", str(cpus + 5))
    assert decode_parallel.workers_for(big) == cpus - 1


def test_a_process_that_keeps_a_cpu_busy_is_seen() -> None:
    if not Path("/proc/stat").exists():
        pytest.skip("no /proc/stat here: no process is counted")
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        assert decode_parallel._busy_cpus() >= 1
    finally:
        spinner.kill()
        spinner.wait()


def test_no_workers_inside_a_worker() -> None:
    """A rank run's worker process decodes its rank alone: its CPUs are the other ranks'."""
    with multiprocessing.get_context("fork").Pool(1) as pool:
        assert pool.apply(decode_parallel.workers_for, (1 << 30,)) == 0


@pytest.mark.parametrize("how", ["raises", "dies"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_worker_that_fails_leaves_the_file_to_the_sequential_path(
        how: str, workers: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, "trace", json.dumps({"traceEvents": _events(300)}).encode())
    real = decode_parallel.decode_range

    def failing(*args: Any) -> Any:
        if multiprocessing.parent_process() is not None:       # in the worker only
            if how == "dies":
                os._exit(3)
            raise RuntimeError("a fault in the worker")
        time.sleep(0.02)          # this process goes slowly: the worker surely takes a range
        return real(*args)
    monkeypatch.setattr(threading, "active_count", lambda: 1)      # forked: the worker has `failing`
    monkeypatch.setattr(decode_parallel, "decode_range", failing)
    parallel, sequential, used = _load_both(path, monkeypatch, workers)
    assert not used
    _same(parallel, sequential)
    assert isinstance(parallel, Trace) and len(parallel.ops) == 300


def test_with_threads_running_workers_come_from_the_fork_server(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The explorer loads in a thread: forking then could copy a lock another thread holds."""
    path = _write(tmp_path, "trace", json.dumps({"traceEvents": _events(300)}).encode())
    started: list[str] = []
    real = multiprocessing.get_context

    def spy(method: str | None = None) -> Any:
        started.append(str(method))
        return real(method)
    monkeypatch.setattr(multiprocessing, "get_context", spy)
    idle = threading.Event()
    other = threading.Thread(target=idle.wait)
    other.start()
    try:
        parallel, sequential, used = _load_both(path, monkeypatch, workers=2)
    finally:
        idle.set()
        other.join()
    assert used and "fork" not in started and started
    _same(parallel, sequential)
