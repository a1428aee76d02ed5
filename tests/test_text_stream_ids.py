"""torch 1.9 writes a GPU event's tid as text, `stream 7`, with `args.stream` = 7: the stream is 7, not a
made-up id, and the `ac2g` flows that end on such an event still link it to its launch call."""

from __future__ import annotations

import gzip
import json

import pytest
from conftest import ROOT, trace_bytes, x

from mlptui.trace.parse.load import load_trace, load_trace_bytes

V100 = ROOT.parent / "shared" / "corpus" / "real" / "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz"
GPU_CATS = {"Kernel", "Memcpy", "Memset", "kernel", "gpu_memcpy", "gpu_memset"}


def test_streams_are_the_events_own_stream_numbers() -> None:
    if not V100.exists():
        pytest.skip("corpus not available")
    events = [e for e in json.loads(gzip.decompress(V100.read_bytes()))["traceEvents"] if e.get("cat") in GPU_CATS]
    assert all(isinstance(e["tid"], str) for e in events)
    want: dict[tuple[int, int], int] = {}
    for e in events:
        key = (e["pid"], e["args"]["stream"])
        want[key] = want.get(key, 0) + 1
    trace = load_trace(V100)
    got: dict[tuple[int, int], int] = {}
    for g in trace.gpu:
        got[(g.device, g.stream)] = got.get((g.device, g.stream), 0) + 1
    assert got == want
    assert {(s.device, s.stream) for s in trace.streams} == set(want)
    assert all(s.name == f"stream {s.stream}" for s in trace.streams)


def test_a_flow_ending_on_a_text_tid_links_the_kernel() -> None:
    events = [x("aten::mm", "Operator", 0, 20),
              x("cudaLaunchKernel", "Runtime", 2, 5),
              {"ph": "s", "cat": "ac2g", "id": 42, "pid": 1, "tid": 1, "ts": 2, "name": "launch"},
              {**x("volta_sgemm_128x64_nn", "Kernel", 30, 10, pid=0, tid="stream 7", stream=7, device=0)},
              {"ph": "f", "bp": "e", "cat": "ac2g", "id": 42, "pid": 0, "tid": "stream 7", "ts": 30, "name": "launch"}]
    trace = load_trace_bytes(trace_bytes(events), source="torch19.json")
    (kernel,) = trace.gpu
    assert kernel.stream == 7
    assert kernel.launch >= 0 and trace.ops[kernel.launch].name == "cudaLaunchKernel"
    assert trace.ops[kernel.op].name == "aten::mm"
