"""The critical path view in the app: `c` from the trace screen lists the path's segments of the step in
scope, with its length, its time by kind and the what-if; the rows add up to the step window computed
here from the raw events."""

from __future__ import annotations

import gzip
import json

import pytest
from app_support import wait_for_screen
from conftest import CORPUS, find_sample, raw_step_window
from textual.widgets import Static

import mlptui.screens.path_lit as path_lit
from mlptui.app import make_app
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.profile_tables import SegmentTable


def _last_step_window(path) -> float:
    events = json.load(gzip.open(path))["traceEvents"]
    step = max((e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")),
               key=lambda e: e["ts"])
    return raw_step_window(events, step)


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


def _raw_x(path) -> list[dict]:
    return [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("ph") == "X"]


async def test_shift_c_lights_the_path_on_the_timeline_and_enter_goes_to_a_segment() -> None:
    """`C` lists the path of the step in scope in pane 4 and lights its spans on the lanes; `enter` on a
    kernel's segment puts the timeline's cursor on that kernel and the details on it. The kernel and its
    time are read back from the raw events by name and start."""
    from mlptui.viewmodels.detail_text import gpu_details
    from mlptui.widgets.details import Details
    from mlptui.widgets.timeline import Timeline

    path = find_sample("mlp", "eager", "bf16")
    app = make_app([str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("C")
        await pilot.pause()
        table = screen.query_one("#path-segments", SegmentTable)
        assert app.focused is table and table.rows
        assert not screen.query_one("#launches-pane").display and screen.query_one("#path-pane").display
        assert abs(sum(r.dur_us for r in table.rows) - _last_step_window(path)) < 0.01
        timeline = screen.query_one(Timeline)
        lit = {kind for kind, _key in timeline.path}
        assert {"cpu", "gpu"} <= lit
        # the GPU lane draws some columns in the path's style, and only where a kernel of the path ran
        gpu_lane = next(i for i, lane in enumerate(timeline.lanes) if lane.kind == "gpu")
        strip = timeline.render_line(gpu_lane + 1 - round(timeline.scroll_offset.y))
        path_style = timeline.get_component_rich_style("timeline--path", partial=True)
        assert any(seg.style is not None and seg.style.underline and seg.style.color == path_style.color
                   for seg in strip)
        # enter on the first kernel of the path
        k = next(i for i, r in enumerate(table.rows) if r.kind == "kernel")
        table.move_cursor(k)
        await pilot.press("enter")
        await pilot.pause()
        row = table.rows[k]
        lane_index, interval = timeline.cursor
        lane = timeline.lanes[lane_index]
        assert lane.kind == "gpu" and int(lane.ids[interval]) == row.gpu_id
        step = max((e for e in _raw_x(path) if str(e.get("name", "")).startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
        raw = [e for e in _raw_x(path) if e.get("cat") == "kernel" and e["name"] == row.name
               and abs((e["ts"] - step["ts"]) - row.start_us) < 0.01]
        assert len(raw) == 1 and abs(raw[0]["dur"] - row.dur_us) < 0.01
        assert screen.selected == ("gpu", row.gpu_id)
        assert screen.query_one(Details).text == gpu_details(screen.facts.trace, row.gpu_id)
        # C again: the launches are back, the path is out
        await pilot.press("C")
        await pilot.pause()
        assert screen.query_one("#launches-pane").display and not timeline.path


async def test_shift_c_on_a_trace_without_steps_works_its_path_out_in_a_worker(monkeypatch) -> None:
    """A trace without steps: `C` shows the whole trace's path; above the size that keeps a key quick it
    says it is working, then shows the path once the worker is done. HTA's event-sync test trace: its
    path ends with the last kernel (ampere_sgemm_128x64_nn) and the cudaDeviceSynchronize's return."""
    trace = CORPUS / "critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz"
    if not trace.exists():
        pytest.skip("corpus not here")
    monkeypatch.setattr(path_lit, "AHEAD_OF_KEY", 0)
    app = make_app([str(trace)])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("C")
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows = screen.query_one("#path-segments", SegmentTable).rows
        assert [r.name for r in rows if r.kind == "kernel"] == ["ampere_sgemm_128x64_nn"]
        assert (rows[-1].kind, rows[-1].name) == ("sync_wait", "cudaDeviceSynchronize")
        assert "all: " in str(screen.query_one("#path-summary", Static).render())
