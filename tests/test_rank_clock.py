"""Stragglers from a shared clock where there is one. Ranks recorded on one host (their manifest's launcher
ran one node, or they name the same host) are compared by the raw start times of their collective kernels;
ranks of several hosts fall back on the shortest-kernel proxy, labelled as such. Checked on rank files
derived from the bundled two-GPU runs whose collective kernels end far apart, as large all-reduces do
(192 MiB across 4 H100s: ends 84 µs apart) — there the shortest kernel is not the last to start, and every
figure below is computed here from the files' raw events."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES

from mlptui.trace.analysis.ranks.ranks import rank_run, ranks_report
from mlptui.trace.parse.load import load_trace
from mlptui.trace.reports.ranks import RanksReport

TP_RUN = next(p for p in sorted(SAMPLES.glob("tp-mlp-*-x2-*")) if "delay" not in
              json.loads((p / "manifest.json").read_bytes())["distributed"])
END_SPREAD_US = 84.0        # how far apart the kernels of one call end, as on 192 MiB all-reduces
ARRIVAL_GAPS_US = (1.1, 12.5, 40.0)     # how long after the first rank the last one arrives, per call


def _read(path: Path) -> dict[str, Any]:
    with gzip.open(path) as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def _nccl(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted((e for e in doc["traceEvents"] if e.get("cat") == "kernel" and "nccl" in e["name"].lower()),
                  key=lambda e: e["ts"])


def derive(folder: Path, out: Path, *, manifest: bool = True, hosts: dict[int, str] | None = None,
           seq: bool = False, drop_first_on: int | None = None) -> dict[int, dict[str, Any]]:
    """Copy the run into `out` with the kernel of the rank that started last at each call moved to start
    ARRIVAL_GAPS_US after the first rank's and to end END_SPREAD_US after it (the early rank's kernel is
    then the shortest). `hosts`: a host per rank
    in the manifest entries; `seq`: NCCL's Seq on each kernel; `drop_first_on`: that rank loses its first
    collective kernel (as kernels dropped at a session's start). Returns each rank's written document."""
    out.mkdir()
    docs = {}
    for path in sorted(folder.glob("*.pt.trace.json.gz")):
        doc = _read(path)
        docs[doc["distributedInfo"]["rank"]] = (path.name, doc)
    kernels = {r: _nccl(doc) for r, (_, doc) in docs.items()}
    for call, gap in zip(zip(*kernels.values(), strict=True), ARRIVAL_GAPS_US, strict=True):
        first, last = min(call, key=lambda e: e["ts"]), max(call, key=lambda e: e["ts"])
        last["ts"] = round(first["ts"] + gap, 3)
        last["dur"] = round(first["dur"] - gap + END_SPREAD_US, 3)
        assert last["dur"] > first["dur"]
    for r, ks in kernels.items():
        for n, k in enumerate(ks):
            if seq:
                k["args"]["Seq"] = n + 1
        if drop_first_on == r:
            docs[r][1]["traceEvents"].remove(ks[0])
    for name, doc in docs.values():
        (out / name).write_bytes(gzip.compress(json.dumps(doc).encode()))
    if manifest:
        doc = json.loads((folder / "manifest.json").read_bytes())
        for run in doc["runs"]:
            if hosts is not None:
                run["host"] = hosts[run["rank"]]
        if hosts is not None:
            doc["distributed"]["launcher"] = "torch.distributed.run"     # says nothing of the hosts
        (out / "manifest.json").write_text(json.dumps(doc))
    return {r: doc for r, (_, doc) in docs.items()}


def report_of(folder: Path) -> RanksReport:
    ranked = rank_run([load_trace(p) for p in sorted(folder.glob("*.pt.trace.json.gz"))])
    assert ranked is not None
    return ranks_report(ranked)


def raw_calls(docs: dict[int, dict[str, Any]], by_seq: bool = False) -> list[dict[int, dict[str, Any]]]:
    """The calls as the files have them: the n-th NCCL kernel of every rank, or those of one Seq."""
    calls: dict[Any, dict[int, dict[str, Any]]] = {}
    for r, doc in docs.items():
        for n, k in enumerate(_nccl(doc)):
            calls.setdefault(k["args"]["Seq"] if by_seq else n, {})[r] = k
    return [calls[key] for key in sorted(calls)]


def test_one_host_names_the_rank_whose_kernel_starts_last_where_the_shortest_kernel_is_another(
        tmp_path: Path) -> None:
    docs = derive(TP_RUN, tmp_path / "run")
    report = report_of(tmp_path / "run")
    assert report.clock.shared and report.clock.arrival == "start"
    assert report.clock.matched_by == "order" and "one host" in report.clock.why
    calls = raw_calls(docs)
    assert len(report.calls) == len(calls) == 3
    for got, call in zip(report.calls, calls, strict=True):
        last = max(call, key=lambda r: call[r]["ts"])
        shortest = min(call, key=lambda r: call[r]["dur"])
        assert shortest != last                                   # the proxy would name the wrong rank
        starts = {r: k["ts"] for r, k in call.items()}
        assert got.last_rank == last
        assert got.late_us == pytest.approx(max(starts.values()) - min(starts.values()), abs=1e-3)
        assert got.late_by_rank == {str(r): pytest.approx(s - min(starts.values()), abs=1e-3)
                                       for r, s in starts.items()}
        # the transfer: the straggler's kernel, from its arrival to its end
        assert got.transfer_us == pytest.approx(call[last]["dur"], abs=1e-3)
    # per step and per rank, from the same measurement
    for step, call in zip(report.stragglers, calls, strict=True):
        last = max(call, key=lambda r: call[r]["ts"])
        assert step.rank == last and step.last_at == step.calls == 1
    for row in report.ranks:
        r = row.rank
        late = sum(c[r]["ts"] - min(k["ts"] for k in c.values()) for c in calls)
        wait = sum(max(k["ts"] for k in c.values()) - c[r]["ts"] for c in calls)
        assert row.late_us == pytest.approx(late, abs=1e-2)
        assert row.comm_wait_us == pytest.approx(wait, abs=1e-2)


def test_ranks_naming_one_host_share_its_clock(tmp_path: Path) -> None:
    docs = derive(TP_RUN, tmp_path / "run", hosts={0: "gpu-node-7", 1: "gpu-node-7"})
    report = report_of(tmp_path / "run")
    assert report.clock.shared and "gpu-node-7" in report.clock.why
    assert [c.last_rank for c in report.calls] == \
        [max(c, key=lambda r: c[r]["ts"]) for c in raw_calls(docs)]


@pytest.mark.parametrize("hosts", [{0: "gpu-node-7", 1: "gpu-node-8"}, None], ids=["two-hosts", "no-manifest"])
def test_without_a_shared_clock_the_proxy_is_used_and_labelled(tmp_path: Path, hosts: dict[int, str] | None,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    docs = derive(TP_RUN, tmp_path / "run", manifest=hosts is not None, hosts=hosts)
    report = report_of(tmp_path / "run")
    assert not report.clock.shared and report.clock.arrival == "duration proxy"
    assert "proxy" in report.clock.why
    for got, call in zip(report.calls, raw_calls(docs), strict=True):
        durs = {r: k["dur"] for r, k in call.items()}
        assert got.last_rank == min(durs, key=lambda r: durs[r])
        assert got.late_us == pytest.approx(max(durs.values()) - min(durs.values()), abs=1e-3)
    from mlptui.cli import main

    assert main(["summary", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    assert "straggler (proxy: shortest kernel)" in out and "straggler (arrived last)" not in out


def test_calls_are_matched_by_seq_when_one_rank_lost_a_kernel(tmp_path: Path) -> None:
    """Kineto copies NCCL's `Seq` from record_param_comms onto the GPU collective kernel as an int arg
    (pytorch/kineto 2b15a605651b, output_json.cpp: `", \\"Seq\\": {}"` appended to the kernel's args).
    Rank 1 loses its first kernel, as when kernels are dropped at a session's start: by order every later
    call would pair kernels of different calls; by Seq each pairs with its own."""
    docs = derive(TP_RUN, tmp_path / "run", seq=True, drop_first_on=1)
    report = report_of(tmp_path / "run")
    assert report.clock.matched_by == "seq"
    calls = [c for c in raw_calls(docs, by_seq=True) if len(c) == 2]
    assert len(calls) == 2 and len(report.calls) == 2
    for got, call in zip(report.calls, calls, strict=True):
        starts = {r: k["ts"] for r, k in call.items()}
        assert got.seq == call[0]["args"]["Seq"]
        assert got.last_rank == max(starts, key=lambda r: starts[r])
        assert got.late_us == pytest.approx(max(starts.values()) - min(starts.values()), abs=1e-3)


def test_the_bundled_runs_share_a_clock_by_their_manifest() -> None:
    for folder in sorted(SAMPLES.glob("*-x2-*")):
        report = report_of(folder)
        assert report.clock.shared, folder.name
        assert "--nnodes=1" in json.loads((folder / "manifest.json").read_bytes())["distributed"]["launcher"]


def test_a_copied_run_without_its_manifest_has_no_shared_clock(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    for p in TP_RUN.glob("*.pt.trace.json.gz"):
        shutil.copy(p, out / p.name)
    assert not report_of(out).clock.shared
