"""The run folder's manifest when writing fails or holds odd values: a folder that cannot be written
stops a run before any work, a disk that fills while the manifest is written ends in one line with no
trace left without its entry, a lock held too long is one line, and values orjson could not write
(nesting past 255 levels, integers wider than 64 bits, lone surrogates) are kept exactly."""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mlptui.base import files
from mlptui.base.errors import MlptuiError
from mlptui.cli import main
from mlptui.contract import manifest
from mlptui.runners.record import output

# `mlptui run` records a real (CPU) run: the gpu extra, or CPU torch as .ci/run installs it
NEEDS_TORCH = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="`mlptui run` needs torch")

SMALL = ["mlp", "--device", "cpu", "--batch", "2", "--seq", "4", "--dim", "16", "--hidden", "32"]


@NEEDS_TORCH
def test_read_only_folder_stops_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
    else:   # root writes anywhere: the file system answers as a read-only mount would
        def read_only(*args: object, **kwargs: object) -> None:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

        monkeypatch.setattr(files, "_create", read_only)
    try:
        assert main(["run", *SMALL, "--out", str(folder)]) == 2
    finally:
        folder.chmod(0o755)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"mlptui: cannot write in the run folder {folder}: ")
    assert list(folder.iterdir()) == []


@NEEDS_TORCH
def test_full_disk_while_writing_the_manifest_keeps_trace_and_manifest_consistent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    output.add_run(tmp_path, {"trace": "earlier.pt.trace.json.gz"})
    before = (tmp_path / "manifest.json").read_bytes()
    real = manifest.write_atomic

    def full(path: Path, data: bytes) -> None:
        if path.name == "manifest.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(path, data)

    monkeypatch.setattr(manifest, "write_atomic", full)
    assert main(["run", *SMALL, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(f"mlptui: {tmp_path / 'manifest.json'}: cannot write the manifest "
                              "(No space left on device); ")
    assert err[-1].endswith(".pt.trace.json.gz was not kept")
    assert (tmp_path / "manifest.json").read_bytes() == before
    # No trace without its manifest entry (and no temp file either).
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]


def test_values_orjson_cannot_write_are_kept_exactly(tmp_path: Path) -> None:
    deep: object = "bottom"
    for _ in range(300):           # past orjson's 255 levels
        deep = [deep]
    theirs = {"trace": "deep.json", "nest": deep, "big": 2**70, "name": "a\ud800b"}
    (tmp_path / "manifest.json").write_text(json.dumps({"mlptui_manifest": 1, "runs": [theirs]}))
    output.add_run(tmp_path, {"trace": "new.pt.trace.json.gz"})
    runs = json.loads((tmp_path / "manifest.json").read_text())["runs"]
    assert runs == [theirs, {"trace": "new.pt.trace.json.gz"}]


@NEEDS_TORCH
def test_a_manifest_with_non_object_runs_does_not_stop_a_run(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"mlptui_manifest": 1, "runs": [1, "two", null]}')
    assert main(["run", *SMALL, "--out", str(tmp_path)]) == 0
    runs = orjson.loads((tmp_path / "manifest.json").read_bytes())["runs"]
    assert [r["workload"] for r in runs] == ["mlp"]       # entries that are not runs are dropped


def test_lock_held_too_long_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from filelock import FileLock

    monkeypatch.setattr(manifest, "LOCK_TIMEOUT_S", 0.2)
    lock = manifest.lock_path(tmp_path / "manifest.json")
    held = subprocess.Popen([sys.executable, "-c", "import sys, time; from filelock import FileLock\n"
                             "with FileLock(sys.argv[1]):\n    print('held', flush=True); time.sleep(30)",
                             str(lock)], stdout=subprocess.PIPE, text=True)
    try:
        assert held.stdout is not None and held.stdout.readline() == "held\n"
        with pytest.raises(MlptuiError, match="another process has held its lock") as err:
            output.add_run(tmp_path, {"trace": "x.pt.trace.json.gz"})
        assert "\n" not in str(err.value)
    finally:
        held.kill()
        held.wait()
    with FileLock(str(lock), timeout=5):     # released with the process
        pass
