"""The diff's headline leads with the step time — the runs' unprofiled timings first when both manifests have
them, then the median step window (step start to the later of its end and the end of its GPU work) — with
GPU busy beside it, each figure with its own direction, and says so, naming both, when they point different
ways (the fused MLP's profiled steps are longer while its GPU work is shorter). After `[`/`]` the screen's
header shows the aligned step's own figures, not the medians over all steps. Checked against the
manifests and a plain reading of the events."""

from __future__ import annotations

import dataclasses
import gzip
import json
import statistics
from pathlib import Path
from typing import Any

import pytest
from attention_support import attention_sample
from diff_harness import DiffHarness
from diff_support import corpus_pair, load, sample
from test_overview_all_steps import _events, _ns, raw_windows

from mlptui.base.units import duration
from mlptui.render.diff_text import headline
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
        ends = [_ns(g["ts"]) + _ns(g["dur"]) for e in events          # integer ns, as the trace writes them
                if e.get("cat") in LAUNCH_CATS and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]
                for g in device.get(e.get("args", {}).get("correlation"), [])]
        window = (max([_ns(s["ts"]) + _ns(s["dur"]), *ends]) - _ns(s["ts"])) / 1000
        kernels = sum(1 for e in events if e.get("cat") in LAUNCH_CATS and s["ts"] <= e["ts"] <= s["ts"] + s["dur"]
                      for g in device.get(e.get("args", {}).get("correlation"), []) if g["cat"] == "kernel")
        out[name] = {"cpu_us": s["dur"], "gpu_busy_us": busy, "window_us": window, "kernels": kernels}
    return out


def manifest_median(path: Path) -> float:
    runs = json.loads((path.parent / "manifest.json").read_bytes())["runs"]
    return next(r["timing"]["median_us"] for r in runs if r["trace"] == path.name)


def _median(steps: dict[str, dict[str, float]], key: str) -> float:
    return statistics.median(s[key] for s in steps.values())


def test_eager_vs_compile_leads_with_unprofiled_then_the_step_window() -> None:
    pa, pb = sample("mlp", "eager"), sample("mlp", "compile")
    doc = diff_traces(load(pa), load(pb)).report()
    text = headline(doc)
    ra, rb = raw_steps(pa), raw_steps(pb)
    timed = manifest_median(pa) / manifest_median(pb)
    busy = _median(ra, "gpu_busy_us") / _median(rb, "gpu_busy_us")
    step = _median(ra, "window_us") / _median(rb, "window_us")
    assert timed > 1 and busy > 1 and step > 1                 # compile is faster by every figure
    assert text.startswith(f"B vs A: unprofiled {timed:.2f}× (B faster), ")
    assert f"; step time {step:.2f}× (B faster), {duration(_median(ra, 'window_us'))} → " in text
    assert f"; GPU busy {busy:.2f}× (B faster), " in text
    assert text.index("unprofiled") < text.index("step time") < text.index("GPU busy")
    assert "disagree" not in text


def test_without_manifests_the_step_window_leads() -> None:
    doc = diff_traces(load(sample("mlp", "eager")), load(sample("mlp", "compile"))).report()
    # traces without the runner's manifest
    doc = dataclasses.replace(doc, a=dataclasses.replace(doc.a, timed_us=None),
                              b=dataclasses.replace(doc.b, timed_us=None))
    assert headline(doc).startswith("B vs A: step time ")


def test_figures_that_point_different_ways_are_both_named() -> None:
    """The fused MLP: its GPU work is shorter, its profiled step windows longer (a Triton launch costs more
    host time). "slower" is never said of one figure alone while another is faster."""
    pa, pb = sample("mlp", "eager"), sample("fused-mlp", "eager")
    ra, rb = raw_steps(pa), raw_steps(pb)
    step = _median(ra, "window_us") / _median(rb, "window_us")
    busy = _median(ra, "gpu_busy_us") / _median(rb, "gpu_busy_us")
    assert step < 0.995 and busy > 1.005                    # the pair does disagree, read from the events
    doc = diff_traces(load(pa), load(pb)).report()
    doc_no_manifest = dataclasses.replace(doc, a=dataclasses.replace(doc.a, timed_us=None),
                                          b=dataclasses.replace(doc.b, timed_us=None))
    text = headline(doc_no_manifest)
    assert text.startswith(f"B vs A: step time {step:.2f}× (B slower), ")
    assert f"; GPU busy {busy:.2f}× (B faster), " in text
    assert text.endswith("; the figures disagree: B is faster in GPU busy but slower in step time")


def test_the_step_is_the_window_on_the_corpus_pair_and_the_attention_pair() -> None:
    """The diff's step time is the median step window, read here from the raw events (the window's end:
    the later of the step's end and the end of the GPU work its launches made)."""
    pairs = [corpus_pair(), (attention_sample("attention-naive"), attention_sample("attention-sdpa-flash", "compile"))]
    for pa, pb in pairs:
        doc = diff_traces(load(pa), load(pb)).report()
        wa, wb = (statistics.median((hi - lo) / 1000 for lo, hi in raw_windows(_events(p))) for p in (pa, pb))
        assert doc.a.step_us == pytest.approx(wa, abs=0.002)
        assert doc.b.step_us == pytest.approx(wb, abs=0.002)
        assert doc.speedup == pytest.approx(wa / wb, rel=1e-4)
        assert f"step time {wa / wb:.2f}× " in headline(doc)


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
            # counts first (80 columns keep them), then the times: the step window named with its step
            assert line.split(" · ")[1] == f"{fig['kernels']} kernels"
            assert f" · GPU busy {us(fig['gpu_busy_us'])} · {step} step {us(fig['window_us'])} · " in line
        busy = ra[d.a.step]["gpu_busy_us"] / rb[d.b.step]["gpu_busy_us"]
        step = ra[d.a.step]["window_us"] / rb[d.b.step]["window_us"]
        timed = manifest_median(pa) / manifest_median(pb)
        assert header[2].startswith("rows =")
        verdicts = header[2].partition(" │ B vs A: ")[2]
        assert verdicts.startswith(f"unprofiled {timed:.2f}× faster · ")
        assert f" · step {step:.2f}× {'faster' if step > 1 else 'slower'} · GPU busy {busy:.2f}× faster" in verdicts
