"""`mlptui push` sends only what is in the folder and is a trace: a symlink that leads out of the folder
and a file named like a trace that is not one are skipped, and the push says so (dry run, no network)."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path

import pytest

from mlptui.cli import main
from mlptui.publish.hub_push import collect

TRACE = json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                                     "ts": 1, "dur": 2}]}).encode()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "id_rsa.pt.trace.json").write_bytes(TRACE)           # even a real trace: not in the folder
    out = tmp_path / "traces"
    (out / "sub").mkdir(parents=True)
    (out / "real.pt.trace.json.gz").write_bytes(gzip.compress(TRACE))
    (out / "escape.pt.trace.json").symlink_to(outside / "id_rsa.pt.trace.json")
    (out / "sub" / "up.pt.trace.json").symlink_to(Path("..") / ".." / "private" / "id_rsa.pt.trace.json")
    (out / "alias.pt.trace.json.gz").symlink_to(out / "real.pt.trace.json.gz")   # stays inside: sent
    (out / "linked-dir").symlink_to(outside, target_is_directory=True)            # never walked into
    (out / "notes.pt.trace.json").write_text("my notes, not a trace\n")
    (out / "broken.pt.trace.json.gz").write_bytes(b"\x1f\x8b not really gzip")
    return out


def test_collect_skips_symlinks_out_and_non_traces(folder: Path) -> None:
    traces, manifests, skipped = collect(folder)
    assert [p.name for p in traces] == ["alias.pt.trace.json.gz", "real.pt.trace.json.gz"]
    assert manifests == []
    assert sorted((p.relative_to(folder).as_posix(), why) for p, why in skipped) == [
        ("broken.pt.trace.json.gz", "named like a trace, but its content is not a profiler trace"),
        ("escape.pt.trace.json", "a symlink to a file outside the folder"),
        ("notes.pt.trace.json", "named like a trace, but its content is not a profiler trace"),
        ("sub/up.pt.trace.json", "a symlink to a file outside the folder"),
    ]


def test_dry_run_says_what_it_skipped(folder: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dry run opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    assert main(["push", str(folder), "--bucket", "b", "--namespace", "me", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    assert [line.split("  ", 1)[0] for line in out.splitlines()] == ["alias.pt.trace.json.gz",
                                                                     "real.pt.trace.json.gz"]
    assert "skipped escape.pt.trace.json: a symlink to a file outside the folder" in err.splitlines()
    assert "skipped notes.pt.trace.json: named like a trace, but its content is not a profiler trace" in err
    assert "id_rsa" not in out + err
