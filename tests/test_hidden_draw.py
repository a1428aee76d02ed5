"""`[` `]` in the profiler views change the trace screen's scope under them: the trace screen takes the scope
at once and is laid out and drawn while hidden, so that `esc` draws no new line. What `esc` shows is what
the same scope shows when it is set on the trace screen itself (every pane's lines compared), on the
bundled training sample and on a real six-step CUDA trace; with the drawing ahead turned off, `esc` draws
its rows anew (the check can fail)."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest
from app_support import settle, wait_for_screen
from conftest import ROOT, training_sample
from textual.geometry import Region

from mlptui.app import make_app
from mlptui.screens.hidden_draw import HiddenDraw
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.details import Details
from mlptui.widgets.lines import LineList
from mlptui.widgets.timeline import Timeline

REAL = ROOT.parent / "shared" / "corpus" / "real" / "pytorch__kineto__worker0.1623143089861.pt.trace.json.gz"
MOVES = ["right_square_bracket", "right_square_bracket"]       # the last step → every step → the first



def panes_text(screen: TraceScreen) -> dict[str, list[str]]:
    return {str(w.id): [s.text for s in w.render_lines(Region(0, 0, *w.size))]
            for w in screen.query("LineList, Details, Timeline") if w.display}


def count_new_lines(monkeypatch: pytest.MonkeyPatch, drawn: collections.Counter[str]) -> None:
    """Count the lines made from the data (a row's cells, a timeline lane), not taken from a cache."""
    row, lane = LineList._drawn_row, Timeline._lane_segments

    def counted_row(self, cells, widths, total, tone):      # type: ignore[no-untyped-def]
        if tone != "header":        # the column titles are drawn with every paint
            drawn[type(self).__name__] += 1
        return row(self, cells, widths, total, tone)

    def counted_lane(self, *args):      # type: ignore[no-untyped-def]
        drawn["Timeline"] += 1
        return lane(self, *args)

    monkeypatch.setattr(LineList, "_drawn_row", counted_row)
    monkeypatch.setattr(Timeline, "_lane_segments", counted_lane)


async def back_from_views(path: str, drawn: collections.Counter[str]) -> tuple[object, dict[str, list[str]]]:
    """Open the views, move their scope, then `esc`: the lines drawn by `esc`, counted in `drawn`."""
    app = make_app([path])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        await pilot.press("o")
        views = await wait_for_screen(app, pilot, ProfileScreen)
        for key in MOVES:
            await pilot.press(key)
        await settle(pilot)
        assert screen.scope == views.scope, "the trace screen did not take the views' scope"
        details = screen.query_one(Details)
        before = len(details._drawn)
        drawn.clear()
        await pilot.press("escape")
        await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        drawn["Details"] = len(details._drawn) - before
        return screen.scope, panes_text(screen)


async def on_the_trace_screen(path: str) -> tuple[object, dict[str, list[str]]]:
    app = make_app([path])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        for key in MOVES:
            await pilot.press(key)
        await settle(pilot)
        return screen.scope, panes_text(screen)


@pytest.mark.parametrize("which", ["sample", "real"])
async def test_back_from_the_views_draws_no_new_line(which: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = training_sample() if which == "sample" else str(REAL)
    if not Path(path).exists():
        pytest.skip("real-trace corpus not available")
    drawn: collections.Counter[str] = collections.Counter()
    count_new_lines(monkeypatch, drawn)
    scope, shown = await back_from_views(path, drawn)
    assert +drawn == collections.Counter(), f"esc drew new lines: {dict(drawn)}"
    expected_scope, expected = await on_the_trace_screen(path)
    assert scope == expected_scope
    assert shown == expected


async def test_without_drawing_ahead_esc_draws_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: collections.Counter[str] = collections.Counter()
    count_new_lines(monkeypatch, drawn)
    monkeypatch.setattr(HiddenDraw, "start", lambda self: None)
    await back_from_views(training_sample(), drawn)
    assert drawn["OpTree"] > 0 and drawn["KernelTable"] > 0 and drawn["Timeline"] > 0 and drawn["Details"] > 0
