"""A rank run says what happened to every rank: a rank file that cannot be read (empty, a named pipe,
not JSON, damaged, a gzip bomb) is named with its reason in the report, the `--json` `failed` list and
stderr, whatever its name; a worker process that dies or runs out of memory costs only its rank, which
is read once more on its own before it is reported."""

from __future__ import annotations

import gzip
import os
import random
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
import rank_workers
from test_run_summary import tiny_rank

from mlptui.cli import main
from mlptui.sources.local import list_traces
from mlptui.trace.runs import local_map
from mlptui.trace.runs.run_summary import summarize_run

BAD_RANKS: dict[str, tuple[Callable[[Path], object], str]] = {
    "empty": (lambda p: p.write_bytes(b""), "empty file"),
    "named pipe": (os.mkfifo, "named pipe"),
    "not JSON": (lambda p: p.write_bytes(b"hello, not a trace"), "not JSON"),
    # garbage that cannot begin a JSON document or a gzip stream (random bytes opening with `{` read as
    # "not valid JSON (…)"), the same bytes every run
    "damaged": (lambda p: p.write_bytes(b"\x00" + random.Random(4096).randbytes(4095)), "not JSON"),
    "gzip of zeros": (lambda p: p.write_bytes(gzip.compress(bytes(64 << 20))), "not JSON"),
    "gzip bomb": (lambda p: p.write_bytes(gzip.compress(b'{"traceEvents": [' + b" " * (64 << 20) + b"]}")),
                  "decompression bomb"),
    "gzip cut short": (lambda p: p.write_bytes(gzip.compress(tiny_rank(3, 4))[:20]), "gzip"),
}


@pytest.mark.parametrize("suffix", [".json", ".pt.trace.json"])
@pytest.mark.parametrize("kind", list(BAD_RANKS))
def test_a_rank_that_cannot_be_read_is_named_with_why(tmp_path: Path, kind: str, suffix: str,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    for r in range(3):
        (tmp_path / f"rank-{r}{suffix}").write_bytes(tiny_rank(r, 4))
    make, why = BAD_RANKS[kind]
    bad = tmp_path / f"rank-3{suffix}"
    make(bad)
    assert str(bad) in list_traces(str(tmp_path))          # listed, as the picker lists it, with its row's error
    assert main(["summary", str(tmp_path), "--json"]) == 0
    captured = capsys.readouterr()
    doc = orjson.loads(captured.out)
    assert [r["rank"] for r in doc["ranks"]["ranks"]] == [0, 1, 2]
    (failed,) = doc["failed"]
    assert failed.startswith(f"{bad}: ") and why in failed and "\n" not in failed
    assert f"mlptui: rank left out: {failed}" in captured.err
    assert main(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("run of 3 rank(s), world size 4") and f"left out (could not be read): {failed}" in out


def test_a_json_document_that_is_not_a_trace_is_still_left_out(tmp_path: Path) -> None:
    for r in range(2):
        (tmp_path / f"rank-{r}.json").write_bytes(tiny_rank(r, 2))
    (tmp_path / "config.json").write_bytes(b'{"lr": 0.1}')
    (tmp_path / "list.json").write_bytes(b"[1, 2]")            # a bare array is a trace's form: listed
    assert [Path(p).name for p in list_traces(str(tmp_path))] == ["list.json", "rank-0.json", "rank-1.json"]


def _ranks(folder: Path, n: int = 4) -> list[tuple[int, Path]]:
    files = []
    for r in range(n):
        path = folder / f"rank-{r}.pt.trace.json"
        path.write_bytes(tiny_rank(r, n))
        files.append((r, path))
    return files


@pytest.mark.parametrize(("stand_in", "why"), [
    (rank_workers.dies_on_doomed_rank, "the worker process reading it died, twice"),
    (rank_workers.out_of_memory_on_doomed_rank, "ran out of memory reading it, twice"),
])
def test_a_worker_that_dies_costs_only_its_rank(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                stand_in: Callable[..., object], why: str) -> None:
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    monkeypatch.setattr(local_map, "PARALLEL_MIN_BYTES", 0)       # tiny ranks go to worker processes too
    monkeypatch.setattr(local_map, "digest_batch", stand_in)
    files = _ranks(tmp_path)
    run = summarize_run(files, workers=2)
    assert run.report is not None
    assert [r.rank for r in run.report.ranks] == [0, 1, 3]
    assert run.failed == [f"{files[2][1]}: {why} (killed, or out of memory)" if "died" in why
                          else f"{files[2][1]}: {why}"]


def test_ranks_in_flight_when_a_worker_dies_are_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one batch of all four ranks: the death of its worker took the three others with it, the first time
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    monkeypatch.setattr(local_map, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(local_map, "digest_batch", rank_workers.dies_on_doomed_rank)
    files = _ranks(tmp_path)
    results = {Path(r.path).name: r for r in local_map.map_local([(str(p), None) for _, p in files], workers=2)}
    assert sorted(results) == [p.name for _, p in files]
    assert [name for name, r in sorted(results.items()) if r.digest is None] == ["rank-2.pt.trace.json"]


def test_opening_a_run_loses_only_the_rank_whose_worker_dies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the explorer opens a run's ranks through load_many: the same promise
    from mlptui.base.errors import MlptuiError
    from mlptui.trace.parse import load_many as load_many_module

    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    monkeypatch.setattr(load_many_module, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(load_many_module, "_index_one", rank_workers.index_dies_on_doomed_rank)
    files = _ranks(tmp_path)
    results = dict(load_many_module.load_many([p for _, p in files], workers=2))
    assert sorted(results) == sorted(str(p) for _, p in files)
    lost = {name: r for name, r in results.items() if isinstance(r, MlptuiError)}
    assert list(lost) == [str(files[2][1])]
    assert str(lost[str(files[2][1])]) == (f"{files[2][1]}: the worker process loading it died, twice "
                                            "(killed, or out of memory)")
    assert all(len(r.gpu) == 2 for name, r in results.items() if name not in lost)   # gemm + all-reduce


def test_a_rank_that_runs_this_process_out_of_memory_is_reported(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # small ranks are read in this process: a MemoryError there is that rank's, not the run's
    real = local_map.digest_file

    def digest(path: str, key: dict | None = None):
        if "rank-2." in path:
            raise MemoryError
        return real(path, key)

    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    monkeypatch.setattr(local_map, "digest_file", digest)
    files = _ranks(tmp_path)
    run = summarize_run(files)
    assert run.report is not None and [r.rank for r in run.report.ranks] == [0, 1, 3]
    assert run.failed == [f"{files[2][1]}: ran out of memory reading it"]
