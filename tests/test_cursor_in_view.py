"""Where a list's cursor sits after its rows are set and the pane is resized: the place follows from the
final page size alone, whatever sizes the pane went through while the screen was laid out (a short
terminal's class shrinks panes after their first layout), and after a key has moved the cursor a resize
scrolls only as far as the cursor needs to stay in view."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from mlptui.widgets.lines import Column, LineList

ROWS = 200


class Rows(LineList):
    def __init__(self, cursor: int) -> None:
        super().__init__([Column("row", 0)], id="rows")
        self.start = cursor

    def row_count(self) -> int:
        return ROWS

    def row_cells(self, index: int) -> list:
        return [f"row {index}"]

    def on_mount(self) -> None:
        self.reset_rows(self.start)     # before the first layout, as the screens do


class One(App[None]):
    CSS = "Rows { height: 30; }"

    def __init__(self, cursor: int) -> None:
        super().__init__()
        self.cursor = cursor

    def compose(self) -> ComposeResult:
        yield Rows(self.cursor)


async def settle(app: One, pilot, heights: list[int]) -> LineList:
    rows = app.query_one(Rows)
    for height in heights:
        rows.styles.height = height
        await pilot.pause()
    await pilot.pause()
    return rows


def top(rows: LineList) -> int:
    return round(rows.scroll_offset.y)


@pytest.mark.parametrize("cursor", [3, 25, 120])
async def test_place_depends_on_the_final_size_only(cursor: int) -> None:
    """Shown at 21 rows (20 a page below the header) directly, or through 2, 3, 40 and 5 rows first: the
    same top row, and the cursor's row is in view: the first page holds it from the top, past that it is
    centred (cursor − page // 2)."""
    tops = []
    for heights in ([21], [2, 21], [3, 40, 5, 21], [1, 2, 3, 21]):
        app = One(cursor)
        async with app.run_test(size=(40, 60)) as pilot:
            rows = await settle(app, pilot, heights)
            page = rows.size.height - 1
            assert page == 20
            assert top(rows) <= cursor < top(rows) + page, (heights, top(rows))
            tops.append(top(rows))
    want = 0 if cursor < 20 else cursor - 10
    assert tops == [want] * 4


async def test_after_a_key_a_resize_scrolls_only_as_far_as_needed() -> None:
    """Once the cursor was moved by a key, a shrink keeps it on the last line of the new page rather than
    centring it, and a growth does not scroll at all."""
    app = One(0)
    async with app.run_test(size=(40, 60)) as pilot:
        rows = await settle(app, pilot, [31])
        rows.focus()
        for _ in range(25):
            await pilot.press("j")
        await pilot.pause()
        assert rows.cursor == 25 and top(rows) == 0
        rows = await settle(app, pilot, [11])          # a page of 10
        assert top(rows) == 25 - 10 + 1
        rows = await settle(app, pilot, [41])          # a page of 40: room without scrolling
        assert top(rows) == 16
        await pilot.press("k")
        rows = await settle(app, pilot, [6])           # a page of 5: row 24 is now its last line
        assert rows.cursor == 24 and top(rows) == 24 - 5 + 1
