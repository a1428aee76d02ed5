"""Lines kept across a change of rows — a list's rows that have an identity (the dispatch tree's ops, the
kernels, the launching ops), the details pane's last texts and the timeline's lanes — are drawn again when a step is shown again,
and are always the lines a fresh draw of the same state makes: compared cell by cell and style by style
with a draw from empty caches after every key of a walk over steps, raw names, Python frames, grouping,
sorting, expanding, zooming and panning, on the bundled training sample (several steps)."""

from __future__ import annotations

from typing import Any

from app_support import settle, wait_for_screen
from conftest import training_sample
from rich.segment import Segment
from textual.strip import Strip

from mlptui.app import make_app
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.details import Details
from mlptui.widgets.kernels import KernelTable
from mlptui.widgets.launches import LaunchTable
from mlptui.widgets.lines import LineList
from mlptui.widgets.op_tree import OpTree
from mlptui.widgets.timeline import Timeline

KEPT = (OpTree, KernelTable, LaunchTable)


def cells(strips: list[Strip]) -> list[list[tuple[str, object]]]:
    return [[(ch, seg.style) for seg in Segment.simplify(strip) for ch in seg.text] for strip in strips]


def fresh(widget: Any) -> list[list[tuple[str, object]]]:
    """What the widget draws from empty caches, its caches left as they were."""
    full = widget.region.size.region
    if isinstance(widget, LineList):
        saved = (widget._strips, widget._kept, widget._cells)
        widget._strips, widget._kept, widget._cells = {}, type(widget._kept)(), type(widget._cells)()
        try:
            return cells(widget.render_lines(full))
        finally:
            widget._strips, widget._kept, widget._cells = saved
    if isinstance(widget, Timeline):
        saved_lanes = widget._kept
        widget._kept = type(saved_lanes)()
        try:
            return cells(widget.render_lines(full))
        finally:
            widget._kept = saved_lanes
    saved_details = (widget._drawn, widget._lines, widget._wrapped_for, widget._width, widget._kept)
    widget._drawn, widget._wrapped_for, widget._kept = {}, -1, type(widget._kept)()
    try:
        return cells(widget.render_lines(full))
    finally:
        widget._drawn, widget._lines, widget._wrapped_for, widget._width, widget._kept = saved_details


def assert_fresh(screen: TraceScreen, what: str) -> None:
    for kind in (*KEPT, Details, Timeline):
        widget = screen.query_one(kind)
        drawn = cells(widget.render_lines(widget.region.size.region))
        assert drawn == fresh(widget), f"{kind.__name__}: a kept line differs from a fresh one ({what})"



async def test_kept_lines_are_the_lines_a_fresh_draw_makes() -> None:
    app = make_app([training_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        assert len(screen.facts.trace.steps) >= 2
        assert_fresh(screen, "opened")
        walk = ["right_square_bracket", "left_square_bracket", "right_square_bracket", "right_square_bracket",
                "left_square_bracket", "r", "left_square_bracket", "r", "f", "right_square_bracket", "f",
                "3", "a", "right_square_bracket", "a", "s", "left_square_bracket", "s", "2", "e",
                "right_square_bracket", "left_square_bracket", "j", "j", "h", "left_square_bracket",
                "right_square_bracket", "5", "plus", "l", "left_square_bracket", "right_square_bracket", "h",
                "minus", "full_stop", "left_square_bracket", "right_square_bracket"]
        for key in walk:
            await pilot.press(key)
            await settle(pilot)
            assert_fresh(screen, f"after {key}")


async def test_a_step_shown_again_draws_from_kept_lines() -> None:
    """Back on a step: every row of the three lists on screen is a line drawn for it before, the details
    pane's lines are those drawn for its text before, and so are the timeline's lanes (the same objects,
    with what Textual kept on them)."""
    app = make_app([training_sample()])
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        lists = [screen.query_one(kind) for kind in KEPT]
        details = screen.query_one(Details)
        full = {id(w): w.region.size.region for w in [*lists, details]}
        first = {id(w): w.render_lines(full[id(w)]) for w in lists}
        kept_before = {id(w): {id(s) for s in w._kept.values()} for w in lists}
        details_lines = [id(s) for s in details._drawn.values()]
        text = details.text
        timeline = screen.query_one(Timeline)
        lanes_before = {id(s) for lines in timeline._kept.values() for s in lines.values()}
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert details.text != text
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert details.text == text
        assert [id(s) for s in details._drawn.values()] == details_lines
        for widget in lists:
            assert widget.row_count() > 0
            again = widget.render_lines(full[id(widget)])
            assert cells(again) == cells(first[id(widget)])
            shown = [s for (index, tone), s in widget._strips.items() if tone == "base"]
            assert shown and all(id(s) in kept_before[id(widget)] for s in shown), type(widget).__name__
        shown_lanes = range(1, min(len(timeline.lanes), timeline.scrollable_content_region.height - 2) + 1)
        lanes_again = {id(timeline.render_line(y)) for y in shown_lanes}
        assert lanes_again and lanes_again <= lanes_before
