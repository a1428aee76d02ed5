"""`mlptui push --dry-run`: what would be sent and the exact links, with every socket refused (no network at
all, not even to 127.0.0.1), and the folder left byte-for-byte as it was."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from urllib.parse import unquote

import pytest
from test_hub_standin import sample_traces

from mlptui.cli import main

PERFETTO = "https://ui.perfetto.dev/#!/?url="


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the dry run opened a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.delenv("HF_ENDPOINT", raising=False)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    out = tmp_path / "traces"
    (out / "run-2").mkdir(parents=True)
    for t in sample_traces():
        shutil.copy(t, out / t.name)
    shutil.copy(sample_traces()[0].parent / "manifest.json", out / "manifest.json")
    shutil.copy(sample_traces()[0], out / "run-2" / "again.pt.trace.json.gz")
    (out / "run-2" / "export.json").write_text('{"traceEvents": [], "schemaVersion": 1}')  # a trace by content
    (out / "config.json").write_text('{"lr": 0.1}')  # JSON, not a trace
    (out / "notes.txt").write_text("hello")
    (out / ".cache").mkdir()
    shutil.copy(sample_traces()[0], out / ".cache" / "hidden.pt.trace.json.gz")
    return out


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_dry_run_prints_one_link_per_trace_and_touches_nothing(
        folder: Path, no_network: None, capsys: pytest.CaptureFixture[str]) -> None:
    before = _snapshot(folder)
    assert main(["push", str(folder), "--bucket", "my-traces", "--namespace", "me", "--dry-run"]) == 0
    out, err = capsys.readouterr()
    want = sorted([t.name for t in sample_traces()] + ["run-2/again.pt.trace.json.gz", "run-2/export.json"])
    lines = out.splitlines()
    assert [line.split("  ", 1)[0] for line in lines] == want
    for line in lines:
        name, link = line.split("  ", 1)
        assert link.startswith(PERFETTO)
        assert unquote(link[len(PERFETTO):]) == f"https://huggingface.co/buckets/me/my-traces/resolve/{name}"
    assert "dry run" in err and "manifest.json" in err and "config.json" not in err + out
    assert "notes.txt" not in err + out and "hidden" not in err + out
    assert _snapshot(folder) == before


def test_dry_run_to_a_dataset_repo_under_a_prefix(folder: Path, no_network: None,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push", str(folder), "--repo", "me/profiling-traces", "--prefix", "/h200/", "--dry-run",
                 "--private"]) == 0
    out, err = capsys.readouterr()
    first = out.splitlines()[0].split("  ", 1)
    assert unquote(first[1][len(PERFETTO):]) == (
        f"https://huggingface.co/datasets/me/profiling-traces/resolve/main/h200/{first[0]}")
    assert "hf://datasets/me/profiling-traces/h200/manifest.json" in err
    assert "private: Perfetto cannot fetch these URLs without a token" in err


def test_dry_run_needs_an_owner_it_cannot_look_up(folder: Path, no_network: None,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push", str(folder), "--bucket", "my-traces", "--dry-run"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("mlptui: ") and "--namespace" in err and err.count("\n") == 1


def test_folder_without_traces_is_an_error(tmp_path: Path, no_network: None,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"mlptui_manifest": 1, "runs": []}))
    assert main(["push", str(tmp_path), "--bucket", "me/b", "--dry-run"]) == 2
    assert "no trace files" in capsys.readouterr().err


def test_manifest_update_keeps_runs_and_other_keys(tmp_path: Path) -> None:
    from mlptui.publish.hub_push import (
        merge_remote,
        plan_push,
        read_manifest,
        save_published,
        with_published,
    )
    from mlptui.sources.hub_spec import parse_hf_spec

    shutil.copy(sample_traces()[0], tmp_path / sample_traces()[0].name)
    manifest = {"mlptui_manifest": 1, "runs": [{"trace": sample_traces()[0].name, "mode": "eager"}],
                "note": "mine", "published": {"gone-elsewhere.json": {"url": "u"}}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    plan = plan_push(tmp_path, parse_hf_spec("hf://buckets/me/b"), "https://huggingface.co")
    updated = with_published(read_manifest(tmp_path / "manifest.json"), plan, False, "2026-11-22T00:00:00+00:00")
    assert updated["runs"] == manifest["runs"] and updated["note"] == "mine"
    assert set(updated["published"]) == {"gone-elsewhere.json", sample_traces()[0].name}
    entry = updated["published"][sample_traces()[0].name]
    assert entry["hf"] == f"hf://buckets/me/b/{sample_traces()[0].name}" and entry["perfetto"].startswith(PERFETTO)

    remote = {"mlptui_manifest": 1, "runs": [{"trace": "other.pt.trace.json.gz", "mode": "compile"}],
              "published": {"other.pt.trace.json.gz": {"url": "v"}}}
    merged = merge_remote(updated, remote)
    assert [r["trace"] for r in merged["runs"]] == ["other.pt.trace.json.gz", sample_traces()[0].name]
    assert set(merged["published"]) == {"other.pt.trace.json.gz", "gone-elsewhere.json", sample_traces()[0].name}

    save_published(tmp_path, updated)
    assert json.loads((tmp_path / "manifest.json").read_text()) == updated
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp")] == []


def test_unreadable_manifest_is_never_overwritten(tmp_path: Path) -> None:
    from mlptui.base.errors import MlptuiError
    from mlptui.publish.hub_push import read_manifest

    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(MlptuiError, match="is not valid JSON"):
        read_manifest(tmp_path / "manifest.json")
