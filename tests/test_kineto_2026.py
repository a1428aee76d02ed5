"""Kineto's 2026 fields (schemaVersion still 1), on a fixture written from Kineto's writer code at the commits
tests/kineto_2026.py cites (185fe9c531af occupancy, 094d3c1d0723 channel, 041e7ce99f15 stream-sync row,
e8f56bd8cb58 hardware counters, 9612d061097c no WARNING/ERROR arrays). Every figure is computed here from
the fixture's raw events."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kineto_2026 as k26
import numpy as np
import orjson
import pytest

from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.model import Trace
from mlptui.trace.parse.load import load_trace
from mlptui.viewmodels.detail_text import gpu_details
from mlptui.viewmodels.lanes import build_lanes


def _json(report: object) -> Any:
    """The report as `summary --json` writes it."""
    return orjson.loads(orjson.dumps(report))


def _load(tmp_path: Path, doc: dict[str, Any], name: str = "t.pt.trace.json") -> Trace:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(doc))
    return load_trace(path)


def _raw(doc: dict[str, Any], **match: Any) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if all(e.get(k) == v for k, v in match.items())]


def _gid(trace: Trace, name: str) -> int:
    return next(g.id for g in trace.gpu if g.name == name)


def _blocks_per_sm(dev: dict[str, Any], threads: int, regs: int, smem: int) -> tuple[int, str]:
    """The occupancy calculator by hand (cuda_occupancy.h rules, sm90, the opt-in limit for > 48 KiB)."""
    warps = -(-threads // 32)
    by_warps = dev["maxThreadsPerMultiprocessor"] // 32 // warps
    regs_warp = -(-regs * 32 // 256) * 256
    by_regs = (dev["regsPerMultiprocessor"] // 4 // regs_warp) * 4 // warps
    alloc = -(-(smem + 1024) // 128) * 128
    by_smem = dev["sharedMemPerMultiprocessor"] // alloc
    limits = {"warps": by_warps, "registers": by_regs, "shared memory": by_smem, "blocks": 32}
    least = min(limits.values())
    return least, "+".join(k for k, v in limits.items() if v == least)


def test_kinetos_occupancy_beside_ours_and_which_is_right(tmp_path: Path) -> None:
    doc = k26.events()
    trace = _load(tmp_path, doc)
    for name in (k26.GEMM, k26.ELEMENTWISE):
        raw = _raw(doc, name=name)[0]["args"]
        blocks, limiter = _blocks_per_sm(k26.H200, raw["block"][0], raw["registers per thread"], raw["shared memory"])
        text = gpu_details(trace, _gid(trace, name))
        assert f"({blocks} blocks," in text and f"limited by {limiter})" in text
        kin = raw["occupancy"]
        names = {"WARPS": "warps", "REGS": "registers", "SMEM": "shared memory"}
        limited = ", ".join(names[f] for f in kin["limitingFactors"].split("|"))
        assert f"{kin['activeBlocksPerMultiprocessor']} blocks per SM; limited by {limited}" in text
    gemm = gpu_details(trace, _gid(trace, k26.GEMM))
    # above 48 KiB Kineto, without the opt-in, finds no block fits; the kernel ran, so ours is right
    assert _raw(doc, name=k26.GEMM)[0]["args"]["shared memory"] > k26.H200["sharedMemPerBlock"]
    assert "which is right" in gemm and "opted in" in gemm and "ours" in gemm
    assert "which is right" not in gpu_details(trace, _gid(trace, k26.ELEMENTWISE))   # they agree


def test_a_trace_before_the_occupancy_field_shows_ours_alone(tmp_path: Path) -> None:
    doc = k26.events()
    for e in _raw(doc, cat="kernel"):
        del e["args"]["occupancy"]
    text = gpu_details(_load(tmp_path, doc), 0)
    assert "theoretical occupancy" in text and "Kineto's occupancy" not in text


def test_channel_and_its_kind_in_the_details(tmp_path: Path) -> None:
    doc = k26.events()
    trace = _load(tmp_path, doc)
    kinds = {1: "compute", 2: "async memcpy"}
    for g in trace.gpu:
        raw = next(e for e in doc["traceEvents"] if e.get("name") == g.name)["args"]
        assert f"[b]channel[/b]  {raw['channel']} ({kinds[raw['channel_type']]})" in gpu_details(trace, g.id)


def test_stream_sync_is_synchronisation_on_its_stream_not_a_stream_or_busy_time(tmp_path: Path) -> None:
    doc = k26.events()
    trace = _load(tmp_path, doc, "with.pt.trace.json")
    bare = copy.deepcopy(doc)
    bare["traceEvents"] = [e for e in bare["traceEvents"] if e.get("cat") != "cuda_sync"
                           and e.get("tid") != k26.SYNC_TID]
    without = _load(tmp_path, bare, "without.pt.trace.json")
    sync = _raw(doc, cat="cuda_sync")[0]
    # one GPU stream, the real one; the virtual sync row is not a stream
    assert [(s.device, s.stream) for s in trace.streams] == [(0, sync["args"]["stream"])]
    assert sync["tid"] == sync["args"]["stream"] + 1_000_000
    # GPU busy time and every step figure as if the sync were not there
    a, b = _json(summarize(trace)), _json(summarize(without))
    assert a["steps"] == b["steps"] and a["overview"]["total"] == b["overview"]["total"]
    assert a["device_marks"]["syncs"] == [{"device": sync["pid"], "stream": sync["args"]["stream"],
                                           "name": sync["name"], "count": 1, "total_us": sync["dur"]}]
    assert b["device_marks"]["syncs"] == []
    # the timeline draws it under its stream, linked to the call that waited
    lanes = build_lanes(trace)
    at = next(i for i, lane in enumerate(lanes) if lane.kind == "sync")
    assert lanes[at - 1].kind == "gpu" and lanes[at - 1].key == (0, sync["args"]["stream"])
    call = trace.ops[int(lanes[at].ids[0])]
    assert call.name == "cudaStreamSynchronize" and call.correlation == sync["args"]["correlation"]
    assert lanes[at].durs.tolist() == [sync["dur"]]


def test_a_sync_on_the_streams_own_row_reads_the_same(tmp_path: Path) -> None:
    """Before Kineto 041e7ce99f15 a Stream Sync was written on the stream's own tid."""
    doc = k26.events()
    for e in doc["traceEvents"]:
        if e.get("tid") == k26.SYNC_TID:
            e["tid"] = k26.STREAM
    trace = _load(tmp_path, doc)
    assert [m.lane for m in trace.marks if m.kind == "sync"] == [k26.STREAM]
    assert len(trace.streams) == 1


def _step_window(doc: dict[str, Any]) -> tuple[float, float]:
    step = _raw(doc, name="ProfilerStep#1")[0]
    gpu_end = max(e["ts"] + e["dur"] for e in doc["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy"))
    return step["ts"], max(step["ts"] + step["dur"], gpu_end)


def test_hardware_counters_load_list_and_replace_the_estimates_measured(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    doc = k26.events()
    trace = _load(tmp_path, doc)
    assert not trace.warnings
    counters = _raw(doc, ph="C", cat="hardware_counters")
    assert {e["pid"] for e in counters} == {"GPU 0 Counters"}        # a string pid loads
    d = _json(summarize(trace))
    for row in d["device_marks"]["counters"]:
        values = [e["args"][""] for e in counters if e["name"] == row["metric"]]
        assert (row["device"], row["samples"], row["min"], row["max"]) == (0, len(values), min(values), max(values))
        assert row["mean"] == pytest.approx(sum(values) / len(values))
    lo, hi = _step_window(doc)

    def mean_in_step(metric: str) -> float:
        inside = [e["args"][""] for e in counters if e["name"] == metric and lo <= e["ts"] <= hi]
        assert 0 < len(inside) < len([e for e in counters if e["name"] == metric])     # one sample falls outside
        return sum(inside) / len(inside) / 100

    for row in (d["overview"]["steps"][0], d["overview"]["total"]):
        assert row["achieved_occupancy_measured"] == pytest.approx(mean_in_step(k26.WARPS_ACTIVE), abs=1e-4)
        assert row["sm_efficiency_measured"] == pytest.approx(mean_in_step(k26.SM_ACTIVE), abs=1e-4)
        assert row["sm_throughput_measured"] == pytest.approx(mean_in_step(k26.SM_THROUGHPUT), abs=1e-4)
    from mlptui.cli import main

    assert main(["summary", str(tmp_path / "t.pt.trace.json")]) == 0
    out = capsys.readouterr().out
    assert "hardware counters (measured" in out and k26.WARPS_ACTIVE in out
    occ = f"{mean_in_step(k26.WARPS_ACTIVE):.0%} m"
    assert occ in out and "m: measured by the GPU's hardware counters" in out


def test_without_counters_the_estimates_stay_and_say_so(tmp_path: Path) -> None:
    doc = k26.events()
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ph") != "C"]
    total = summarize(_load(tmp_path, doc)).overview.total
    assert total.achieved_occupancy_measured is None and total.sm_efficiency_measured is None
    assert total.achieved_occupancy is not None


def test_top_level_warning_and_error_arrays_are_not_relied_on(tmp_path: Path) -> None:
    """Kineto 9612d061097c stopped writing them; a trace with or without them reads the same."""
    with_arrays = _json(summarize(_load(tmp_path, k26.events(warning_arrays=True), "a.pt.trace.json")))
    without = _json(summarize(_load(tmp_path, k26.events(), "b.pt.trace.json")))
    for d in (with_arrays, without):
        d.pop("source")
    assert with_arrays == without


def test_each_counter_metric_is_a_timeline_lane_shaded_by_its_level(tmp_path: Path) -> None:
    doc = k26.events()
    trace = _load(tmp_path, doc)
    lanes = [lane for lane in build_lanes(trace) if lane.kind == "counter"]
    metrics = sorted({e["name"] for e in _raw(doc, ph="C")})
    assert [lane.label for lane in lanes] == [f"  {m}"[:11] for m in metrics]
    for lane, metric in zip(lanes, metrics, strict=True):
        samples = sorted((e["ts"] - trace.origin_us, e["args"][""]) for e in _raw(doc, ph="C", name=metric))
        # from the first sample to the last, the lane's "busy" time is Σ value × time it held, over 100
        held = sum(a[1] / 100 * (b[0] - a[0]) for a, b in zip(samples[:-1], samples[1:], strict=True))
        got = lane.busy(np.array([samples[0][0], samples[-1][0]]))
        assert got[1] - got[0] == pytest.approx(held)
        assert lane.ids.tolist() == [-1] * len(samples)           # nothing to select
