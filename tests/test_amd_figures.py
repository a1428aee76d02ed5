"""AMD GPUs read as AMD GPUs: work-item grids, the device line, the memory view's HIP device.

- `hipExtModuleLaunchKernel` takes the global work size, and the trace's `grid` for its kernels is in
  work-items: the workgroups are ceil(grid ÷ block) per dim, and blocks per CU divides those by the CUs.
- The overview's device line names the device the way the trace header does (`AMD gfx942, 304 CUs`);
  a device the header leaves unnamed is named from its architecture, never `?`.
- `[memory]` events of a HIP device (`Device Type` 6) are that device's, and the memory view opens on it.
Raw events are read here with json + gzip only.
"""

from __future__ import annotations

import gzip
import json
import math
from typing import Any

import pytest
from conftest import ROOT, trace_bytes, x

from mlptui.render.summary_text import render_text
from mlptui.trace.analysis.kernels.kernel_figures import kernel_figures
from mlptui.trace.analysis.kernels.kernel_stats import kernel_stats
from mlptui.trace.analysis.memory.memory import memory_report
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.parse.load import load_trace, load_trace_bytes
from mlptui.viewmodels.profile_views import build_profile, overview_text

REAL = ROOT.parent / "shared" / "corpus" / "real"
SGLANG = REAL / "AMD-AGI__TraceLens__inference_sglang_prefilldecode_sglang_Qwen3-8B_prefilldecode.json.gz"
# AMD's product pages: the MI300X is a gfx942 part.
TARGETS = {"MI300X": "gfx942", "MI210": "gfx90a"}


def _doc(path: Any) -> dict[str, Any]:
    if not path.exists():
        pytest.skip("corpus not available")
    return json.loads(gzip.decompress(path.read_bytes()))


def _raw_blocks_per_cu(doc: dict[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """Per kernel name: (blocks per CU, duration) of each call, the grid read by its launch call's kind."""
    cus = doc["deviceProperties"][0]["numSms"]
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    call = {(e.get("args") or {}).get("correlation"): e["name"] for e in events
            if e.get("cat") == "cuda_runtime" and "correlation" in (e.get("args") or {})}
    out: dict[str, list[tuple[float, float]]] = {}
    for e in events:
        args = e.get("args") or {}
        if e.get("cat") != "kernel" or "grid" not in args:
            continue
        grid, block = args["grid"], args["block"]
        if call.get(args.get("correlation")) == "hipExtModuleLaunchKernel":
            blocks = math.prod(-(-g // b) for g, b in zip(grid, block, strict=True))
        else:
            blocks = math.prod(grid)
        out.setdefault(e["name"], []).append((blocks / cus, float(e["dur"])))
    return out


def test_work_item_grids_are_divided_by_the_block() -> None:
    doc = _doc(SGLANG)
    raw = _raw_blocks_per_cu(doc)
    trace = load_trace(SGLANG)
    figures = kernel_figures(trace)
    ext = [g for g in trace.gpu if g.launch >= 0 and trace.ops[g.launch].name == "hipExtModuleLaunchKernel"]
    assert ext
    gemm = ext[0]
    args = trace.gpu_args(gemm.id)
    assert figures.blocks_per_sm[gemm.id] < math.prod(args["grid"]) / doc["deviceProperties"][0]["numSms"] / 100
    for k in kernel_stats(trace):
        if k.name not in raw:
            continue
        calls = raw[k.name]
        want = sum(v * d for v, d in calls) / sum(d for _, d in calls)
        assert k.blocks_per_sm == pytest.approx(want, rel=1e-9), k.name


def test_the_device_line_is_amd_words() -> None:
    doc = _doc(SGLANG)
    props = doc["deviceProperties"][0]
    target = next(t for product, t in TARGETS.items() if product in props["name"])
    text = overview_text(build_profile(load_trace(SGLANG)), 120).plain
    line = next(line for line in text.splitlines() if line.startswith("device "))
    assert f"{props['name']}, AMD {target}, {props['numSms']} CUs" in line
    assert "sm_" not in line and "SMs" not in line and "?" not in line


def _kernel_events(device: dict[str, Any]) -> bytes:
    return trace_bytes([x("k", "kernel", 1, 5, pid=0, tid=1, grid=[304, 1, 1], block=[256, 1, 1])],
                       deviceProperties=[device])


def test_an_unnamed_device_is_named_from_the_header() -> None:
    trace = load_trace_bytes(_kernel_events({"id": 0, "name": "", "gcnArchName": "gfx942:sramecc+:xnack-",
                                             "numSms": 304, "warpSize": 64}), source="vllm.json")
    line = overview_text(build_profile(trace), 120).plain.splitlines()[0]
    assert line.startswith("device 0: AMD gfx942, 304 CUs")
    assert "device: AMD gfx942, 304 CUs\n" in render_text(summarize(trace))
    bare = load_trace_bytes(b'{"traceEvents":[{"ph":"X","cat":"kernel","ts":1,"dur":1,"pid":0,"tid":7,"name":"k"}]}',
                            source="bare.json")
    assert "?" not in overview_text(build_profile(bare), 120).plain.splitlines()[0]


def test_the_memory_view_opens_on_the_hip_device() -> None:
    def mem(ts: float, nbytes: int, total: int, dtype: int, addr: int) -> dict[str, Any]:
        return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
                "args": {"Bytes": nbytes, "Total Allocated": total, "Total Reserved": 1 << 30, "Addr": addr,
                         "Device Type": dtype, "Device Id": 0 if dtype else -1}}

    events = [x("aten::empty", "cpu_op", 0, 50), mem(1, 4096, 4096, 0, 1), mem(2, 1 << 20, 1 << 20, 6, 2),
              mem(3, 1 << 21, 3 << 20, 6, 3), mem(4, -(1 << 20), 2 << 20, 6, 2)]
    report = memory_report(load_trace_bytes(trace_bytes(events), source="rocm.json"))
    assert report is not None
    hip = [e for e in events if e.get("name") == "[memory]" and e["args"]["Device Type"] == 6]
    first = report.devices[0]
    assert (first.kind, first.label) == ("hip", "hip:0")
    assert first.peak_allocated == max(e["args"]["Total Allocated"] for e in hip)
    assert [d.kind for d in report.devices] == ["hip", "cpu"]
