"""The straggler of a collective is the rank that arrives last (its collective kernel starts last, the others
wait for it); bus bandwidth is measured from that arrival, with the wait beside it. Checked on the
committed 2-rank runs against a plain reading of their events (both ranks ran on one host, as their
manifest's launcher says, so their kernels' start times share a clock and are read directly), and on
synthetic 4-rank runs where step time would name another rank."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, trace_bytes, x

from mlptui.trace.analysis.ranks.ranks import rank_run, ranks_report
from mlptui.trace.parse.load import load_trace
from mlptui.trace.reports.ranks import Straggler

RUNS = sorted(SAMPLES.glob("*-x2-*"))
IDS = [p.name.split("-64x")[0] + p.name.rsplit("-", 1)[1][:9] for p in RUNS]


def manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_bytes())


def raw_calls(folder: Path) -> tuple[list[dict[int, dict[str, Any]]], dict[int, int]]:
    """Every NCCL kernel of each rank as read from the files, the n-th of one (collective, size) on every
    rank paired up; each with the ProfilerStep its launching CPU op ran in. Also each rank's event count."""
    per_rank: dict[int, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("*.pt.trace.json.gz")):
        with gzip.open(path) as f:
            doc = json.load(f)
        rank = doc["distributedInfo"]["rank"]
        events = doc["traceEvents"]
        steps = [e for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("ph") == "X"]
        cpu_ts = {e["args"]["External id"]: e["ts"] for e in events
                  if e.get("cat") in ("cpu_op", "user_annotation") and "External id" in e.get("args", {})
                  and not e["name"].startswith("ProfilerStep#")}
        kernels = sorted((e for e in events if e.get("cat") == "kernel" and "nccl" in e["name"].lower()),
                         key=lambda e: e["ts"])
        rows = []
        for k in kernels:
            launched = cpu_ts[k["args"]["External id"]]
            step = next(s["name"] for s in steps if s["ts"] <= launched <= s["ts"] + s["dur"])
            rows.append({"kind": (k["args"]["Collective name"], k["args"]["In msg nelems"]), "ts": k["ts"],
                         "dur": k["dur"], "step": step})
        per_rank[rank] = rows
    calls: dict[tuple[Any, ...], dict[int, dict[str, Any]]] = {}
    for rank, rows in per_rank.items():
        seen: dict[Any, int] = defaultdict(int)
        for row in rows:
            calls.setdefault((*row["kind"], seen[row["kind"]]), {})[rank] = row
            seen[row["kind"]] += 1
    return list(calls.values()), {r: len(rows) for r, rows in per_rank.items()}


@pytest.mark.parametrize("folder", RUNS, ids=IDS)
def test_committed_runs_name_the_rank_whose_collectives_start_last(folder: Path) -> None:
    calls, _ = raw_calls(folder)
    assert calls and all(len(c) == 2 for c in calls)
    expected: dict[str, dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for c in calls:
        last = max(c, key=lambda r: c[r]["ts"])
        expected[c[last]["step"]][last] += max(k["ts"] for k in c.values()) - min(k["ts"] for k in c.values())
    report = ranks_report(rank_run([load_trace(p) for p in sorted(folder.glob("*.pt.trace.json.gz"))]))
    got = {s.step: s for s in report.stragglers}
    assert set(got) == set(expected)
    for step, by_rank in expected.items():
        rank = max(by_rank, key=lambda r: by_rank[r])
        assert got[step].rank == rank
        # one host: the spread of the raw start times, exactly
        assert got[step].late_us == pytest.approx(by_rank[rank], abs=1e-2)
    assert report.clock.shared and report.clock.arrival == "start"
    # the straggler never waits; the comm-wait column is the other side of the same measurement
    waits = {r.rank: r.comm_wait_us for r in report.ranks}
    stragglers = {s.rank for s in report.stragglers}
    assert all(waits[r] == 0 for r in stragglers)
    assert sum(s.late_us for s in report.stragglers) == pytest.approx(sum(waits.values()), abs=0.01)
    lasts = {r.rank: r.arrived_last for r in report.ranks}
    assert sum(lasts.values()) == len(calls)


@pytest.mark.parametrize("folder", RUNS, ids=IDS)
def test_bus_bandwidth_is_measured_from_the_last_arrival(folder: Path) -> None:
    calls, _ = raw_calls(folder)
    transfer: dict[tuple[int, Any], float] = defaultdict(float)
    wait: dict[tuple[int, Any], float] = defaultdict(float)
    count: dict[tuple[int, Any], int] = defaultdict(int)
    for c in calls:
        arrived = max(k["ts"] for k in c.values())
        for rank, k in c.items():
            transfer[(rank, k["kind"])] += k["ts"] + k["dur"] - arrived
            wait[(rank, k["kind"])] += arrived - k["ts"]
            count[(rank, k["kind"])] += 1
    report = ranks_report(rank_run([load_trace(p) for p in sorted(folder.glob("*.pt.trace.json.gz"))]))
    assert len(report.collectives) == len(transfer)
    for row in report.collectives:
        key = (row.rank, ("allreduce", row.bytes // 2))     # bf16: 2 bytes an element
        assert row.count == count[key]
        assert row.wait_us == pytest.approx(wait[key], abs=1e-2)
        assert row.transfer_us == pytest.approx(transfer[key], abs=1e-2)
        assert row.total_us == pytest.approx(row.wait_us + row.transfer_us, abs=1e-2)
        # 2 ranks: all-reduce's bus factor 2(n−1)/n is 1; bandwidth over the transfer checked just above
        assert row.busbw_gbps == pytest.approx(row.bytes * row.count / row.transfer_us / 1e3, rel=1e-3)
        assert row.busbw_gbps > row.bytes * row.count / row.total_us / 1e3 or row.wait_us == 0
    # the rank that waited moved its data about as fast as the one that did not: the kernels of a call end
    # within 25 µs of each other on these runs (0.3–23.6 µs)
    by_kind = defaultdict(list)
    for row in report.collectives:
        by_kind[row.bytes].append(row.transfer_us / row.count)
    assert all(max(v) - min(v) < 25.0 for v in by_kind.values())


def _rank(rank: int, world: int, arrivals: list[float], end: list[float]) -> bytes:
    """A rank with one step per entry: a GEMM, then an all-reduce launched at `arrivals[k]` that ends at
    `end[k]` on every rank (the collective finishes together). Every step spans the same window."""
    events = []
    for k, (start, stop) in enumerate(zip(arrivals, end, strict=True)):
        base = 1000.0 * k
        ext, corr = 10 * k + 1, 100 * k + 1
        events.append(x(f"ProfilerStep#{k}", "user_annotation", base, 900.0))
        events.append(x("record_param_comms", "cpu_op", base + start - 5, 3, **{"External id": ext}))
        events.append(x("cudaLaunchKernel", "cuda_runtime", base + start - 4, 2, correlation=corr,
                        **{"External id": ext}))
        events.append(x("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "kernel", base + start, stop - start, pid=0,
                        tid=20, correlation=corr, **{"External id": ext, "Collective name": "allreduce",
                                                     "In msg nelems": 1 << 20, "Out msg nelems": 1 << 20,
                                                     "Group size": world, "dtype": "Float"}))
    return trace_bytes(events, distributedInfo={"backend": "nccl", "rank": rank, "world_size": world})


def test_four_ranks_where_step_time_cannot_tell(tmp_path: Path) -> None:
    arrivals = {0: [100.0, 150.0], 1: [130.0, 120.0], 2: [400.0, 140.0], 3: [110.0, 610.0]}
    end = [700.0, 800.0]
    paths = []
    for rank, starts in arrivals.items():
        paths.append(tmp_path / f"rank-{rank}.pt.trace.json")
        paths[-1].write_bytes(_rank(rank, 4, starts, end))
    report = ranks_report(rank_run([load_trace(p) for p in paths]))
    for k, step in enumerate(report.stragglers):
        starts = {r: a[k] for r, a in arrivals.items()}
        last = max(starts, key=lambda r: starts[r])
        assert step == Straggler(step=f"ProfilerStep#{k}", rank=last, late_us=max(starts.values()) -
                                 min(starts.values()), last_at=1, calls=1)
    # every rank waited from its own arrival to the last one; the straggler's wait is 0
    for row in report.ranks:
        expected = sum(max(a[k] for a in arrivals.values()) - arrivals[row.rank][k] for k in range(2))
        assert row.comm_wait_us == pytest.approx(expected)
    # bus bandwidth over 4 ranks: bytes / (end − last arrival) × 2(n−1)/n, the same on every rank
    transfer = sum(end[k] - max(a[k] for a in arrivals.values()) for k in range(2))
    for row in report.collectives:
        assert row.busbw_gbps == pytest.approx(2 * (4 << 20) / transfer / 1e3 * 2 * 3 / 4, rel=1e-3)


DELAYED = [p for p in RUNS if "delay" in manifest(p)["distributed"]]


@pytest.mark.parametrize("folder", DELAYED, ids=[p.name.split("-64x")[0] for p in DELAYED])
def test_the_rank_delayed_on_purpose_is_named_the_straggler_of_every_step(folder: Path) -> None:
    """Recorded with `mlptui run … --nproc 2 --delay-rank R --delay-ms MS`: rank R sleeps before each step,
    so it reaches every collective at least MS late and the other rank waits for it."""
    delay = manifest(folder)["distributed"]["delay"]
    report = ranks_report(rank_run([load_trace(p) for p in sorted(folder.glob("*.pt.trace.json.gz"))]))
    assert [s.rank for s in report.stragglers] == [delay["rank"]] * 3
    for s in report.stragglers:
        assert s.last_at == s.calls and s.late_us >= 0.9 * delay["ms"] * 1000
    waits = {r.rank: r.comm_wait_us for r in report.ranks}
    assert waits[delay["rank"]] == 0 and waits[1 - delay["rank"]] >= 3 * 0.9 * delay["ms"] * 1000
    # the profiled steps of the two ranks differ by far less than the delay: step time cannot tell
    steps = {r.rank: [s.step_us for s in r.steps] for r in report.ranks}
    assert all(abs(a - b) < 0.2 * delay["ms"] * 1000 for a, b in zip(steps[0], steps[1], strict=True))


@pytest.mark.parametrize("folder", DELAYED, ids=[p.name.split("-64x")[0] for p in DELAYED])
def test_the_text_report_lists_the_latest_arrivals(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from mlptui.cli import main

    calls, _ = raw_calls(folder)
    spread = sorted((max(k["ts"] for k in c.values()) - min(k["ts"] for k in c.values()),
                     max(c, key=lambda r: c[r]["ts"])) for c in calls)
    assert main(["summary", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(i for i, ln in enumerate(lines) if "arrived last" in ln and "late by" in ln)
    rows = lines[head + 2:head + 2 + len(calls)]
    # latest arrival first, each naming the rank whose kernel started last
    assert all(f"rank {rank}" in row for row, (_, rank) in zip(rows, reversed(spread), strict=True))
    late_ms = [float(row.split("rank ")[1].split()[1]) for row in rows]
    assert late_ms == sorted(late_ms, reverse=True)
    assert late_ms[0] == pytest.approx(spread[-1][0] / 1000, abs=0.03)


def test_both_delayed_runs_are_committed() -> None:
    assert sorted((manifest(p)["distributed"]["delay"]["rank"], p.name.split("-eager")[0]) for p in DELAYED) == \
        [(0, "mlp-train"), (1, "tp-mlp")]
