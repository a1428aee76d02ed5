"""The overview's "all steps" figures count a moment in two steps' windows once, as the step list does.

A step's window runs from its `ProfilerStep#N` start to the later of its end and the end of the GPU
work launched in it (the launch call starts inside the step); when the CPU runs ahead of the GPU the
windows overlap. The reading here uses json + gzip only.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT

from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.analysis.steps.steps import step_stats
from mlptui.trace.parse.load import load_trace

CORPUS = ROOT.parent / "shared" / "corpus"
WORK = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
LAUNCH = {"cuda_runtime", "Runtime", "runtime", "cuda_driver", "hip_runtime"}


def _ns(v: Any) -> int:
    whole = int(v)
    return whole * 1000 + round((float(v) - whole) * 1000)


def _events(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    return [e for e in doc["traceEvents"] if e.get("ph") == "X"]


def _union(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def raw_windows(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    steps = sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0))) for e in events
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation")
    work_end: dict[Any, int] = {}
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") in WORK and corr is not None:
            work_end[corr] = max(work_end.get(corr, 0), _ns(e["ts"]) + _ns(e.get("dur", 0)))
    ends = [end for _, end in steps]
    for e in events:
        corr = (e.get("args") or {}).get("correlation")
        if e.get("cat") not in LAUNCH or corr not in work_end:
            continue
        ts = _ns(e["ts"])
        k = max((i for i, (start, _) in enumerate(steps) if start <= ts), default=-1)
        if k >= 0 and ts < steps[k][1]:
            ends[k] = max(ends[k], work_end[corr])
    return [(start, end) for (start, _), end in zip(steps, ends, strict=True)]


def raw_kernel_busy(events: list[dict[str, Any]], pieces: list[tuple[int, int]]) -> int:
    """ns inside `pieces` during which the device that ran the most kernels runs at least one."""
    kernels = [e for e in events if e.get("cat") in ("kernel", "Kernel")]
    counts: dict[Any, int] = {}
    for e in kernels:
        counts[e.get("pid")] = counts.get(e.get("pid"), 0) + 1
    main = max(counts, key=lambda d: counts[d])
    busy = _union([(_ns(e["ts"]), _ns(e["ts"]) + _ns(e.get("dur", 0))) for e in kernels if e.get("pid") == main])
    return sum(max(0, min(b, y) - max(a, x)) for a, b in busy for x, y in pieces)


@pytest.mark.parametrize("name", [
    "real/AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz",    # the CPU runs ahead of the GPU
    "hta/trace_compare__base__base.json.gz",
])
def test_all_steps_count_overlapping_windows_once(name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip("corpus not available")
    events = _events(path)
    windows = raw_windows(events)
    pieces = _union(windows)
    union_ns = sum(b - a for a, b in pieces)
    assert sum(b - a for a, b in windows) > 1.2 * union_ns        # the windows do overlap
    trace = load_trace(path)
    total = overview(trace).total
    assert total.duration_us == pytest.approx(union_ns / 1000, rel=1e-9)
    assert total.duration_us == pytest.approx(step_stats(trace, None).window_us, rel=1e-9)
    assert sum(total.breakdown_us.values()) == pytest.approx(union_ns / 1000, rel=1e-9)
    assert total.gpu_util == pytest.approx(raw_kernel_busy(events, pieces) / union_ns, abs=1e-4)


@pytest.mark.parametrize("path", sorted((ROOT / "sample_traces").glob("*.pt.trace.json*")), ids=lambda p: p.name[:40])
def test_overview_and_step_list_agree_on_every_sample(path: Path) -> None:
    trace = load_trace(path)
    total = overview(trace).total
    assert total.duration_us == pytest.approx(step_stats(trace, None).window_us, rel=1e-9)
