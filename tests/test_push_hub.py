"""`mlptui push` end to end, as a user runs it, against HubStandIn (tests/test_hub_standin.py): a local
HTTP server on 127.0.0.1 that speaks the part of the Hub API huggingface_hub uses for repos and buckets.
HF_ENDPOINT points the real huggingface_hub client at it; nothing here reaches the Hub."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path
from urllib.parse import unquote

import pytest
from test_hub_standin import (
    CLOSED_PORT_ENDPOINT,
    ROOT,
    WRITE_TOKEN,
    HubStandIn,
    hub_env,
    run_mlptui,
    sample_traces,
)

PERFETTO = "https://ui.perfetto.dev/#!/?url="


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three real traces and their runner manifest, plus files push must leave alone."""
    out = tmp_path / "traces"
    out.mkdir()
    traces = sample_traces()[:3]
    for t in traces:
        shutil.copy(t, out / t.name)
    manifest = json.loads((traces[0].parent / "manifest.json").read_text())
    manifest["runs"] = [r for r in manifest["runs"] if r["trace"] in {t.name for t in traces}]
    manifest["lab_note"] = "kept as is"
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (out / "notes.txt").write_text("not a trace")
    (out / "config.json").write_text('{"lr": 0.1}')
    return out


def _links(stdout: str) -> dict[str, str]:
    """`<file>  <perfetto url>` lines -> {file: public URL}."""
    out = {}
    for line in stdout.splitlines():
        name, sep, link = line.partition("  ")
        assert sep and link.startswith(PERFETTO), line
        out[name] = unquote(link[len(PERFETTO):])
    return out


def test_push_to_a_dataset_repo_creates_it_commits_once_and_links_every_trace(folder: Path, tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn (repo create, preupload, Xet CAS, commit)."""
    before = json.loads((folder / "manifest.json").read_text())
    with HubStandIn() as hub:
        hub.cas_holds(sorted(folder.glob("*.pt.trace.json.gz")))
        r = run_mlptui(["push", str(folder), "--repo", "me/profiling-traces", "--prefix", "run-1"],
                       hub_env(tmp_path / "hf", hub.endpoint))
        assert r.returncode == 0, r.stderr
        repo = hub.repos[("dataset", "me/profiling-traces")]
        traces = sorted(p.name for p in folder.glob("*.pt.trace.json.gz"))
        assert sorted(repo.files) == sorted([f"run-1/{n}" for n in traces] + ["run-1/manifest.json"])
        for n in traces:
            assert repo.files[f"run-1/{n}"] == (folder / n).read_bytes()
        assert len(hub.commits) == 1 and not any(i["key"].startswith("deleted") for i in hub.commits[0])
        # traces took the large-file path (Xet upload, then an lfsFile entry), the manifest went inline
        assert sorted(i["key"] for i in hub.commits[0][1:]) == ["file"] + ["lfsFile"] * len(traces)
        links = _links(r.stdout)
        assert sorted(links) == traces
        for n, url in links.items():
            assert url == f"{hub.endpoint}/datasets/me/profiling-traces/resolve/main/run-1/{n}"
        after = json.loads((folder / "manifest.json").read_text())
        assert after["runs"] == before["runs"] and after["lab_note"] == "kept as is"
        assert {n: e["url"] for n, e in after["published"].items()} == links
        assert after["published"][traces[0]]["private"] is False
        assert json.loads(repo.files["run-1/manifest.json"])["published"] == after["published"]
        assert "private" not in r.stderr


def test_push_never_deletes_remote_files_and_skips_unchanged_ones(folder: Path, tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn, seeded with a file this folder does not have."""
    with HubStandIn() as hub:
        hub.add_repo_files("dataset", "me/t", {"older/keep.pt.trace.json": b'{"traceEvents": []}'})
        hub.cas_holds(sorted(folder.glob("*.pt.trace.json.gz")))
        env = hub_env(tmp_path / "hf", hub.endpoint)
        assert run_mlptui(["push", str(folder), "--repo", "me/t"], env).returncode == 0
        r = run_mlptui(["push", str(folder), "--repo", "me/t"], env)
        assert r.returncode == 0, r.stderr
        repo = hub.repos[("dataset", "me/t")]
        assert repo.files["older/keep.pt.trace.json"] == b'{"traceEvents": []}'
        # the traces were unchanged: a later commit carries at most the manifest (its published_at moved)
        later = [i["value"]["path"] for c in hub.commits[1:] for i in c if i["key"] in ("file", "lfsFile")]
        assert set(later) <= {"manifest.json"}
        assert not any(i["key"].startswith("deleted") for c in hub.commits for i in c)


def test_push_to_a_bucket_uploads_traces_then_the_manifest(folder: Path, tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn's bucket API (create, paths-info, /batch) and its permissive Xet CAS."""
    with HubStandIn() as hub:
        traces = sorted(folder.glob("*.pt.trace.json.gz"))
        hub.cas_holds(traces)
        r = run_mlptui(["push", str(folder), "--bucket", "my-traces"], hub_env(tmp_path / "hf", hub.endpoint))
        assert r.returncode == 0, r.stderr
        bucket = hub.buckets["me/my-traces"]
        assert sorted(bucket.files) == sorted([t.name for t in traces] + ["manifest.json"])
        for t in traces:
            assert bucket.files[t.name][1] == t.read_bytes()
        ops = [op for batch in hub.batches for op in batch]
        assert {op["type"] for op in ops} == {"addFile"}
        assert ops[-1]["path"] == "manifest.json"
        links = _links(r.stdout)
        assert links == {t.name: f"{hub.endpoint}/buckets/me/my-traces/resolve/{t.name}" for t in traces}
        published = json.loads((folder / "manifest.json").read_text())["published"]
        assert {n: e["hf"] for n, e in published.items()} == {t.name: f"hf://buckets/me/my-traces/{t.name}"
                                                                for t in traces}


def test_bucket_file_with_other_content_is_not_replaced_without_overwrite(folder: Path, tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn, a bucket already holding a trace of the same name."""
    name = sorted(folder.glob("*.pt.trace.json.gz"))[0].name
    manifest_before = (folder / "manifest.json").read_bytes()
    with HubStandIn() as hub:
        hub.add_bucket_files("me/b", {name: b"someone else's trace"})
        r = run_mlptui(["push", str(folder), "--bucket", "me/b"], hub_env(tmp_path / "hf", hub.endpoint))
        assert r.returncode == 2
        assert r.stderr.count("\n") == 1 and "--overwrite" in r.stderr
        assert hub.batches == []
        assert hub.buckets["me/b"].files[name][1] == b"someone else's trace"
    assert (folder / "manifest.json").read_bytes() == manifest_before


def test_private_repo_gets_the_perfetto_note(folder: Path, tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn (the repo is created private)."""
    with HubStandIn() as hub:
        hub.cas_holds(sorted(folder.glob("*.pt.trace.json.gz")))
        r = run_mlptui(["push", str(folder), "--repo", "me/secret", "--private"],
                       hub_env(tmp_path / "hf", hub.endpoint))
        assert r.returncode == 0, r.stderr
        assert hub.repos[("dataset", "me/secret")].private is True
        assert "private: Perfetto cannot fetch these URLs without a token" in r.stderr
        published = json.loads((folder / "manifest.json").read_text())["published"]
        assert all(e["private"] is True for e in published.values())


@pytest.mark.parametrize(
    ("case", "expect"),
    [
        ("no token", "no Hugging Face token"),
        ("bad token", "rejected the token"),
        ("no such repo", "no such dataset"),
        ("network down", "cannot reach the Hub"),
    ],
)
def test_push_errors_are_one_line_exit_2_and_change_nothing(folder: Path, tmp_path: Path, case: str,
                                                          expect: str) -> None:
    """Stand-in for the Hub: HubStandIn; for "network down", a closed port on 127.0.0.1. The namespace
    "someone-else" is not the token's, so creating a repo there is refused as on the Hub."""
    manifest_before = (folder / "manifest.json").read_bytes()
    with HubStandIn() as hub:
        endpoint = CLOSED_PORT_ENDPOINT if case == "network down" else hub.endpoint
        token = {"no token": None, "bad token": "hf_wrong"}.get(case, WRITE_TOKEN)
        repo = "someone-else/traces" if case == "no such repo" else "me/traces"
        r = run_mlptui(["push", str(folder), "--repo", repo], hub_env(tmp_path / "hf", endpoint, token=token))
        assert r.returncode == 2, r.stderr
        assert r.stderr.startswith("mlptui: ") and r.stderr.count("\n") == 1 and expect in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and r.stdout == ""
        assert hub.commits == [] and hub.repos == {}
        if case == "no token":
            assert hub.requests == []
    assert (folder / "manifest.json").read_bytes() == manifest_before
    assert not list(folder.glob(".*.tmp"))


def _run_in_pty(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run `mlptui ARGS` with a 100x30 terminal as stdin/stdout/stderr (as a person at a terminal)."""
    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "mlptui.cli", *args], cwd=ROOT, env=env,
                            stdin=child_fd, stdout=child_fd, stderr=child_fd)
    os.close(child_fd)
    out = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(main_fd)
    return proc.wait(timeout=60), out.decode(errors="replace")


def test_progress_bar_on_a_terminal_and_none_with_no_progress(folder: Path, tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn; the push runs on a pseudo-terminal, as typed by a person."""
    with HubStandIn() as hub:
        hub.cas_holds(sorted(folder.glob("*.pt.trace.json.gz")))
        env = hub_env(tmp_path / "hf", hub.endpoint)
        code, screen = _run_in_pty(["push", str(folder), "--repo", "me/a"], env)
        assert code == 0, screen
        assert "push 3 file(s)" in screen and "%|" in screen
        code, screen = _run_in_pty(["push", str(folder), "--repo", "me/b", "--no-progress"], env)
        assert code == 0, screen
        assert "push 3 file(s)" not in screen and "pushed 3 trace(s)" in screen
