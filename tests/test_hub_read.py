"""Reading `hf://` traces through mlptui.sources.dispatch, in a child process with the Hub's own environment
variables (HF_ENDPOINT, HF_HOME, HF_HUB_OFFLINE): online against HubStandIn (tests/test_hub_standin.py,
a local HTTP server on 127.0.0.1, not the Hub), and offline from a Hub cache that is either filled by a
first read or built by hand here the way huggingface_hub lays it out (refs/, blobs/, snapshots/)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from test_hub_standin import (
    CLOSED_PORT_ENDPOINT,
    HubStandIn,
    git_blob_sha1,
    hub_env,
    run_mlptui,
    run_python,
    sample_traces,
)

OPEN_AND_LIST = """
import json, sys
from mlptui.base.errors import MlptuiError
from mlptui.sources.dispatch import is_folder, list_traces, open_trace
out = {}
try:
    for spec in sys.argv[1:]:
        if is_folder(spec):
            out[spec] = list_traces(spec)
        else:
            t = open_trace(spec)
            out[spec] = {"source": t.source, "gpu": len(t.gpu), "device": t.device_name,
                         "manifest": (t.manifest or {}).get("mode")}
except MlptuiError as exc:
    out = {"error": str(exc)}
print(json.dumps(out))
"""


def _read(specs: list[str], env: dict[str, str]) -> dict:
    code = "import sys; sys.argv = [''] + " + repr(specs) + "\n" + OPEN_AND_LIST
    r = run_python(code, env)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _seed() -> tuple[dict[str, bytes], Path]:
    traces = sample_traces()[:2]
    files = {f"run-1/{t.name}": t.read_bytes() for t in traces}
    files["run-1/manifest.json"] = (traces[0].parent / "manifest.json").read_bytes()
    files["README.md"] = b"# traces\n"
    return files, traces[0]


def test_dataset_trace_opens_online_then_offline_from_the_hub_cache(tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn (tree listing and resolve), then no server at all (HF_HUB_OFFLINE=1)."""
    files, first = _seed()
    folder = "hf://datasets/me/profiling-traces/run-1/"
    spec = f"hf://datasets/me/profiling-traces/run-1/{first.name}"
    with HubStandIn() as hub:
        hub.add_repo_files("dataset", "me/profiling-traces", files)
        online = _read([folder, spec], hub_env(tmp_path, hub.endpoint))
    want_list = sorted(f"hf://datasets/me/profiling-traces/{p}" for p in files if p.endswith(".gz"))
    assert online[folder] == want_list
    assert online[spec]["source"] == spec and online[spec]["gpu"] > 0 and online[spec]["device"]
    assert online[spec]["manifest"] in ("eager", "compile", "reduce-overhead")  # manifest.json beside it
    snapshots = list((tmp_path / "hub" / "datasets--me--profiling-traces" / "snapshots").iterdir())
    assert len(snapshots) == 1 and (snapshots[0] / "run-1" / first.name).read_bytes() == first.read_bytes()

    offline_env = hub_env(tmp_path, CLOSED_PORT_ENDPOINT, offline=True)
    offline = _read([folder, spec], offline_env)
    assert offline[spec] == online[spec]
    assert offline[folder] == [s for s in want_list if s == spec]  # only what was read is cached

    summary = run_mlptui(["summary", spec, "--json"], offline_env)
    assert summary.returncode == 0, summary.stderr
    assert json.loads(summary.stdout)  # the headless report of a trace read from the Hub cache


def test_unreachable_hub_falls_back_to_the_cache(tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn for the first read, then a closed port (network down), not offline mode."""
    files, first = _seed()
    spec = f"hf://datasets/me/profiling-traces/run-1/{first.name}"
    with HubStandIn() as hub:
        hub.add_repo_files("dataset", "me/profiling-traces", files)
        online = _read([spec], hub_env(tmp_path, hub.endpoint))
    assert _read([spec], hub_env(tmp_path, CLOSED_PORT_ENDPOINT)) == online


def _hand_built_cache(hub_cache: Path, repo_folder: str, files: dict[str, bytes], revision: str = "main") -> str:
    """A repo in the Hub cache as huggingface_hub writes it: blobs named by etag, a snapshot per commit whose
    files are relative symlinks to the blobs, and refs/<revision> holding the commit hash."""
    commit = hashlib.sha1(repr(sorted(files)).encode()).hexdigest()
    repo = hub_cache / repo_folder
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / revision).write_text(commit)
    for path, data in files.items():
        etag = hashlib.sha256(data).hexdigest() if len(data) > 10_000 else git_blob_sha1(data)
        blob = repo / "blobs" / etag
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(data)
        link = repo / "snapshots" / commit / path
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    return commit


def test_offline_reads_from_a_cache_laid_out_like_huggingface_hub(tmp_path: Path) -> None:
    """No Hub and no stand-in: HF_HUB_OFFLINE=1 and a cache written by the test in huggingface_hub's layout.
    huggingface_hub's own cache scanner must see the same repo (so the layout is the real one)."""
    files, first = _seed()
    commit = _hand_built_cache(tmp_path / "hub", "datasets--me--profiling-traces", files)
    env = hub_env(tmp_path, CLOSED_PORT_ENDPOINT, offline=True)
    spec = f"hf://datasets/me/profiling-traces/run-1/{first.name}"
    got = _read(["hf://datasets/me/profiling-traces/", spec], env)
    assert got["hf://datasets/me/profiling-traces/"] == sorted(
        f"hf://datasets/me/profiling-traces/{p}" for p in files if p.endswith(".gz"))
    assert got[spec]["source"] == spec and got[spec]["gpu"] > 0
    pinned = _read([f"hf://datasets/me/profiling-traces@{commit}/run-1/{first.name}"], env)
    assert list(pinned.values())[0]["gpu"] == got[spec]["gpu"]

    scan = run_python("from huggingface_hub import scan_cache_dir; r = scan_cache_dir(); "
                      "print([(x.repo_id, x.repo_type, x.nb_files) for x in r.repos], len(r.warnings))", env)
    assert scan.stdout.strip() == f"[('me/profiling-traces', 'dataset', {len(files)})] 0", scan.stderr

    missing = _read(["hf://datasets/me/profiling-traces/run-1/other.pt.trace.json.gz"], env)
    assert "not in the local Hub cache" in missing["error"] and "HF_HUB_OFFLINE=1" in missing["error"]


def test_bucket_traces_list_open_and_stay_readable_offline(tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn's bucket API (tree, paths-info) and bucket resolve URLs; then offline."""
    files, first = _seed()
    spec = f"hf://buckets/me/my-traces/run-1/{first.name}"
    with HubStandIn() as hub:
        hub.add_bucket_files("me/my-traces", files)
        online = _read(["hf://buckets/me/my-traces/", spec], hub_env(tmp_path, hub.endpoint))
    assert online["hf://buckets/me/my-traces/"] == sorted(
        f"hf://buckets/me/my-traces/{p}" for p in files if p.endswith(".gz"))
    assert online[spec]["gpu"] > 0
    offline = _read([spec, "hf://buckets/me/my-traces/run-1"], hub_env(tmp_path, CLOSED_PORT_ENDPOINT, offline=True))
    assert offline[spec] == online[spec]
    assert offline["hf://buckets/me/my-traces/run-1"] == [spec]
    # network down (not offline mode): one probe fails at once, then the cache answers (no retries)
    down = run_python("import sys; sys.argv = [''] + " + repr([spec, "hf://buckets/me/my-traces/"]) + "\n"
                      + OPEN_AND_LIST, hub_env(tmp_path, CLOSED_PORT_ENDPOINT), timeout=15)
    assert json.loads(down.stdout.splitlines()[-1]) == {spec: online[spec], "hf://buckets/me/my-traces/": [spec]}


def test_private_repo_without_a_token_is_one_clear_error(tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn with a private dataset; the reader has no token."""
    files, first = _seed()
    with HubStandIn() as hub:
        hub.add_repo_files("dataset", "me/secret", files, private=True)
        got = _read([f"hf://datasets/me/secret/run-1/{first.name}"], hub_env(tmp_path, hub.endpoint, token=None))
    assert "no such repo" in got["error"] and "\n" not in got["error"]


def test_download_progress_goes_to_the_callers_callback_and_draws_no_bar(tmp_path: Path) -> None:
    """Stand-in for the Hub: HubStandIn (dataset resolve and bucket resolve URLs). The app passes a progress
    callback and owns the screen, so the download must report to it and print nothing."""
    files, first = _seed()
    size = len(files[f"run-1/{first.name}"])
    code = (
        "import json, sys\n"
        "from mlptui.sources.hub import fetch_file\n"
        "from mlptui.sources.hub_spec import parse_hf_spec\n"
        "calls = {}\n"
        "for spec in sys.argv[1:]:\n"
        "    seen = calls.setdefault(spec, [])\n"
        "    fetch_file(parse_hf_spec(spec), progress=lambda done, total, seen=seen: seen.append([done, total]))\n"
        "print(json.dumps(calls))\n"
    )
    specs = [f"hf://datasets/me/t/run-1/{first.name}", f"hf://buckets/me/b/run-1/{first.name}"]
    with HubStandIn() as hub:
        hub.add_repo_files("dataset", "me/t", files)
        hub.add_bucket_files("me/b", files)
        env = hub_env(tmp_path, hub.endpoint)
        env.pop("HF_HUB_DISABLE_PROGRESS_BARS")
        r = run_python("import sys; sys.argv = [''] + " + repr(specs) + "\n" + code, env)
    assert r.returncode == 0, r.stderr
    assert "%|" not in r.stderr and "it/s" not in r.stderr
    calls = json.loads(r.stdout.splitlines()[-1])
    for spec in specs:
        assert calls[spec] and calls[spec][-1] == [size, size], spec  # the download, told in bytes of the file


def test_a_huggingface_hub_without_buckets_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """No Hub needed: the installed client is made to look like an old one without the bucket API."""
    from huggingface_hub import HfApi

    from mlptui.base.errors import MlptuiError
    from mlptui.sources.dispatch import list_traces, open_trace

    monkeypatch.delattr(HfApi, "bucket_info")
    for call in (open_trace, list_traces):
        with pytest.raises(MlptuiError, match="has no bucket support"):
            call("hf://buckets/me/b/x.pt.trace.json.gz" if call is open_trace else "hf://buckets/me/b/")
