"""load_many: traces load in worker processes, each result as it is ready, errors per file; 64 tiny ranks
load and reduce to the right stragglers."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, find_sample, trace_bytes, x

from mlptui.base.errors import MlptuiError
from mlptui.trace.analysis.rank_reduce import rank_digest, reduce_ranks
from mlptui.trace.analysis.summary import summarize
from mlptui.trace.parse import index_cache
from mlptui.trace.parse import load_many as load_many_module
from mlptui.trace.parse.load import load_trace
from mlptui.trace.parse.load_many import load_many

GENERATOR = ROOT.parent / "shared" / "tools" / "gen_kineto_trace.py"


def _rank_trace(rank: int, step_us: list[float]) -> bytes:
    """A tiny rank: ProfilerStep#k annotations with an op and a kernel in each."""
    events, ts = [], 0.0
    for k, dur in enumerate(step_us):
        events.append(x(f"ProfilerStep#{k}", "user_annotation", ts, dur))
        events.append(x("aten::mm", "cpu_op", ts + 1, 5, **{"External id": 10 + k}))
        events.append(x("cudaLaunchKernel", "cuda_runtime", ts + 2, 2, correlation=100 + k, **{"External id": 10 + k}))
        events.append(x("gemm_kernel", "kernel", ts + 4, 3, pid=0, tid=7, correlation=100 + k,
                        **{"External id": 10 + k}))
        ts += dur + 10
    return trace_bytes(events, distributedInfo={"backend": "nccl", "rank": rank, "world_size": 64})


def test_good_files_load_and_bad_ones_fail_alone(tmp_path: Path) -> None:
    good = [tmp_path / f"rank-{r}.pt.trace.json" for r in range(3)]
    shutil.copyfile(find_sample("mlp", "eager"), good[0])
    shutil.copyfile(find_sample("mlp", "compile"), good[1])
    good[2].write_bytes(_rank_trace(2, [100.0, 120.0]))
    bad = tmp_path / "rank-3.pt.trace.json"
    bad.write_bytes(b"{ not json")
    missing = tmp_path / "rank-4.pt.trace.json"
    seen: dict[str, list[tuple[int, int]]] = {}
    results = dict(load_many([*good, bad, missing], workers=2,
                             on_progress=lambda p, d, t: seen.setdefault(p, []).append((d, t))))
    assert sorted(results) == sorted(str(p) for p in [*good, bad, missing])
    for p in good:
        trace = results[str(p)]
        assert not isinstance(trace, MlptuiError)
        assert orjson.dumps(summarize(trace)) == orjson.dumps(summarize(load_trace(p)))
        assert trace.gpu_args(0) == load_trace(p).gpu_args(0)
        assert seen[str(p)][-1] == (p.stat().st_size, p.stat().st_size)
    for p in (bad, missing):
        err = results[str(p)]
        assert isinstance(err, MlptuiError) and str(p) in str(err) and "\n" not in str(err)
    assert "no such file" in str(results[str(missing)])


def test_one_worker_loads_in_this_process(tmp_path: Path) -> None:
    p = tmp_path / "rank-0.json"
    p.write_bytes(_rank_trace(0, [50.0]))
    [(name, trace)] = list(load_many([p], workers=4))
    assert name == str(p) and not isinstance(trace, MlptuiError) and len(trace.steps) == 1


def test_64_tiny_ranks_load_and_reduce(tmp_path: Path) -> None:
    times = {r: [100.0 + r, 200.0 + (r % 5), 300.0] for r in range(64)}
    times[17][1] = 900.0        # the straggler of step 1
    times[40][2] = 450.0        # and of step 2
    paths = []
    for r, t in times.items():
        paths.append(tmp_path / f"rank-{r}.pt.trace.json")
        paths[-1].write_bytes(_rank_trace(r, t))
    results = dict(load_many(paths, workers=2))
    assert len(results) == 64 and not any(isinstance(t, MlptuiError) for t in results.values())
    digests = [rank_digest(results[str(p)]) for p in paths]
    assert sorted(d.rank for d in digests) == list(range(64))
    assert all(d.gpu_busy_us == (3.0, 3.0, 3.0) for d in digests)
    run = reduce_ranks(digests)
    for k, step in enumerate(run.steps):
        col = [times[r][k] for r in range(64)]
        assert step.name == f"ProfilerStep#{k}" and step.ranks == 64
        assert (step.min_us, step.max_us, step.median_us) == (min(col), max(col), statistics.median(col))
        assert step.slower_by_us == pytest.approx(max(col) - statistics.median(col))
    assert [s.straggler for s in run.steps] == [63, 17, 40]


@pytest.mark.slow
def test_workers_write_the_cache_and_the_parent_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load_many_module, "PARALLEL_MIN_BYTES", 0)     # these 5 MB ranks go to workers
    if not GENERATOR.exists():
        pytest.skip(f"generator not found at {GENERATOR}")
    paths = [tmp_path / f"rank-{r}.json" for r in range(2)]
    for r, p in enumerate(paths):
        subprocess.run([sys.executable, str(GENERATOR), str(p), "--mb", "5", "--rank", str(r)], check=True,
                       capture_output=True)
    results = dict(load_many(paths, workers=2))
    for p in paths:
        assert index_cache.has_entry(p)
        trace = results[str(p)]
        assert "ops" not in trace.__dict__          # read back from the cache entry
        assert orjson.dumps(summarize(trace)) == orjson.dumps(summarize(load_trace(p)))
