"""Traces with GPU events and no CPU events (a device-only capture, a trimmed file): every profiler view
and the diff open on them, and the kernels view's figures are the raw events' (read here with json only).
Grouped by launching operator, every kernel of such a trace is under "(no op)"."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any

import pytest
from conftest import ROOT, trace_bytes, x

from mlptui.trace.parse.load import load_trace_bytes
from mlptui.viewmodels.profile_views import build_profile, regrouped

sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
from views import open_every_view, open_the_diff  # noqa: E402

# The smallest such trace (85 bytes): one kernel, no CPU event at all.
ONE_KERNEL = b'{"traceEvents":[{"ph":"X","cat":"kernel","ts":1,"dur":1,"pid":0,"tid":7,"name":"k"}]}'


def _two_streams() -> bytes:
    events = [x("gemm", "kernel", 10, 40, pid=0, tid=7), x("gemm", "kernel", 60, 30, pid=0, tid=7),
              x("elementwise", "kernel", 20, 5, pid=0, tid=8),
              x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", 100, 8, pid=0, tid=7),
              x("gemm", "kernel", 5, 12, pid=1, tid=7)]
    return trace_bytes(events)


def _kernel_totals(data: bytes) -> dict[str, tuple[int, float]]:
    """Per kernel name: (count, Σ dur) of the `kernel` events, read with json."""
    out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for e in json.loads(data)["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            out[e["name"]][0] += 1
            out[e["name"]][1] += float(e["dur"])
    return {k: (int(n), us) for k, (n, us) in out.items()}


@pytest.mark.parametrize("data", [ONE_KERNEL, _two_streams()], ids=["85-byte", "two-devices"])
def test_every_view_opens_on_a_trace_without_cpu_events(data: bytes) -> None:
    trace = load_trace_bytes(data, source="gpu-only.json")
    assert not trace.ops and trace.gpu
    open_every_view(trace)
    open_the_diff(trace, trace)
    profile = build_profile(trace)
    want = _kernel_totals(data)
    by_name = {k.name: (k.calls, k.total_us) for k in profile.kernels}
    assert by_name == pytest.approx(want)
    by_op = regrouped(profile, "kernels-op")
    assert {k.op for k in by_op} == {"(no op)"}
    assert {k.name: (k.calls, k.total_us) for k in by_op} == pytest.approx(want)
    assert profile.operators == []


def test_a_real_gpu_only_trace_opens_every_view() -> None:
    """The MI210 capture of kernels and HIP runtime calls without any cpu_op."""
    path = ROOT.parent / "shared" / "corpus" / "real" / "AMD-AGI__TraceLens__mi210_gpu_only_trace_gpu_only_trace.json.gz"
    if not path.exists():
        pytest.skip("corpus not available")
    import gzip

    raw = path.read_bytes()
    trace = load_trace_bytes(raw, source=path.name)
    open_every_view(trace)
    events: list[dict[str, Any]] = json.loads(gzip.decompress(raw))["traceEvents"]
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
    profile = build_profile(trace)
    assert sum(k.calls for k in profile.kernels) == len(kernels)
    assert sum(k.total_us for k in profile.kernels) == pytest.approx(sum(float(e["dur"]) for e in kernels), rel=1e-9)

