"""Finding traces in a folder and the runner's manifest beside them."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from mlptui.contract.manifest import manifest_for
from mlptui.trace.parse.discover import find_traces, is_trace_name, looks_like_trace


@pytest.mark.parametrize(
    ("name", "ok"),
    [("w.1700000000.pt.trace.json", True), ("w.pt.trace.json.gz", True), ("trace.json", True),
     ("TRACE.JSON.GZ", True), ("manifest.json", False), (".hidden.json", False), ("notes.txt", False),
     ("trace.json.bak", False)],
)
def test_is_trace_name(name: str, ok: bool) -> None:
    assert is_trace_name(name) is ok


def test_sniffing_tells_traces_from_other_json(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b'{"schemaVersion": 1, "traceEvents": []}')
    (tmp_path / "b.json.gz").write_bytes(gzip.compress(b'[{"ph": "X"}]'))
    (tmp_path / "config.json").write_bytes(b'{"lr": 0.1}')
    (tmp_path / "c.pt.trace.json").write_bytes(b"")        # named like a trace: listed, then refused on open
    (tmp_path / "manifest.json").write_bytes(b'{"mlptui_manifest": 1, "runs": []}')
    (tmp_path / "sub").mkdir()
    assert [p.name for p in find_traces(tmp_path)] == ["a.json", "b.json.gz", "c.pt.trace.json"]
    assert not looks_like_trace(tmp_path / "config.json")


def test_corpus_folder_lists_every_profiler_trace(corpus_dir: Path) -> None:
    found = [p.name for p in find_traces(corpus_dir)]
    assert len(found) == 18
    assert "execution_trace__benchmark_simple_add_et.json.gz" not in found


def test_manifest_entry_for_a_sample(sample_trace: Callable[..., Path]) -> None:
    path = sample_trace("mlp", "compile")
    entry = manifest_for(path)
    assert entry is not None and entry["trace"] == path.name
    assert (entry["workload"], entry["mode"]) == ("mlp", "compile")


def test_manifest_absent_foreign_or_without_entry(tmp_path: Path) -> None:
    trace = tmp_path / "t.pt.trace.json"
    trace.write_bytes(b"[]")
    assert manifest_for(trace) is None
    (tmp_path / "manifest.json").write_bytes(b"{not json")
    assert manifest_for(trace) is None
    (tmp_path / "manifest.json").write_bytes(orjson.dumps({"mlptui_manifest": 2, "runs": [{"trace": "t.pt.trace.json"}]}))
    assert manifest_for(trace) is None
    (tmp_path / "manifest.json").write_bytes(orjson.dumps({"mlptui_manifest": 1, "runs": [{"trace": "other"}]}))
    assert manifest_for(trace) is None
    (tmp_path / "manifest.json").write_bytes(orjson.dumps({"mlptui_manifest": 1,
                                                           "runs": [{"trace": "t.pt.trace.json", "mode": "eager"}]}))
    assert manifest_for(trace) == {"trace": "t.pt.trace.json", "mode": "eager"}
