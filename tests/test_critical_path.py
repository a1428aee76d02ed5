"""The critical path: its length is the step window, its segments tile it, what-if never exceeds it; the
path agrees with the step's idle/busy figures and with what HTA's critical-path tests assert. Windows,
idle/busy and links are computed here from the raw events."""

from __future__ import annotations

import dataclasses
import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from conftest import CORPUS, SAMPLES

from mlptui.trace.analysis.critical_path.critical_graph import GPU, SYNC_WAIT, build_graph
from mlptui.trace.analysis.critical_path.critical_path import CriticalPath, critical_path, critical_paths
from mlptui.trace.analysis.critical_path.critical_path_report import critical_path_report
from mlptui.trace.parse.load import load_trace

REAL = CORPUS.parent / "real"
_GPU_CATS = {"kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset"}
_CALL_CATS = {"cuda_runtime", "Runtime", "cuda_driver", "Driver", "hip_runtime"}
TOL = 0.002          # µs: the index keeps ns; raw sums of floats may differ by rounding

SAMPLE_FILES = sorted(SAMPLES.glob("*.pt.trace.json.gz")) + sorted(SAMPLES.glob("*/*.pt.trace.json.gz"))
CORPUS_WITH_STEPS = [CORPUS / "ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
                     CORPUS / "timeline_analysis__sampled_rank-0.json.gz",
                     CORPUS / "amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
                     CORPUS / "nccl_parser_config__nccl_data.json.gz",
                     CORPUS / "trace_diff__control__control.json.gz",
                     REAL / "AMD-AGI__TraceLens__mi300_resnet_act_checkpoint.json.gz",
                     REAL / "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz"]


def _events(path: Path) -> list[dict[str, Any]]:
    """Complete events with ts and dur in µs from the earliest event (read exactly: absolute µs with ns
    fractions do not fit a float)."""
    with gzip.open(path) if path.suffix == ".gz" else open(path, "rb") as f:
        doc = json.load(f, parse_float=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    base = min(Decimal(e["ts"]) for e in events if "ts" in e)
    out = [e for e in events if e.get("ph") == "X" and "ts" in e]
    for e in out:
        e["ts"] = float(Decimal(e["ts"]) - base)
        e["dur"] = float(e.get("dur", 0))
    return out


def _raw_windows(events: list[dict[str, Any]]) -> list[tuple[float, float, list[tuple[float, float]]]]:
    """Per ProfilerStep#N: (start, end of the window, the device work inside the window), from the raw
    events: its own device work is what calls made inside its annotation launched (by correlation)."""
    marks = sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                    and e.get("cat") in ("user_annotation", "cpu_op", "Operator")), key=lambda e: e["ts"])
    work: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e.get("cat") in _GPU_CATS and "correlation" in e.get("args", {}):
            work.setdefault(e["args"]["correlation"], []).append(e)
    calls = [e for e in events if e.get("cat") in _CALL_CATS and "correlation" in e.get("args", {})]
    device = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events if e.get("cat") in _GPU_CATS]
    out = []
    for m in marks:
        start, end = m["ts"], m["ts"] + m["dur"]
        own = [g for c in calls if start <= c["ts"] < end for g in work.get(c["args"]["correlation"], [])]
        stop = max([end] + [g["ts"] + g.get("dur", 0) for g in own])
        out.append((start, stop, [(max(a, start), min(b, stop)) for a, b in device if b > start and a < stop]))
    return out


def _union(intervals: list[tuple[float, float]]) -> float:
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None and cur_s is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + ((cur_e - cur_s) if cur_e is not None and cur_s is not None else 0.0)


def _check_tiles(p: CriticalPath) -> None:
    assert abs(p.length_us - p.window_us) <= TOL, (p.name, p.length_us, p.window_us)
    assert abs(p.remainder_us) <= TOL
    at = p.start_us
    for s in p.segments:
        assert s.dur_us > 0
        assert abs(s.start_us - at) <= TOL, (p.name, s)          # in order, no overlap, no hole
        at = s.start_us + s.dur_us
    assert abs(at - (p.start_us + p.length_us)) <= TOL
    assert abs(sum(p.breakdown_us.values()) - p.length_us) <= TOL
    for name, us in p.what_if:
        assert us <= p.window_us + TOL, (p.name, name, us)


@pytest.mark.parametrize("path", SAMPLE_FILES + CORPUS_WITH_STEPS, ids=lambda p: p.name[:50])
def test_length_is_the_step_window(path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} not here")
    trace = load_trace(path)
    raw = _raw_windows(_events(path))
    if not raw:
        pytest.skip("no steps")
    paths = critical_paths(trace)
    assert len(paths) == len(raw)
    for p, (start, stop, _device) in zip(paths, raw, strict=True):
        # absolute epoch µs with ns fractions lose up to a quarter µs each once read as floats
        slack = 0.5 if trace.origin_us > 1e12 else TOL
        assert abs((p.start_us - paths[0].start_us) - (start - raw[0][0])) <= slack     # each step's own start
        assert abs(p.window_us - (stop - start)) <= slack, (p.name, p.window_us, stop - start)
        _check_tiles(p)


@pytest.mark.parametrize("mode", ["eager", "compile"])
def test_mlp_path_is_launch_bound_where_the_gpu_idles(mode: str) -> None:
    path = next(SAMPLES.glob(f"mlp-{mode}-64x128x768x3072-bf16-*.pt.trace.json.gz"))
    trace = load_trace(path)
    seen_idle = 0
    for p, (start, stop, device) in zip(critical_paths(trace), _raw_windows(_events(path)), strict=True):
        busy = _union(device)
        idle = (stop - start) - busy
        host = p.breakdown_us["cpu"] + p.breakdown_us["launch"] + p.breakdown_us["launch_delay"]
        on_device = sum(p.breakdown_us[k] for k in ("kernel", "memcpy", "memset"))
        assert on_device <= busy + TOL                 # the path's device time is device busy time
        if idle > busy:
            seen_idle += 1
            assert host > on_device, (p.name, host, on_device, idle, busy)
            assert p.gpu_share < 0.5
    assert seen_idle >= 1


def test_training_at_2048_rows_is_gpu_bound() -> None:
    path = next(SAMPLES.glob("mlp-train-eager-64x2048x768x3072-bf16-h200-x2-20261122T143342/*rank-0*.gz"))
    trace = load_trace(path)
    for p, (start, stop, device) in zip(critical_paths(trace), _raw_windows(_events(path)), strict=True):
        busy = _union(device)
        assert busy > (stop - start) - busy
        assert p.gpu_share >= 0.9, (p.name, p.gpu_share)


def test_graph_replay_path_runs_through_the_replayed_kernels() -> None:
    path = next(SAMPLES.glob("mlp-reduce-overhead-*.pt.trace.json.gz"))
    trace = load_trace(path)
    events = _events(path)
    graph_corr = {e["args"]["correlation"] for e in events if e.get("name") == "cudaGraphLaunch"}
    step_start = _raw_windows(events)[-1][0]
    replayed = {(e["name"], round(e["ts"] - step_start, 2)) for e in events
                if e.get("cat") == "kernel" and e.get("args", {}).get("correlation") in graph_corr}
    assert replayed
    last = critical_paths(trace)[-1]
    on_path = {(s.name, round(s.start_us - last.start_us, 2)) for s in last.segments if s.kind == "kernel"}
    assert len(on_path & replayed) >= 3
    assert last.breakdown_us["kernel"] > last.breakdown_us["cpu"]


def _node_of(g: Any, gpu_id: int) -> tuple[int, int]:
    """The start and end nodes of device op gpu_id: its own edge."""
    e = next(e for e in range(len(g.src)) if g.owner[e] == GPU and g.owner_id[e] == gpu_id and g.own[e])
    return g.src[e], g.dst[e]


def _by_correlation(trace: Any, corr: int) -> int:
    return next(k.id for k in trace.gpu if k.correlation == corr)


def test_hta_alexnet_cross_stream_wait() -> None:
    """HTA's test: a GPU -> GPU sync edge from fft2d_c2r (correlation 5606, stream 20) to the elementwise
    kernel (5629, stream 7), through the cudaStreamWaitEvent between their launches."""
    path = CORPUS / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
    if not path.exists():
        pytest.skip("corpus not here")
    trace = load_trace(path)
    g = build_graph(trace, None)
    _, fft_end = _node_of(g, _by_correlation(trace, 5606))
    elementwise_start, _ = _node_of(g, _by_correlation(trace, 5629))
    edges = [e for e in range(len(g.src)) if g.src[e] == fft_end and g.dst[e] == elementwise_start]
    assert [g.kind[e] for e in edges] == [SYNC_WAIT]
    assert g.weight[edges[0]] == pytest.approx(1.0)     # it started 1 µs after fft2d_c2r ended (HTA: weight 0)
    p = critical_path(trace, None)
    _check_tiles(p)


def test_hta_multi_stream_device_sync() -> None:
    """HTA's event-sync tests: the kernel before a cudaDeviceSynchronize -> the sync's end. Here the path
    ends with the last kernel (correlation 1413, stream 24) and the sync's return."""
    path = CORPUS / "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz"
    if not path.exists():
        pytest.skip("corpus not here")
    trace = load_trace(path)
    p = critical_path(trace, None)
    _check_tiles(p)
    kernels = [s for s in p.segments if s.kind == "kernel"]
    assert [s.gpu_id for s in kernels] == [_by_correlation(trace, 1413)]
    assert kernels[0].name == "ampere_sgemm_128x64_nn"
    assert (p.segments[-1].kind, p.segments[-1].name) == ("sync_wait", "cudaDeviceSynchronize")
    assert p.segments[-1].dur_us == pytest.approx(62465 - 62452)       # sync end - kernel end, raw µs
    assert p.length_us == pytest.approx(19930.0)


def test_json_shape() -> None:
    trace = load_trace(next(SAMPLES.glob("mlp-eager-64x128x768x3072-bf16-*.pt.trace.json.gz")))
    d = dataclasses.asdict(critical_path_report(trace))
    step = d["steps"][-1]
    assert step["step"] == trace.steps[-1].name
    assert set(step["breakdown_us"]) == {"cpu", "launch", "launch_delay", "kernel", "memcpy", "memset",
                                         "sync_wait", "idle"}
    assert set(step["segments"][0]) == {"kind", "name", "start_us", "dur_us", "op"}
    assert {w["name"] for w in step["what_if"]} == {t["name"] for t in step["top"]}
    assert all(w["step_us"] <= step["length_us"] + TOL for w in step["what_if"])


def test_check_expectations_on_the_path_share() -> None:
    from mlptui.trace.analysis.expectations.expectations import ExpectationError, evaluate, parse

    gpu_bound = load_trace(next(SAMPLES.glob("mlp-train-eager-64x2048x768x3072-bf16-h200-x2-20261122T143342/*rank-0*.gz")))
    eager = load_trace(next(SAMPLES.glob("mlp-eager-64x128x768x3072-bf16-*.pt.trace.json.gz")))
    e = parse("critical_path.gpu_share >= 0.8")
    assert evaluate(gpu_bound, e).ok
    assert not evaluate(eager, e).ok                 # its first step's path is all host time
    assert evaluate(eager, parse("Critical_Path.cpu_share > 0.2")).ok
    with pytest.raises(ExpectationError, match="gpu_share"):
        parse("critical_path.bogus_share >= 0.8")


def test_hta_multi_stream_event_wait_edge() -> None:
    """HTA's test: the cudaEventRecord (correlation 1385) on stream 20 syncs back to kernel 1 (27), not to
    kernel 2 (57, stream 28), and the Memset on stream 24 after the cudaStreamWaitEvent gets an edge from
    kernel 1's end of weight 0 (it started long after: its launch held it)."""
    path = CORPUS / "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz"
    if not path.exists():
        pytest.skip("corpus not here")
    trace = load_trace(path)
    g = build_graph(trace, None)
    _, kernel1_end = _node_of(g, _by_correlation(trace, 27))
    _, kernel2_end = _node_of(g, _by_correlation(trace, 57))
    memset_start, _ = _node_of(g, _by_correlation(trace, 1411))
    into = {g.src[e]: e for e in range(len(g.src)) if g.dst[e] == memset_start}
    assert kernel1_end in into and kernel2_end not in into
    e = into[kernel1_end]
    assert (g.kind[e], g.weight[e]) == (SYNC_WAIT, 0.0)


def test_plain_summary_leaves_the_segments_out_and_says_the_same() -> None:
    """Plain `summary` (text, Markdown) never shows the path's segments, so it does not make them: the report
    without them differs from the full one only in the empty segment lists, and renders to the same text."""
    from mlptui.commands.summary import format_report
    from mlptui.trace.analysis.report.summary import summarize

    trace = load_trace(next(SAMPLES.glob("mlp-train-eager-64x2048x768x3072-bf16-h200-x2-20261122T143342/*rank-0*.gz")))
    full, bare = summarize(trace), summarize(trace, path_segments=False)
    assert all(s.segments for s in full.critical_path.steps)
    assert [s.segments for s in bare.critical_path.steps] == [[] for _ in full.critical_path.steps]
    emptied = [dataclasses.replace(s, segments=[]) for s in full.critical_path.steps]
    assert dataclasses.replace(full, critical_path=dataclasses.replace(full.critical_path, steps=emptied)) == bare
    for fmt in ("text", "md"):
        assert format_report(bare, fmt) == format_report(full, fmt)
