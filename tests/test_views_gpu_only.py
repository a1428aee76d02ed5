"""Traces with GPU events and no CPU events (a device-only capture, a trimmed file): every profiler view
and the diff open on them, and the kernels view's figures are the raw events' (read here with json only).
Grouped by launching operator, every kernel of such a trace is under "(no op)"."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path
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



async def test_the_app_opens_all_five_views_on_a_trace_without_cpu_events(tmp_path: Path) -> None:
    from app_support import rows_text, wait_for_screen
    from textual.widgets import Static

    from mlptui.app import make_app
    from mlptui.screens.profile_screen import ProfileScreen
    from mlptui.screens.trace_screen import TraceScreen
    from mlptui.widgets.profile_tables import KernelStatsTable

    path = tmp_path / "gpu-only.json"
    path.write_bytes(ONE_KERNEL)
    app = make_app([str(path)])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("o")
        screen = await wait_for_screen(app, pilot, ProfileScreen)
        for key, view in (("o", "overview"), ("p", "operators"), ("K", "kernels"), ("M", "memory"), ("u", "modules")):
            await pilot.press(key)
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert screen.view == view and screen.data is not None
        assert "device 0: not described in the trace" in str(screen.query_one("#overview-body", Static).render())
        await pilot.press("K")
        await pilot.pause()
        (row,) = rows_text(screen.query_one(KernelStatsTable))
        assert row.startswith("k ") and "1.00 µs" in row
        assert app.return_code is None and not [w for w in app.workers if w.error is not None]
