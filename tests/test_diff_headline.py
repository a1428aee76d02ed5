"""The diff's headline leads with what a profile can show honestly — the runs' unprofiled timings and the
GPU's busy time — and labels the profiled step time as profiled (on the article's eager/compile pair it
says compile is slower while the device work is faster); after `[`/`]` the screen's header shows the
aligned step's own figures, not the medians over all steps. Checked against the manifests and a plain
reading of the events."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from diff_harness import DiffHarness
from diff_support import load, sample

from mlptui.trace.diff.render import headline
from mlptui.trace.diff.trace_diff import diff_traces
from mlptui.viewmodels.fmt import us

LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def raw_steps(path: Path) -> dict[str, dict[str, float]]:
    """Per ProfilerStep: its annotation's duration and the union of the device work its launch calls made."""
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    steps = {e["name"]: e for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("ph") == "X"}
    device: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e.get("cat") in DEVICE_CATS and "correlation" in e.get("args", {}):
            device.setdefault(e["args"]["correlation"], []).append(e)
    out = {}
    for name, s in steps.items():
        spans = sorted((g["ts"], g["ts"] + g["dur"]) for e in events
                       if e.get("cat") in LAUNCH_CATS and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]
                       for g in device.get(e.get("args", {}).get("correlation"), []))
        busy, end = 0.0, float("-inf")
        for a, b in spans:
            if b > end:
                busy += b - max(a, end)
                end = b
        kernels = sum(1 for e in events if e.get("cat") in LAUNCH_CATS and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]
                      for g in device.get(e.get("args", {}).get("correlation"), []) if g["cat"] == "kernel")
        out[name] = {"cpu_us": s["dur"], "gpu_busy_us": busy, "kernels": kernels}
    return out


def manifest_median(path: Path) -> float:
    runs = json.loads((path.parent / "manifest.json").read_bytes())["runs"]
    return next(r["timing"]["median_us"] for r in runs if r["trace"] == path.name)


def test_eager_vs_compile_leads_with_unprofiled_and_gpu_busy() -> None:
    pa, pb = sample("mlp", "eager"), sample("mlp", "compile")
    doc = diff_traces(load(pa), load(pb)).to_json()
    text = headline(doc)
    ra, rb = raw_steps(pa), raw_steps(pb)
    timed = manifest_median(pa) / manifest_median(pb)
    busy = statistics.median(s["gpu_busy_us"] for s in ra.values()) / \
        statistics.median(s["gpu_busy_us"] for s in rb.values())
    profiled = statistics.median(s["cpu_us"] for s in ra.values()) / \
        statistics.median(s["cpu_us"] for s in rb.values())
    assert timed > 1 and busy > 1                            # compile is faster, by both honest measures
    assert text.startswith(f"B vs A: unprofiled {timed:.2f}× (B faster), ")
    assert f"; GPU busy {busy:.2f}× (B faster); " in text
    assert f"; profiled step time {profiled:.2f}× (includes the profiler's overhead)" in text
    assert text.index("unprofiled") < text.index("GPU busy") < text.index("profiled step")


def test_without_manifests_the_gpu_leads(tmp_path: Path) -> None:
    doc = diff_traces(load(sample("mlp", "eager")), load(sample("mlp", "compile"))).to_json()
    doc["timed_speedup"] = None              # traces without the runner's manifest
    assert headline(doc).startswith("B vs A: GPU busy ")


@pytest.mark.parametrize("back", [1, 2])
async def test_the_header_shows_the_aligned_steps_own_figures(back: int) -> None:
    pa, pb = sample("mlp", "eager"), sample("mlp", "compile")
    ra, rb = raw_steps(pa), raw_steps(pb)
    app = DiffHarness(load(pa), load(pb))
    async with app.run_test(size=(200, 40)) as pilot:
        screen = app.screen
        before = screen.diff.a.step
        for _ in range(back):           # `[`: earlier steps (the diff opens on the median one)
            await pilot.press("left_square_bracket")
            await app.workers.wait_for_complete()
            await pilot.pause()
        d = screen.diff
        assert d.a.step != before
        header = str(screen.query_one("#diff-header").render()).splitlines()
        for line, raw, step in ((header[0], ra, d.a.step), (header[1], rb, d.b.step)):
            fig = raw[step]
            # counts first (80 columns keep them), then the times, the step named with its own
            assert line.split(" · ")[1] == f"{fig['kernels']} kernels"
            assert f" · GPU busy {us(fig['gpu_busy_us'])} · {step} {us(fig['cpu_us'])} · " in line
        busy = ra[d.a.step]["gpu_busy_us"] / rb[d.b.step]["gpu_busy_us"]
        profiled = ra[d.a.step]["cpu_us"] / rb[d.b.step]["cpu_us"]
        assert header[2].startswith("rows =")
        assert f" │ B vs A on this step: GPU busy {busy:.2f}× · unprofiled " in header[2]
        assert header[2].endswith(f" · profiled step {profiled:.2f}×")
