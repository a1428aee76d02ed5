"""The manifest contract: one reader and one writer shared by runners, push and the viewer."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import orjson
import pytest

from mlptui.contract.manifest import ManifestError, add_run, manifest_for, read_manifest


def _add_many(folder: str, prefix: str, n: int) -> None:
    for i in range(n):
        add_run(folder, {"trace": f"{prefix}-{i}.pt.trace.json.gz", "i": i})


def test_two_processes_adding_200_runs_each_keep_all_400(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_add_many, args=(str(tmp_path), p, 200)) for p in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    runs = read_manifest(tmp_path).runs
    assert len(runs) == 400
    assert {r["trace"] for r in runs} == {f"{p}-{i}.pt.trace.json.gz" for p in "ab" for i in range(200)}


def test_unknown_keys_and_published_links_survive_an_update(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_bytes(orjson.dumps(
        {"mlptui_manifest": 1, "runs": [{"trace": "a.json"}, "not an object"], "published": {"a.json": {}},
         "note": "kept"}))
    add_run(tmp_path, {"trace": "b.json"})
    data = orjson.loads((tmp_path / "manifest.json").read_bytes())
    assert data["note"] == "kept" and data["published"] == {"a.json": {}}
    assert [r["trace"] for r in data["runs"]] == ["a.json", "b.json"]   # the non-object entry is dropped


def test_the_viewer_reads_a_broken_or_foreign_manifest_as_none(tmp_path: Path) -> None:
    trace = tmp_path / "a.json"
    assert manifest_for(trace) is None                       # no manifest at all
    (tmp_path / "manifest.json").write_text("{not json")
    assert manifest_for(trace) is None
    with pytest.raises(ManifestError, match="not valid JSON"):
        read_manifest(tmp_path)                              # a writer must not clobber it
    (tmp_path / "manifest.json").write_bytes(orjson.dumps({"mlptui_manifest": 99, "runs": []}))
    with pytest.raises(ManifestError, match="version 99"):
        read_manifest(tmp_path)
    (tmp_path / "manifest.json").write_bytes(orjson.dumps({"mlptui_manifest": 1, "runs": [{"trace": "a.json",
                                                                                          "mode": "eager"}]}))
    assert manifest_for(trace) == {"trace": "a.json", "mode": "eager"}


def test_the_runners_registry_and_the_contract_vocabulary_agree() -> None:
    from mlptui.contract.vocabulary import WORKLOAD_NAMES
    from mlptui.runners.workloads.registry import WORKLOADS

    assert tuple(WORKLOADS) == WORKLOAD_NAMES     # one list: the picker sorts by it, the runner builds from it
