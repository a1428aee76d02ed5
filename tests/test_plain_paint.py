"""The panes that skip Textual's styling pass paint exactly what that pass paints: every line of the dispatch
tree, the kernel, launch and step lists, the timeline and the details pane is compared, cell by cell and style by style, with
the lines Textual's own `Widget.render_lines` makes for the same widget in the same state — at two terminal
sizes, in truecolour, in the 16 ANSI colours and with NO_COLOR set, focused and not, scrolled down and sideways, with raw names,
on a bundled sample trace. A widget given a rule the plain paint cannot draw (padding, a border, a tint)
goes back to Textual's path, and comes back from it, without a stale line."""

from __future__ import annotations

import pytest
from app_support import settle, wait_for_screen
from rich.segment import Segment
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from mlptui.app import make_app
from mlptui.samples import sample_trace_paths
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.details import Details
from mlptui.widgets.kernels import KernelTable
from mlptui.widgets.launches import LaunchTable
from mlptui.widgets.op_tree import OpTree
from mlptui.widgets.plain_paint import PlainPaint, paints_plain
from mlptui.widgets.steps import StepList
from mlptui.widgets.timeline import Timeline

PANES = (OpTree, KernelTable, LaunchTable, StepList, Timeline, Details)


def cells(strips: list[Strip]) -> list[list[tuple[str, object]]]:
    """Each line as (character, style) per cell: how the segments are cut does not matter, what is drawn does."""
    return [[(ch, seg.style) for seg in Segment.simplify(strip) for ch in seg.text] for strip in strips]


def textual_lines(widget: Widget, crop: Region) -> list[Strip]:
    widget._styles_cache.clear()        # nothing kept: every line goes through Textual's pass
    return Widget.render_lines(widget, crop)


def assert_same_as_textual(screen: Screen, what: str) -> None:
    for kind in PANES:
        widget = screen.query_one(kind)
        assert isinstance(widget, PlainPaint)
        assert paints_plain(widget), f"{kind.__name__} should take the plain path ({what})"
        full = widget.region.size.region
        crops = [full, Region(0, 1, full.width, max(1, full.height - 2)), Region(2, 0, max(1, full.width - 5), 2)]
        for crop in crops:
            ours = widget.render_lines(crop)
            theirs = textual_lines(widget, crop)
            assert len(ours) == len(theirs) == crop.height
            assert [s.cell_length for s in ours] == [s.cell_length for s in theirs] == [crop.width] * crop.height
            assert cells(ours) == cells(theirs), f"{kind.__name__} {crop} differs from Textual's paint ({what})"


@pytest.mark.parametrize("size", [(100, 30), (200, 60)])
@pytest.mark.parametrize("colours", ["truecolour", "ansi", "no-colour"])
async def test_plain_paint_draws_what_textual_draws(size: tuple[int, int], colours: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR set: Textual adds its monochrome line filter, which the plain paint must apply as well."""
    if colours == "no-colour":
        monkeypatch.setenv("NO_COLOR", "1")
    sample = next(p for p in sample_trace_paths() if p.name.startswith("mlp-eager-"))
    app = make_app([str(sample)])
    if colours == "ansi":
        app.ansi_color = True
    async with app.run_test(size=size) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        assert_same_as_textual(screen, "opened")
        for key, what in [("j", "cursor moved"), ("pagedown", "scrolled down"), ("3", "kernels focused"),
                          ("right", "kernels slid sideways"), ("4", "launches focused"), ("5", "timeline focused"),
                          ("plus", "timeline zoomed"), ("6", "details focused"), ("j", "details scrolled"), ("r", "raw names"), ("left_square_bracket", "another step")]:
            await pilot.press(key)
            await settle(pilot)
            assert_same_as_textual(screen, what)


async def test_a_rule_the_plain_paint_cannot_draw_goes_to_textual() -> None:
    sample = next(p for p in sample_trace_paths() if p.name.startswith("mlp-eager-"))
    app = make_app([str(sample)])
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        await settle(pilot)
        tree = screen.query_one(OpTree)
        full = tree.region.size.region
        plain = cells(tree.render_lines(full))
        for rule, value in [("padding", (0, 2)), ("border", ("round", "red")), ("tint", "red 50%")]:
            setattr(tree.styles, rule, value)
            await settle(pilot)
            assert not paints_plain(tree)
            styled = tree.render_lines(tree.region.size.region)
            assert cells(styled) == cells(textual_lines(tree, tree.region.size.region))
            assert cells(styled) != plain, f"{rule} should change what is drawn"
            setattr(tree.styles, rule, None)
            await settle(pilot)
            assert paints_plain(tree)
            assert cells(tree.render_lines(full)) == plain, f"a stale line after {rule} was taken away"
