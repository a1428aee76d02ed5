"""Only regular files are read, never more than their size: a FIFO, a device, a socket and a huge sparse
file are refused in one line before any read (in well under a second and 200 MB), through every entry
point (load, the sniffing of a folder, the manifest beside a trace, `summary`, `diff`, `view`). And the
small path problems each get the right line: a symlink loop, an over-long name, an empty path."""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import find_sample

from mlptui.base.errors import MlptuiError, TraceError
from mlptui.contract.manifest import read_manifest
from mlptui.sources.local import list_traces
from mlptui.sources.local import open_trace as open_local
from mlptui.trace.parse.discover import find_traces, trace_problem
from mlptui.trace.parse.load import load_trace

MLPTUI = [sys.executable, "-m", "mlptui.cli"]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _refused_fast(path: Path, words: str) -> None:
    """load_trace refuses `path` with one line holding `words`, within a second, without growing RSS."""
    before = _rss_mb()
    done: list[BaseException] = []

    def go() -> None:
        try:
            load_trace(path)
        except BaseException as exc:      # handed to the test thread
            done.append(exc)

    t0 = time.monotonic()
    worker = threading.Thread(target=go, daemon=True)   # a FIFO open that blocked would hang here
    worker.start()
    worker.join(5)
    took = time.monotonic() - t0
    assert not worker.is_alive(), f"{path}: still reading after 5 s"
    assert took < 1.0, f"{path}: {took:.2f} s"
    assert _rss_mb() - before < 200
    assert len(done) == 1 and isinstance(done[0], TraceError), done
    message = str(done[0])
    assert "\n" not in message and words in message, message


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.pt.trace.json"
    os.mkfifo(path)
    return path


def test_a_fifo_is_refused_before_any_read(fifo: Path) -> None:
    _refused_fast(fifo, "named pipe (FIFO)")


def test_dev_zero_is_refused(tmp_path: Path) -> None:
    _refused_fast(Path("/dev/zero"), "character device")


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        _refused_fast(path, "socket")


@pytest.mark.parametrize("gz", [False, True])
def test_a_10_gb_sparse_file_is_refused_without_reading_it(tmp_path: Path, gz: bool) -> None:
    path = tmp_path / ("big.json.gz" if gz else "big.json")
    with open(path, "wb") as f:
        if gz:
            f.write(b"\x1f\x8b\x08\x00")      # a gzip header, then nothing a decoder accepts
        f.truncate(10 << 30)
    assert os.stat(path).st_blocks * 512 < 1 << 20          # sparse: no real data
    _refused_fast(path, "a sparse file")


def _trace_start_then_holes(path: Path, size: int) -> Path:
    """A file that starts like a trace and is `size` bytes long, all but its start a hole (no data written)."""
    with open(path, "wb") as f:
        f.write(b'{"traceEvents": [')
        f.truncate(size)
    return path


def test_a_sparse_file_that_starts_like_a_trace_is_refused_without_reading_it(tmp_path: Path) -> None:
    _refused_fast(_trace_start_then_holes(tmp_path / "holes.pt.trace.json", 10 << 30), "a sparse file")


def test_a_file_larger_than_memory_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_MAX_INPUT_MB", "1")
    _refused_fast(_trace_start_then_holes(tmp_path / "t.json", 3 << 20), "refused before reading it")


def test_a_gzip_stream_inflating_past_memory_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip

    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (70 << 20) + b"]}"))
    monkeypatch.setenv("MLPTUI_MAX_INPUT_MB", "8")
    _refused_fast(path, "inflates to more than 8.4 MB")


def test_a_file_that_grows_is_read_only_to_its_size(tmp_path: Path) -> None:
    """The read stops at the size the file had when opened (a writer appending is not followed)."""
    src = find_sample("linear", "eager")
    path = tmp_path / "t.pt.trace.json"
    import gzip

    data = gzip.decompress(src.read_bytes()) if src.suffix == ".gz" else src.read_bytes()
    path.write_bytes(data)
    first = load_trace(path)
    path.write_bytes(data + b"\n" + b" " * 100)        # trailing space is still the same trace
    assert len(load_trace(path).gpu) == len(first.gpu)


def test_folder_sniffing_and_manifest_never_read_a_fifo(tmp_path: Path) -> None:
    src = find_sample("linear", "eager")
    shutil.copyfile(src, tmp_path / src.name)
    os.mkfifo(tmp_path / "other.pt.trace.json.gz.json")
    os.mkfifo(tmp_path / "manifest.json")
    t0 = time.monotonic()
    # named like a trace: listed, so that opening it says why, but never read
    assert [p.name for p in find_traces(tmp_path)] == sorted([src.name, "other.pt.trace.json.gz.json"])
    assert trace_problem(tmp_path / "other.pt.trace.json.gz.json") == (
        f"{tmp_path / 'other.pt.trace.json.gz.json'}: is a named pipe (FIFO), not a regular file; only regular "
        "files are read")
    with pytest.raises(MlptuiError, match="named pipe"):
        load_trace(tmp_path / "other.pt.trace.json.gz.json")
    with pytest.raises(MlptuiError, match="named pipe"):
        read_manifest(tmp_path)
    trace = load_trace(tmp_path / src.name)              # the manifest beside it is skipped, not waited on
    assert trace.manifest is None and len(trace.gpu) > 0
    assert time.monotonic() - t0 < 2


def test_path_problems_each_get_their_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(MlptuiError, match="symlink loop"):
        open_local(str(tmp_path / "a"))
    long = "x" * 5000
    with pytest.raises(MlptuiError, match="file name too long") as info:
        open_local(long)
    assert len(str(info.value)) < 300
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MlptuiError, match="empty path"):
        list_traces("")
    with pytest.raises(MlptuiError, match="no such file"):
        open_local("missing.json")


def _cli(*args: str, cwd: Path | None = None, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MLPTUI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "MLPTUI_NO_CACHE": "1"})


@pytest.mark.slow
def test_the_cli_says_one_line_for_each(tmp_path: Path, fifo: Path) -> None:
    src = find_sample("linear", "eager")
    shutil.copyfile(src, tmp_path / src.name)
    cases = [
        (["summary", str(fifo)], "is a named pipe (FIFO), not a regular file"),
        (["summary", "/dev/zero"], "is a character device"),
        (["diff", str(tmp_path / src.name), str(fifo)], "named pipe"),
        (["view", str(fifo)], "named pipe"),
        (["summary", ""], "an empty path names no file or folder"),
        (["summary", "y" * 5000], "file name too long"),
        (["summary", "ssh://h:\u0663\u0664/x.json"], "bad port"),
        (["push", str(tmp_path), "--bucket", "me/b", "--prefix", "a\nb", "--dry-run"], "no control characters"),
    ]
    for args, words in cases:
        proc = _cli(*args, cwd=tmp_path)
        line = proc.stderr.strip()
        assert proc.returncode == 2 and "\n" not in line and words in line, (args, proc.stderr[-500:])
        assert "internal error" not in line and "Traceback" not in proc.stderr
