"""The critical path view in the app: `c` from the trace screen lists the path's segments of the step in
scope, with its length, its time by kind and the what-if; the rows add up to the step window computed
here from the raw events."""

from __future__ import annotations

import gzip
import json

from app_support import wait_for_screen
from conftest import find_sample
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.profile_tables import SegmentTable


def _last_step_window(path) -> float:
    events = json.load(gzip.open(path))["traceEvents"]
    x = [e for e in events if e.get("ph") == "X"]
    step = max((e for e in x if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    start, end = step["ts"], step["ts"] + step["dur"]
    corr = {e["args"]["correlation"] for e in x if e.get("cat") in ("cuda_runtime", "cuda_driver")
            and start <= e["ts"] < end and "correlation" in e.get("args", {})}
    ends = [e["ts"] + e["dur"] for e in x if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")
            and e.get("args", {}).get("correlation") in corr]
    return max([end, *ends]) - start


async def test_c_lists_the_critical_path_of_the_step() -> None:
    path = find_sample("mlp", "eager", "bf16")
    app = make_app([str(path)])
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("c")
        screen = await wait_for_screen(app, pilot, ProfileScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.view == "critical"
        table = screen.query_one(SegmentTable)
        assert table.rows and app.focused is table
        total = sum(r.dur_us for r in table.rows)
        assert abs(total - _last_step_window(path)) < 0.01
        assert table.rows[0].start_us == 0.0                       # times from the step's start
        assert {r.kind for r in table.rows} >= {"cpu", "launch"}
        text = str(screen.query_one("#critical-summary", Static).render())
        assert "critical path" in text and "without " in text
