"""Memory per op: an allocation is the op's that was open on its thread, a free is the op's that
allocated the block (paired by device and `Addr`, as the TensorBoard plugin pairs them), so an op's net
bytes are what it allocated and did not free, and the rows add up to the change of allocated memory.
Traces before torch 1.10 write no `Addr`: a free cannot be paired, and the net per op is n/a.
Raw events are read here with json + gzip only."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, trace_bytes, x
from test_overview_all_steps import _ns, raw_windows

from mlptui.trace.analysis.memory.memory import memory_report
from mlptui.trace.analysis.report.profile_sections import memory_section
from mlptui.trace.parse.load import load_trace, load_trace_bytes
from mlptui.viewmodels.profile_details import memory_peaks

REAL = ROOT.parent / "shared" / "corpus" / "real"
BERT = REAL / "AMD-AGI__TraceLens__h100_gaunernst_bert-small-uncased__1016001.json.gz"
V100 = REAL / "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz"
BEFORE = "(allocated before the trace)"


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        pytest.skip("corpus not available")
    return json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def raw_per_op(events: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per op name: [allocs, frees, bytes allocated, net bytes] over the steps' span."""
    windows = raw_windows([e for e in events if e.get("ph") == "X"])
    start, end = min(a for a, _ in windows), max(b for _, b in windows)
    ops: dict[tuple[Any, Any], list[tuple[int, int, str]]] = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and (e.get("cat") == "cpu_op" or (e.get("cat") == "user_annotation" and not
                                                                 e["name"].startswith("ProfilerStep#"))):
            ops[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0)), e["name"]))

    def open_at(pid: Any, tid: Any, ts: int) -> str:
        around = [(a, -b, n) for a, b, n in ops.get((pid, tid), []) if a <= ts <= b]
        return max(around)[2] if around else "(no op)"      # the latest start: the innermost

    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    owner: dict[tuple[Any, Any, Any], str] = {}
    memory = sorted((e for e in events if e.get("name") == "[memory]"), key=lambda e: _ns(e["ts"]))
    for e in memory:
        a, ts = e["args"], _ns(e["ts"])
        block = (a["Device Type"], a["Device Id"], a["Addr"])
        if a["Bytes"] > 0:
            name = owner[block] = open_at(e["pid"], e["tid"], ts)
        else:
            name = owner.pop(block, BEFORE)
        if not start <= ts <= end:
            continue
        row = rows[name]
        if a["Bytes"] > 0:
            row[0] += 1
            row[2] += a["Bytes"]
        else:
            row[1] += 1
        row[3] += a["Bytes"]
    return dict(rows)


def test_frees_belong_to_the_op_that_allocated_the_block() -> None:
    events = _events(BERT)
    want = raw_per_op(events)
    report = memory_report(load_trace(BERT))
    assert report is not None
    got = {o.name: [o.allocs, o.frees, o.bytes_allocated, o.net_bytes] for o in report.ops
           if o.allocs or o.frees}          # the other rows are ancestors, there for the "with children" column
    assert got == want
    peak = max(d.peak_allocated for d in report.devices)
    assert all(o.net_bytes <= min(o.bytes_allocated, peak) for o in report.ops)
    in_scope = [e["args"]["Bytes"] for e in events if e.get("name") == "[memory]"]
    assert sum(o.net_bytes for o in report.ops) == sum(in_scope)


def _mem(ts: float, nbytes: int, total: int, addr: int | None) -> dict[str, Any]:
    args: dict[str, Any] = {"Bytes": nbytes, "Total Allocated": total, "Total Reserved": 1 << 24,
                            "Device Type": 1, "Device Id": 0}
    if addr is not None:
        args["Addr"] = addr
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
            "args": args}


def test_a_free_under_another_op_is_the_allocating_ops() -> None:
    events = [x("aten::empty", "cpu_op", 0, 10), _mem(1, 4096, 4096, 0xA0),
              x("aten::add", "cpu_op", 20, 10), _mem(21, 1024, 5120, 0xB0), _mem(22, -4096, 1024, 0xA0),
              _mem(23, -512, 512, 0xC0)]         # a block allocated before recording
    report = memory_report(load_trace_bytes(trace_bytes(events), source="mem.json"))
    assert report is not None
    rows = {o.name: (o.allocs, o.frees, o.net_bytes) for o in report.ops}
    assert rows == {"aten::empty": (1, 1, 0), "aten::add": (1, 0, 1024), BEFORE: (0, 1, -512)}


def test_without_addr_the_net_per_op_is_not_known() -> None:
    """torch 1.9 (V100 ResNet-50): `[memory]` events have no Addr."""
    events = _events(V100)
    memory = [e for e in events if e.get("name") == "[memory]"]
    assert memory and not any("Addr" in e["args"] for e in memory)
    assert any(e["args"]["Bytes"] < 0 for e in memory)
    report = memory_report(load_trace(V100))
    assert report is not None
    assert not any(o.net_known for o in report.ops)
    assert all(o.net_bytes is None for o in memory_section(report).ops)
    assert "net per op n/a" in memory_peaks(report).plain


def _running_curve(memory: list[dict[str, Any]], start: int, end: int) -> list[int]:
    """Σ Bytes from the trace's first event, after each event inside [start, end]."""
    curve, running = [], 0
    for e in memory:
        running += e["args"]["Bytes"]
        if start <= _ns(e["ts"]) <= end:
            curve.append(running)
    return curve


@pytest.mark.parametrize("kind, step", [("cpu", None), ("cpu", 2)])
def test_without_totals_the_curve_counts_from_recording_start(kind: str, step: int | None) -> None:
    """torch 1.9 (V100 ResNet-50) writes no `Total Allocated`: the curve is the running sum of Bytes from
    the first `[memory]` event of the trace, so a scope's curve starts where recording left it, not at 0
    (the host allocates before the first step, and the third step's host curve starts at what the first
    two left allocated)."""
    events = _events(V100)
    windows = raw_windows([e for e in events if e.get("ph") == "X"])
    start, end = windows[step] if step is not None else (min(a for a, _ in windows), max(b for _, b in windows))
    memory = sorted((e for e in events if e.get("name") == "[memory]" and e["args"]["Device Type"] == (kind == "cuda")),
                    key=lambda e: _ns(e["ts"]))
    assert not any("Total Allocated" in e["args"] for e in memory)
    before = sum(e["args"]["Bytes"] for e in memory if _ns(e["ts"]) < start)
    assert before != 0              # what counting from the scope's start would lose
    curve = _running_curve(memory, start, end)
    report = memory_report(load_trace(V100), step)
    assert report is not None
    got = next(d for d in report.devices if d.kind == kind)
    assert not got.totals_recorded
    assert got.allocated == curve
    assert got.peak_allocated == max(curve)
