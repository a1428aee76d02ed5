"""The run folder's manifest under concurrency and failure: runs recorded at the same time by two
processes are all kept (a file lock around read-modify-write), a folder that cannot be written or a
disk that fills while the manifest is written ends in one line with trace and manifest consistent,
and entries we did not write (not objects, deeply nested) are kept exactly."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from mlptui.cli import main
from mlptui.contract.errors import MlptuiError
from mlptui.runners import output

SMALL = ["mlp", "--device", "cpu", "--batch", "2", "--seq", "4", "--dim", "16", "--hidden", "32"]

_WRITER = """
import sys
from pathlib import Path
from mlptui.runners.output import add_run
folder, tag, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(n):
    add_run(folder, {"trace": f"{tag}-{i}.pt.trace.json.gz", "i": i})
"""


def test_two_processes_adding_200_runs_each_keep_all_400(tmp_path: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path), tag, "200"])
             for tag in ("a", "b")]
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    runs = orjson.loads((tmp_path / "manifest.json").read_bytes())["runs"]
    assert len(runs) == 400
    assert {r["trace"] for r in runs} == {f"{t}-{i}.pt.trace.json.gz" for t in "ab" for i in range(200)}
    for tag in "ab":     # each writer's own runs stay in the order it added them
        assert [r["i"] for r in runs if r["trace"].startswith(tag)] == list(range(200))


def test_read_only_folder_stops_before_any_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
    else:   # root writes anywhere: the file system answers as a read-only mount would
        def read_only(*args: object, **kwargs: object) -> None:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))

        monkeypatch.setattr(output.tempfile, "mkstemp", read_only)
    try:
        assert main(["run", *SMALL, "--out", str(folder)]) == 2
    finally:
        folder.chmod(0o755)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"mlptui: cannot write in the run folder {folder}: ")
    assert list(folder.iterdir()) == []


def test_full_disk_while_writing_the_manifest_keeps_trace_and_manifest_consistent(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    output.add_run(tmp_path, {"trace": "earlier.pt.trace.json.gz"})
    before = (tmp_path / "manifest.json").read_bytes()
    real = output.write_atomic

    def full(path: Path, data: bytes) -> None:
        if path.name == "manifest.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(path, data)

    monkeypatch.setattr(output, "write_atomic", full)
    assert main(["run", *SMALL, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith(f"mlptui: cannot update {tmp_path / 'manifest.json'}: No space left on device; ")
    assert err[-1].endswith(".pt.trace.json.gz was not kept")
    assert (tmp_path / "manifest.json").read_bytes() == before
    # No trace without its manifest entry (and no temp file either).
    assert sorted(p.name for p in tmp_path.iterdir()) == [output.LOCK_NAME, "manifest.json"]


def test_entries_we_did_not_write_are_kept_exactly(tmp_path: Path) -> None:
    deep: object = "bottom"
    for _ in range(300):           # past orjson's 255 levels
        deep = [deep]
    foreign = [1, "x", None, [2], {"no trace key": True}, {"trace": "deep.json", "nest": deep, "big": 2**70}]
    (tmp_path / "manifest.json").write_text(json.dumps({"mlptui_manifest": 1, "runs": foreign}))
    output.add_run(tmp_path, {"trace": "new.pt.trace.json.gz"})
    runs = json.loads((tmp_path / "manifest.json").read_text())["runs"]
    assert runs == [*foreign, {"trace": "new.pt.trace.json.gz"}]


def test_a_manifest_with_non_object_runs_does_not_stop_a_run(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"mlptui_manifest": 1, "runs": [1, "two", null]}')
    assert main(["run", *SMALL, "--out", str(tmp_path)]) == 0
    runs = orjson.loads((tmp_path / "manifest.json").read_bytes())["runs"]
    assert runs[:3] == [1, "two", None] and runs[3]["workload"] == "mlp"


def test_lock_held_too_long_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from filelock import FileLock

    monkeypatch.setattr(output, "LOCK_TIMEOUT_S", 0.2)
    held = subprocess.Popen([sys.executable, "-c", "import sys, time; from filelock import FileLock\n"
                             "with FileLock(sys.argv[1]):\n    print('held', flush=True); time.sleep(30)",
                             str(tmp_path / output.LOCK_NAME)], stdout=subprocess.PIPE, text=True)
    try:
        assert held.stdout is not None and held.stdout.readline() == "held\n"
        with pytest.raises(MlptuiError, match="another process has held its lock") as err:
            output.add_run(tmp_path, {"trace": "x.pt.trace.json.gz"})
        assert "\n" not in str(err.value)
    finally:
        held.kill()
        held.wait()
    with FileLock(tmp_path / output.LOCK_NAME, timeout=5):     # released with the process
        pass
