"""A trace that records a CUDA graph capture says so, instead of warning that the GPU is idle: most of
its launch calls were captured into the graph, so their kernels did not run while it was recorded. Traces
that replay graphs (cudaGraphLaunch) or simply run are never called captures."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import CORPUS, SAMPLES

from mlptui.trace.analysis.advice.findings import trace_findings
from mlptui.trace.analysis.report.profile_sections import profile_sections
from mlptui.trace.parse.load import load_trace

CAPTURED, RAN = 300, 4


def _capture_trace(path: Path, vendor: str = "cuda") -> Path:
    """A step that captures CAPTURED launches into a graph (no kernel runs for them), between a few
    launches whose kernels did run, as vLLM's start-up capture records it."""
    ev: list[dict] = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
                       "ts": 0, "dur": 100000}]
    ts, corr = 10, 1

    def call(name: str, **args: int) -> None:
        nonlocal ts
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 5,
                   "args": args})
        ts += 10

    for _ in range(RAN):
        call(f"{vendor}LaunchKernel", correlation=corr)
        ev.append({"ph": "X", "cat": "kernel", "name": "warmup_kernel", "pid": 0, "tid": 7, "ts": ts, "dur": 3,
                   "args": {"correlation": corr, "device": 0, "stream": 7}})
        corr += 1
    call(f"{vendor}StreamBeginCapture", correlation=corr)
    corr += 1
    for _ in range(CAPTURED):
        call(f"{vendor}LaunchKernel", correlation=corr)
        corr += 1
    call(f"{vendor}StreamEndCapture", correlation=corr)
    call(f"{vendor}GraphInstantiateWithFlags", correlation=corr + 1)
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def test_a_capture_is_named_and_the_idle_gpu_is_not_blamed(tmp_path: Path) -> None:
    trace = load_trace(_capture_trace(tmp_path / "capture.json"))
    findings = trace_findings(trace)
    assert findings[0].startswith(f"this trace records a graph capture: {CAPTURED} of {CAPTURED + RAN} kernel "
                                  "launch calls were captured into a graph (cudaStreamBeginCapture ×1, "
                                  "cudaStreamEndCapture ×1, cudaGraphInstantiateWithFlags ×1)")
    assert f"; {RAN} kernels ran" in findings[0]
    rules = {r.rule: r for r in profile_sections(trace).recommendations}
    assert "low_gpu_util" not in rules
    assert rules["graph_capture"].figures["captured"] == CAPTURED
    assert profile_sections(trace).overview.total.gpu_util < 0.5      # what used to fire


def test_hip_captures_too(tmp_path: Path) -> None:
    trace = load_trace(_capture_trace(tmp_path / "capture.json", "hip"))
    assert trace_findings(trace)[0].startswith("this trace records a graph capture")


def test_graph_replays_and_plain_runs_are_not_captures() -> None:
    paths = [CORPUS / "trace_diff__test__test.json.gz", CORPUS / "negative_queue_length_values_check__rank0.json.gz",
             *sorted(SAMPLES.glob("*.pt.trace.json.gz"))]
    for path in paths:
        if not path.exists():
            continue
        trace = load_trace(path)
        assert not any("graph capture" in line for line in trace_findings(trace)), path
        assert "graph_capture" not in {r.rule for r in profile_sections(trace).recommendations}
