"""The critical path against HTA's critical-path analysis, run on HTA's two critical-path test traces.

HTA's paths are committed under benchmarks/results/hta_critical_path/ (made by benchmarks/hta_critical_path.py
in a venv of its own; the README there goes through the differences event by event). Neither trace has a
ProfilerStep, so both paths cover the whole trace, and both count µs from the trace's first event.

Where the two follow the same chain, every edge of HTA's path is matched by our segments over the same
instants: an op's own time by that op's segment, a launch edge by the launch call's segments (the call and
its launch delay), a gap between two ops of a stream by `idle`. HTA gives weight 0 to some edges whose
instants lie apart, where we count the time: thread time between top-level slices (HTA's `DEPENDENCY`: our
`cpu`), a sync's return after the op it waited for (`SYNC_DEPENDENCY`: our `sync_wait`), and the own time of
the calls HTA deems blocking (cudaEventQuery, cudaDeviceSynchronize); HTA's path also starts and ends at
events, ours at the window's ends. Where the two follow different chains (`Split`), HTA holds a device op by
the op before it on its stream although the op's own launch call returned after that op ended: the GPU
waited for the CPU, and our path follows the CPU. Each such place is listed here, so a change on either
side fails the test.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, ROOT

from mlptui.trace.analysis.critical_path.critical_path import DEVICE_WORK, CriticalPath, critical_path
from mlptui.trace.parse.load import load_trace

RESULTS = ROOT / "benchmarks" / "results" / "hta_critical_path"
_CALL_CATS = {"cuda_runtime", "cuda_driver"}


@dataclass(frozen=True)
class Split:
    """Where HTA's path leaves ours and where it joins it again (µs from the trace's first event)."""

    start: int
    end: int
    held_by_launch: tuple[tuple[int, int], ...]   # HTA's stream edges (op -> next op, by correlation) that
    hta_only: tuple[int, ...]                     # did not bind; the device ops only HTA's path runs through


@dataclass(frozen=True)
class Case:
    splits: tuple[Split, ...]
    zeroed: dict[str, int]          # µs HTA's path spans at weight 0, or leaves out, by cause (README)


CASES = {
    "critical_path__cuda_event_sync_multi_stream__event_sync_trace": Case(
        splits=(Split(19764, 19794, held_by_launch=((1411, 1413),), hta_only=(1411,)),),
        zeroed={"head": 0, "tail": 13, "thread": 18723, "sync": 0, "blocking": 16, "split": 0}),
    "critical_path__alexnet__benchmark_result_2869224_1695835535_trace": Case(
        splits=(Split(43258516, 43269599, held_by_launch=((5477, 5495), (5495, 5496)),
                      hta_only=(5424, 5426, 5432, 5455, 5469, 5471, 5477, 5495, 5496, 5498)),),
        zeroed={"head": 1040, "tail": 947, "thread": 67550, "sync": 100, "blocking": 25, "split": 48}),
}


def _record(name: str) -> dict[str, Any]:
    with open(RESULTS / f"{name}.hta.json", encoding="utf-8") as f:
        return dict(json.load(f))


def _calls(path: Path, origin: int) -> dict[int, tuple[str, int, int]]:
    """correlation -> (name, start, end) of each runtime/driver call, µs from `origin`, from the raw events."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    return {e["args"]["correlation"]: (e["name"], e["ts"] - origin, e["ts"] + e["dur"] - origin)
            for e in events if e.get("ph") == "X" and e.get("cat") in _CALL_CATS
            and "correlation" in e.get("args", {})}


def _runs(p: CriticalPath) -> list[tuple[float, float, str, str]]:
    """Our segments as (start, end, kind, name), a run of one kind and name in one piece."""
    out: list[tuple[float, float, str, str]] = []
    for s in p.segments:
        if out and out[-1][2:] == (s.kind, s.name) and out[-1][1] == s.start_us:
            out[-1] = (out[-1][0], s.start_us + s.dur_us, s.kind, s.name)
        else:
            out.append((s.start_us, s.start_us + s.dur_us, s.kind, s.name))
    return out


def _within(runs: list[tuple[float, float, str, str]], a: float, b: float) -> list[tuple[str, str, float]]:
    return [(k, n, min(e, b) - max(s, a)) for s, e, k, n in runs if min(e, b) > max(s, a)]


@pytest.fixture(scope="module", params=sorted(CASES), ids=lambda n: n.split("__")[1])
def case(request: pytest.FixtureRequest) -> tuple[str, Any, CriticalPath, dict[str, Any]]:
    name = request.param
    path = CORPUS / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"{path} not here (the corpus is beside the checkout in CI)")
    trace = load_trace(path)
    return name, trace, critical_path(trace, None), _record(name)


def test_same_window_and_origin(case: tuple[str, Any, CriticalPath, dict[str, Any]]) -> None:
    _name, trace, p, hta = case
    assert hta["annotation"] == "" and hta["versions"]["HolisticTraceAnalysis"] == "0.5.0"
    assert trace.origin_us == hta["origin_ts"]
    assert (p.start_us, p.start_us + p.window_us) == tuple(hta["window"])
    assert p.length_us == p.window_us


def test_device_work_on_the_path(case: tuple[str, Any, CriticalPath, dict[str, Any]]) -> None:
    """The same kernels, copies and sets in the same order, but for those only HTA's path runs through."""
    name, trace, p, hta = case
    only = {c for s in CASES[name].splits for c in s.hta_only}
    ours = [(trace.gpu[s.gpu_id].correlation, s.name, s.start_us, s.dur_us) for s in p.segments
            if s.kind in DEVICE_WORK]
    theirs = [(d["correlation"], d["name"], d["ts"], d["dur"]) for d in hta["device"]]
    assert ours == [d for d in theirs if d[0] not in only]
    assert only <= {d[0] for d in theirs}


def test_where_the_paths_split(case: tuple[str, Any, CriticalPath, dict[str, Any]]) -> None:
    """Inside each split HTA runs through device ops that waited for their launch calls; ours runs through
    the CPU (and those launch calls) and no device work."""
    name, _trace, p, hta = case
    calls = _calls(CORPUS / f"{name}.json.gz", hta["origin_ts"])
    events, edges = hta["events"], hta["edges"]
    device = {d["correlation"]: d for d in hta["device"]}
    runs = _runs(p)
    for split in CASES[name].splits:
        assert split.start in {e["from"][2] for e in edges} and split.end in {e["to"][2] for e in edges}
        assert split.start in {r[0] for r in runs} and split.end in {r[1] for r in runs}
        assert {d["correlation"] for d in hta["device"] if split.start <= d["ts"] < split.end} == set(split.hta_only)
        assert not {k for k, _n, _us in _within(runs, split.start, split.end)} & DEVICE_WORK
        for before, after in split.held_by_launch:
            edge = next(e for e in edges if e["type"] == "KERNEL_KERNEL_DELAY"
                        and events[e["from"][0]]["correlation"] == before
                        and events[e["to"][0]]["correlation"] == after)
            b, a = device[before], device[after]
            assert edge["weight"] == a["ts"] - (b["ts"] + b["dur"])
            call, _call_start, call_end = calls[after]
            assert call_end > b["ts"] + b["dur"], (before, after)      # the op's launch returned later...
            assert a["ts"] >= call_end                                  # ... and the op started after it
            assert any(n == call and e == call_end for _s, e, _k, n in runs)   # our path runs through the call


def test_same_chain_elsewhere_and_the_length(case: tuple[str, Any, CriticalPath, dict[str, Any]]) -> None:
    """Outside the splits each of HTA's edges is matched by ours; the lengths differ by exactly the time
    HTA's path spans at weight 0 or leaves out, by cause."""
    name, _trace, p, hta = case
    events, edges, splits = hta["events"], hta["edges"], CASES[name].splits
    runs = _runs(p)
    zeroed = {"head": edges[0]["from"][2] - hta["window"][0], "tail": hta["window"][1] - edges[-1]["to"][2],
              "thread": 0, "sync": 0, "blocking": 0, "split": 0}
    for s in splits:
        zeroed["split"] += (s.end - s.start) - sum(e["weight"] for e in edges
                                                  if s.start <= e["from"][2] and e["to"][2] <= s.end)
    for e in edges:
        a, b, w = e["from"][2], e["to"][2], e["weight"]
        if b == a or any(s.start <= a and b <= s.end for s in splits):
            continue
        ours = _within(runs, a, b)
        assert sum(us for _k, _n, us in ours) == b - a
        kinds, names = {k for k, _n, _us in ours}, {n for _k, n, _us in ours}
        typ = e["type"]
        if typ == "DEPENDENCY":             # between two top-level slices of a thread
            assert w == 0 and kinds == {"cpu"}, (e, ours)
            zeroed["thread"] += b - a
        elif typ == "SYNC_DEPENDENCY":      # a device op's end -> the end of the call (or op) that waited
            assert w == 0 and kinds == {"sync_wait"}, (e, ours)
            zeroed["sync"] += b - a
        elif typ == "OPERATOR_KERNEL" and w == 0:       # a call HTA deems blocking
            own = events[e["event"]]["name"]
            assert names == {own} and kinds <= {"cpu", "sync_wait"}, (e, ours)
            zeroed["blocking"] += b - a
        elif typ == "OPERATOR_KERNEL":      # an op's own time (a CPU slice's self time, or a device op)
            assert w == b - a and len(ours) == 1 and ours[0][1] == events[e["event"]]["name"], (e, ours)
            device = events[e["event"]]["stream"] >= 0
            assert (ours[0][0] in DEVICE_WORK) == device and (device or ours[0][0] in {"cpu", "launch"}), (e, ours)
        elif typ == "KERNEL_LAUNCH_DELAY":  # a launch call's start -> its op's start
            assert w == b - a and names == {events[e["from"][0]]["name"]}, (e, ours)
            assert kinds <= {"cpu", "launch", "launch_delay"}, (e, ours)
        else:                               # KERNEL_KERNEL_DELAY: the stream's gap before an op
            assert typ == "KERNEL_KERNEL_DELAY" and w == b - a and kinds == {"idle"}, (e, ours)
    # before HTA's first event and after its last: ours is host time (an annotation's, the thread's, a sync)
    assert {k for k, _n, _us in _within(runs, hta["window"][0], edges[0]["from"][2])} <= {"cpu"}
    assert {k for k, _n, _us in _within(runs, edges[-1]["to"][2], hta["window"][1])} <= {"cpu", "sync_wait"}
    assert p.length_us - hta["length_us"] == sum(zeroed.values())
    assert zeroed == CASES[name].zeroed
