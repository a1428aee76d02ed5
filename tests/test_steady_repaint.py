"""What a pane repaints when its range or text changes: the scrollbar kept per look draws what Textual's own
draws for the same thumb, and draws nothing again for a thumb on the same cells; a new row count that keeps
the scrollbar lays out nothing; a details text that brings the scrollbar is laid out once, wrapped at the
width it is shown at."""

from __future__ import annotations

import itertools

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mlptui.widgets.details import Details
from mlptui.widgets.lines import Column, LineList
from mlptui.widgets.scroll_range import set_scroll_range
from mlptui.widgets.steady_scrollbar import SteadyScrollBar, SteadyScrollbars

HEIGHT = 10


class Plain(ScrollView):
    def render_line(self, y: int) -> Strip:
        return Strip.blank(self.size.width)


class Steady(SteadyScrollbars, Plain):
    pass


class Rows(LineList):
    def __init__(self) -> None:
        super().__init__([Column("row", 0)], id="rows")
        self.count = 3

    def row_count(self) -> int:
        return self.count

    def row_cells(self, index: int) -> list:
        return [f"row {index}"]


class Panes(App[None]):
    CSS = f"""
    Horizontal {{ height: {HEIGHT}; }}
    Plain {{ width: 20; height: {HEIGHT}; overflow-y: scroll; }}
    Rows {{ height: {HEIGHT}; }}
    Details {{ width: 30; height: {HEIGHT}; }}
    """

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Plain(id="plain")
            yield Steady(id="steady")
            yield Details(id="details")
        yield Rows()


def layouts(app: App[None]) -> list[int]:
    """A counter of the screen's layouts (Textual publishes the screen after each one)."""
    count = [0]
    app.screen.screen_layout_refresh_signal.subscribe(app.screen, lambda _: count.__setitem__(0, count[0] + 1))
    return count


async def test_scrollbar_kept_per_look_draws_what_textuals_draws() -> None:
    app = Panes()
    async with app.run_test(size=(80, 40)) as pilot:
        plain, steady = app.query_one("#plain", Plain), app.query_one("#steady", Steady)
        assert isinstance(steady.vertical_scrollbar, SteadyScrollBar)
        assert type(plain.vertical_scrollbar) is not SteadyScrollBar
        region = Region(0, 0, 1, HEIGHT)
        # ranges and positions in an order that comes back to looks already drawn
        cases = list(itertools.product([HEIGHT + 1, 37, 400, 402, 5000], [0.0, 0.5, 1.0]))
        for rows, at in cases + cases[::-1]:
            for view in (plain, steady):
                view.virtual_size = Size(20, rows)
            await pilot.pause()
            for view in (plain, steady):
                view.scroll_to(y=round(at * (rows - HEIGHT)), animate=False, immediate=True)
            await pilot.pause()
            assert steady.vertical_scrollbar.position == plain.vertical_scrollbar.position
            drawn = steady.vertical_scrollbar.render_lines(region)
            assert drawn == plain.vertical_scrollbar.render_lines(region), (rows, at)
            assert any(s.text.strip() or (s.style and s.style.reverse) for strip in drawn for s in strip), "no thumb"


async def test_a_thumb_on_the_same_cells_is_not_drawn_again() -> None:
    app = Panes()
    async with app.run_test(size=(80, 40)) as pilot:
        plain, steady = app.query_one("#plain", Plain), app.query_one("#steady", Steady)
        region = Region(0, 0, 1, HEIGHT)
        for view in (plain, steady):
            view.virtual_size = Size(20, 400)
        await pilot.pause()
        first, first_plain = steady.vertical_scrollbar.render_lines(region), plain.vertical_scrollbar.render_lines(region)
        for view in (plain, steady):       # 402 rows: a thumb of a quarter cell, on the same cell as 400's
            view.virtual_size = Size(20, 402)
        await pilot.pause()
        again, again_plain = steady.vertical_scrollbar.render_lines(region), plain.vertical_scrollbar.render_lines(region)
        assert again_plain is not first_plain and again_plain == first_plain    # Textual drew it again
        assert again is first and again == again_plain                          # the kept look served it
        for view in (plain, steady):
            view.virtual_size = Size(20, 20)    # the thumb is half the bar now: drawn anew
        await pilot.pause()
        moved = steady.vertical_scrollbar.render_lines(region)
        assert moved != first and moved == plain.vertical_scrollbar.render_lines(region)


async def test_row_count_that_keeps_the_scrollbar_lays_out_nothing() -> None:
    app = Panes()
    async with app.run_test(size=(80, 40)) as pilot:
        rows = app.query_one(Rows)
        rows.count = 500
        rows.reset_rows()
        await pilot.pause()
        assert rows.show_vertical_scrollbar
        count = layouts(app)
        for n in (800, 300, 501):
            rows.count = n
            rows.reset_rows(cursor=n - 1)
            await pilot.pause()
            assert rows.virtual_size.height == n + 1      # the header line and the rows
            # the thumb stands where the rows on screen are (at the last row), as a layout would put it
            assert rows.vertical_scrollbar.position == rows.scroll_y == n + 1 - rows.container_size.height
        assert count[0] == 0
        # fewer rows than the pane holds, then many again with the cursor moved meanwhile: the scrollbar goes
        # and comes back (a layout each), its thumb where the rows are, not where it was when it went
        rows.count = 4
        rows.reset_rows()
        await pilot.pause()
        assert not rows.show_vertical_scrollbar and count[0] == 1
        rows.count = 600
        rows.reset_rows(cursor=0)
        await pilot.pause()
        assert rows.show_vertical_scrollbar and count[0] == 2
        assert rows.scroll_y == 0 and rows.vertical_scrollbar.position == 0


async def test_details_text_that_brings_the_scrollbar_is_laid_out_once() -> None:
    app = Panes()
    async with app.run_test(size=(80, 40)) as pilot:
        details = app.query_one(Details)
        # more text lines than the pane holds, and two text lines that only wrapped exceed it
        for long in ("\n".join(f"line {i}: " + "word " * 9 for i in range(HEIGHT + 5)),
                     "\n".join(f"paragraph {i}: " + "word " * 40 for i in range(2))):
            for text in (long, "short"):    # a scrollbar shown the first time is laid out once more, by Textual
                details.show_text(text)
                await pilot.pause()
                await pilot.pause()
            assert not details.show_vertical_scrollbar
            count = layouts(app)
            details.show_text(long)
            await pilot.pause()
            await pilot.pause()
            assert details.show_vertical_scrollbar
            assert count[0] == 1
            width = details.scrollable_content_region.width - Details.MARGIN     # the margin is drawn in the lines
            expected = Text(long).wrap(app.console, width, overflow="fold")
            assert [strip.text for strip in details._lines] == [line.plain for line in expected]
            assert details.virtual_size.height == len(expected) > HEIGHT
            details.show_text("short again")
            await pilot.pause()
            await pilot.pause()
            assert not details.show_vertical_scrollbar and count[0] == 2
            assert [strip.text for strip in details._lines] == ["short again"]


async def test_a_range_that_leaves_the_thumb_in_place_repaints_no_scrollbar() -> None:
    app = Panes()
    async with app.run_test(size=(80, 40)) as pilot:
        steady = app.query_one("#steady", Steady)
        steady.virtual_size = Size(10, 400)
        await pilot.pause()
        await pilot.pause()
        bar = steady.vertical_scrollbar
        asked: list[Region] = []
        drawn = bar.render_lines

        def counted(crop: Region) -> list[Strip]:
            asked.append(crop)
            return drawn(crop)

        bar.render_lines = counted  # type: ignore[method-assign]
        # as the panes set a new range (no layout): the pane repaints, the bar with it, once; the bar asks
        # for no repaint of its own (Textual's would, a paint of the bar's cells after the pane's)
        for rows in (402, 405, 401):
            asked.clear()
            set_scroll_range(steady, Size(10, rows))
            assert not bar._repaint_required        # Textual's flag: the bar asked for no repaint of its own
            for _ in range(4):
                await pilot.pause()
            assert bar.window_virtual_size == rows and len(asked) == 1
        set_scroll_range(steady, Size(10, 20))      # the thumb grows to half the bar: drawn anew
        assert bar._repaint_required
        await pilot.pause()
        await pilot.pause()
        # what the screen shows of the bar is what Textual's own scrollbar draws for this range
        plain = app.query_one("#plain", Plain)
        plain.virtual_size = Size(10, 20)
        await pilot.pause()
        assert drawn(Region(0, 0, 1, HEIGHT)) == plain.vertical_scrollbar.render_lines(Region(0, 0, 1, HEIGHT))
