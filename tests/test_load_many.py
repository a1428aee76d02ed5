"""load_many: traces load in worker processes, each result as it is ready, errors per file; 64 tiny ranks
load and reduce to the right stragglers (the rank that arrives last at each step's all-reduce)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import GENERATOR, find_sample, trace_bytes, x

from mlptui.base.errors import MlptuiError
from mlptui.trace.analysis.ranks.rank_digest import rank_digest
from mlptui.trace.analysis.ranks.ranks import reduce_digests
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.parse import index_cache
from mlptui.trace.parse import load_many as load_many_module
from mlptui.trace.parse.load import load_trace
from mlptui.trace.parse.load_many import load_many


def _rank_trace(rank: int, step_us: list[float], arrive_us: list[float] | None = None) -> bytes:
    """A tiny rank: ProfilerStep#k annotations with an op and a kernel in each; with `arrive_us`, an
    all-reduce too, starting that long into the step and ending 20 µs before the step does."""
    events, ts = [], 0.0
    for k, dur in enumerate(step_us):
        events.append(x(f"ProfilerStep#{k}", "user_annotation", ts, dur))
        events.append(x("aten::mm", "cpu_op", ts + 1, 5, **{"External id": 10 + k}))
        events.append(x("cudaLaunchKernel", "cuda_runtime", ts + 2, 2, correlation=100 + k, **{"External id": 10 + k}))
        events.append(x("gemm_kernel", "kernel", ts + 4, 3, pid=0, tid=7, correlation=100 + k,
                        **{"External id": 10 + k}))
        if arrive_us is not None:
            a = arrive_us[k]
            events.append(x("record_param_comms", "cpu_op", ts + a - 2, 1, **{"External id": 50 + k}))
            events.append(x("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", ts + a, dur - 20 - a, pid=0,
                            tid=9, **{"External id": 50 + k, "Collective name": "allreduce",
                                      "In msg nelems": 256, "Out msg nelems": 256, "Group size": 64,
                                      "dtype": "Float"}))
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
    arrive = {r: [10.0 + r % 7, 12.0, 11.0 + r % 3] for r in range(64)}
    arrive[17][1] = 90.0        # the straggler of step 1
    arrive[40][2] = 45.0        # and of step 2
    paths = []
    for r, a in arrive.items():
        paths.append(tmp_path / f"rank-{r}.pt.trace.json")
        paths[-1].write_bytes(_rank_trace(r, [200.0, 200.0, 200.0], a))
    results = dict(load_many(paths, workers=2))
    assert len(results) == 64 and not any(isinstance(t, MlptuiError) for t in results.values())
    digests = [rank_digest(r, results[str(p)]) for r, p in enumerate(paths)]
    report = reduce_digests(digests)
    assert [r.rank for r in report.ranks] == list(range(64))
    for k, step in enumerate(report.stragglers):
        col = {r: arrive[r][k] for r in range(64)}
        last = max(col, key=lambda r: (col[r], -r))
        assert (step.step, step.rank, step.calls) == (f"ProfilerStep#{k}", last, 1)
        assert step.late_us == pytest.approx(max(col.values()) - min(col.values()))
    assert [s.rank for s in report.stragglers] == [6, 17, 40]


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
        assert not trace.objects_made          # read back from the cache entry
        assert orjson.dumps(summarize(trace)) == orjson.dumps(summarize(load_trace(p)))
