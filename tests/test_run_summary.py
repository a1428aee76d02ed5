"""`mlptui summary RUN_DIR` as a map to per-rank digests and one reduce: a broken rank is left out and
named, a folder that is not one run says why, each file is hashed once, a warm cache reads no trace,
worker processes give the same report as this process and none is left running afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest
from conftest import kineto_generator, trace_bytes, x

from mlptui.cli import main
from mlptui.trace.parse import index_cache
from mlptui.trace.parse import load as load_module
from mlptui.trace.parse.rank_hint import rank_files
from mlptui.trace.runs import local_map
from mlptui.trace.runs.run_summary import summarize_run


def tiny_rank(rank: int, world: int, arrive: float = 10.0) -> bytes:
    """One step with a GEMM and an all-reduce that starts `arrive` µs in and ends at 150 µs."""
    events = [x("ProfilerStep#1", "user_annotation", 0, 200), x("aten::mm", "cpu_op", 1, 5, **{"External id": 1}),
              x("cudaLaunchKernel", "cuda_runtime", 2, 2, correlation=7, **{"External id": 1}),
              x("gemm_kernel", "kernel", 4, 3, pid=0, tid=7, correlation=7, **{"External id": 1}),
              x("record_param_comms", "cpu_op", arrive - 2, 1, **{"External id": 2}),
              x("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", arrive, 150 - arrive, pid=0, tid=9,
                **{"External id": 2, "Collective name": "allreduce", "In msg nelems": 64, "Out msg nelems": 64,
                   "Group size": world, "dtype": "Float"})]
    return trace_bytes(events, distributedInfo={"backend": "nccl", "rank": rank, "world_size": world})


def test_a_broken_rank_is_left_out_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for r in range(3):
        (tmp_path / f"rank-{r}.pt.trace.json").write_bytes(tiny_rank(r, 4, arrive=10.0 + 30 * (r == 2)))
    broken = tmp_path / "rank-3.pt.trace.json"
    broken.write_bytes(b"{ not json")
    assert main(["summary", str(tmp_path), "--json"]) == 0
    captured = capsys.readouterr()
    doc = orjson.loads(captured.out)
    assert [r["rank"] for r in doc["ranks"]["ranks"]] == [0, 1, 2]
    (failed,) = doc["failed"]
    assert failed.startswith(f"{broken}: ") and "\n" not in failed
    assert f"rank left out: {broken}: " in captured.err
    assert [s["rank"] for s in doc["ranks"]["stragglers"]] == [2]          # arrived 30 µs after the others


def test_a_folder_that_is_not_one_run_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.pt.trace.json").write_bytes(tiny_rank(1, 2))
    (tmp_path / "b.pt.trace.json").write_bytes(tiny_rank(1, 2))
    assert main(["summary", str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("not one run: rank 1 appears twice (a.pt.trace.json and b.pt.trace.json)\n")
    assert main(["summary", str(tmp_path), "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    assert doc["ranks"] is None and doc["not_a_run"].startswith("rank 1 appears twice")


def _big_ranks(folder: Path, mb: int, n: int = 2) -> list[Path]:
    gen = kineto_generator()
    folder.mkdir(exist_ok=True)
    paths = [folder / f"rank-{r}.pt.trace.json" for r in range(n)]
    for r, p in enumerate(paths):
        gen.generate(str(p), mb, seed=r, rank=r, world_size=n)
    return paths


def test_each_file_is_hashed_once_and_a_warm_cache_parses_nothing(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("MLPTUI_NO_CACHE", raising=False)
    paths = _big_ranks(tmp_path / "run", 2)           # over index_cache.MIN_BYTES: both caches in play
    hashed: list[str] = []
    real = index_cache._compute_key

    def counting(path, *rest):
        hashed.append(str(path))
        return real(path, *rest)

    monkeypatch.setattr(index_cache, "_compute_key", counting)
    files = rank_files(paths)
    cold = summarize_run(files, workers=1)
    assert sorted(hashed) == sorted(map(str, paths)) and cold.cached == 0 and not cold.failed
    # only the digests are kept: an index entry per rank would cost more to write than a run saves
    assert not any(index_cache.has_entry(p) for p in paths)
    hashed.clear()

    def no_parsing(*args, **kwargs):
        raise AssertionError("a warm run parsed a trace")

    monkeypatch.setattr(load_module, "load_trace", no_parsing)
    warm = summarize_run(files, workers=1)
    assert sorted(hashed) == sorted(map(str, paths)) and warm.cached == 2
    assert orjson.dumps(warm.report) == orjson.dumps(cold.report)


@pytest.mark.slow
def test_worker_processes_give_the_same_report_and_none_is_left_running(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _big_ranks(tmp_path / "run", 9)           # over PARALLEL_MIN_BYTES: read in worker processes
    assert all(p.stat().st_size >= local_map.PARALLEL_MIN_BYTES for p in paths)
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    here = summarize_run(rank_files(paths), workers=1)          # in this process
    mark = uuid.uuid4().hex
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "MLPTUI_TEST_MARK": mark}
    env.pop("MLPTUI_NO_CACHE")
    res = subprocess.run([sys.executable, "-m", "mlptui.cli", "summary", str(tmp_path / "run"), "--json"],
                         env=env, capture_output=True, text=True, timeout=240)
    assert res.returncode == 0, res.stderr
    assert orjson.loads(res.stdout)["ranks"] == orjson.loads(orjson.dumps(here.report))
    assert len(list((tmp_path / "cache").rglob("*.digest.json"))) == 2       # written by the worker processes
    time.sleep(0.5)
    left = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if mark.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                    left.append(pid)
            except OSError:
                continue
    assert left == []


def test_load_many_hashes_each_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The viewer's loader too: the cache check, the lookup and the write share one hash of each file."""
    from mlptui.trace.parse.load_many import load_many

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("MLPTUI_NO_CACHE", raising=False)
    paths = _big_ranks(tmp_path / "run", 2)
    hashed: list[str] = []
    real = index_cache._compute_key

    def counting(path, *rest):
        hashed.append(str(path))
        return real(path, *rest)

    monkeypatch.setattr(index_cache, "_compute_key", counting)
    for rounds in (1, 2):      # cold (entries written), then warm (entries read)
        hashed.clear()
        assert not any(isinstance(t, Exception) for _, t in load_many(paths, workers=1))
        assert sorted(hashed) == sorted(map(str, paths)), rounds
        assert all(index_cache.has_entry(p) for p in paths)
