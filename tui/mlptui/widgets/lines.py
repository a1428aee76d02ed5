"""A list pane that formats only the rows on screen (the Line API), so a million rows cost nothing.

Textual's DataTable measures every cell and Tree re-measures on rebuild; this renders each visible
line from the row's cells, caches the text per row, and never walks all rows on a key press.
Subclasses say how many rows there are and what is in each (`row_count`, `row_cells`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mlptui.base.text import printable
from mlptui.keys import LIST_KEYS
from mlptui.widgets.kept import lru_get_or_make
from mlptui.widgets.plain_paint import PlainPaint
from mlptui.widgets.scroll_range import set_scroll_range
from mlptui.widgets.steady_scrollbar import SteadyScrollbars

# What every line of one paint shares: scroll x and y, the pane's width, the column widths, the lines' width.
Frame = tuple[int, int, int, list[int], int]

# A cell is its text, or (text, tone) where tone names a component class suffix: dim, warn, good, hot.
Cell = str | tuple[str, str]


@dataclass(frozen=True)
class Column:
    title: str
    width: int = 0          # 0: takes the room the other columns leave (at least `min_width`)
    align: str = "<"        # "<" or ">"
    min_width: int = 16
    drop: int = 0           # when the pane is too narrow, columns with the highest `drop` go first (0: never)


KEPT_FRAMES = 4     # frames whose kept lines are kept
GUTTERS = {"cursor": ">", "mark": "*"}      # the first cell of a row, by its tone (others: blank)


def _printable_cells(cells: list[Cell]) -> list[Cell]:
    # Names come from files: control characters are shown as escapes, never sent to the terminal.
    return [printable(c) if isinstance(c, str) else (printable(c[0]), c[1]) for c in cells]


HEAD_KEPT = 4       # a cut label keeps at least this much of its short name before its distinguishing words


def fit_cell(text: str, width: int) -> str:
    """`text` cut to `width` cells with `…`. A kernel label's distinguishing words (`… ‹SlidingOrChunked›`,
    mlptui.trace.names.distinct) are what tell two rows apart, so where they fit the cut falls in the
    short name before them instead of on them."""
    tail_at = text.find(" ‹")
    tail = text[tail_at:] if tail_at > 0 else ""
    room = width - cell_len(tail) - 1
    if tail and room >= HEAD_KEPT:
        return set_cell_size(text[:tail_at], room) + "…" + tail
    return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, width)


class LineList(SteadyScrollbars, PlainPaint, ScrollView, can_focus=True):
    """Rows of cells, a cursor, an optional header line; only visible lines are rendered."""

    DEFAULT_CSS = """
    LineList { height: 1fr; overflow-x: hidden; }
    LineList > .line-list--header { text-style: bold; color: $text-primary; }
    LineList > .line-list--cursor { background: $panel-lighten-2; text-style: bold; }
    LineList:focus > .line-list--cursor { background: $accent; color: $background; text-style: bold; }
    LineList > .line-list--mark { text-style: bold underline; }
    LineList > .line-list--dim { color: $text-muted; }
    LineList > .line-list--warn { color: $text-warning; }
    LineList > .line-list--good { color: $text-success; }
    LineList > .line-list--hot { color: $text-error; text-style: bold; }
    """
    COMPONENT_CLASSES = {
        "line-list--header", "line-list--cursor", "line-list--mark", "line-list--dim",
        "line-list--warn", "line-list--good", "line-list--hot",
    }
    BINDINGS = [*LIST_KEYS]
    SEPARATOR = " "
    CACHE_ROWS = 2048
    MEASURE = True          # False: the columns' own widths stand (no cells computed to size them)

    class CursorMoved(Message):
        """The cursor is on another row (posted on every move; handlers must stay cheap)."""

        def __init__(self, pane: LineList, index: int) -> None:
            self.pane = pane
            self.index = index
            super().__init__()

    class Chosen(Message):
        """`enter` on a row."""

        def __init__(self, pane: LineList, index: int) -> None:
            self.pane = pane
            self.index = index
            super().__init__()

    def __init__(self, columns: Sequence[Column], *, header: bool = True, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.columns = list(columns)
        self.header = header
        self.cursor = 0
        self.marked: set[int] = set()
        self._cells: OrderedDict[int, list[Cell]] = OrderedDict()
        self._strips: dict[tuple[int, str], Strip] = {}
        # Lines of rows that have an identity (`row_key`), kept across row changes: a step shown again
        # draws its rows from here, and Textual's cuts and colour filters kept on each line come with them.
        # One set per frame (column widths, line width, the subclass's `frame_extra`), a few frames kept:
        # two steps whose columns measure differently each keep their lines.
        self._kept_frames: OrderedDict[Hashable, OrderedDict[Hashable, Strip]] = OrderedDict()
        self._kept: OrderedDict[Hashable, Strip] = OrderedDict()
        self._kept_for: Hashable = None
        self._widths: list[int] = []
        self._layout: tuple[int, list[int]] = (-1, [])
        self._styles: dict[str, Style] = {}
        self._frame: Frame | None = None    # while a paint runs
        self._auto_top = True               # no key has moved the cursor since the rows were set

    # -- what subclasses provide -------------------------------------------------------------
    def row_count(self) -> int:
        return 0

    def fit_text(self, column: int, text: str, width: int) -> str:
        """A cell's text cut to its column's width (only called when it is wider)."""
        return fit_cell(text, width)

    def row_cells(self, index: int) -> list[Cell]:
        return []

    def header_cells(self) -> list[str]:
        return [c.title for c in self.columns]

    def sample_rows(self) -> range:
        """Rows measured to size the fixed columns (a sample, never all rows)."""
        return range(min(self.row_count(), 200))

    def row_key(self, index: int) -> Hashable | None:
        """What the row's cells are a function of, when that is cheaper to say than the cells to make (and
        the same key must always mean the same cells while the columns keep their widths); None: the row
        is drawn again whenever the rows change."""
        return None

    # -- data changes ------------------------------------------------------------------------
    def _forget(self) -> None:
        self._cells.clear()
        self._strips.clear()

    def _drop_lines(self) -> None:
        """Every drawn line is stale (new styles or text): the kept lines of every frame too."""
        self._strips.clear()
        self._kept_frames.clear()
        self._kept = OrderedDict()
        self._kept_for = None

    def frame_extra(self) -> Hashable:
        """What else than the column widths the lines are drawn for (the tree's indentation basis)."""
        return None

    def _keep_for(self, widths: list[int], total: int) -> None:
        """Kept lines of the frame the lines are drawn for now."""
        frame = (tuple(widths), total, self.frame_extra())
        if frame != self._kept_for:
            self._kept = lru_get_or_make(self._kept_frames, frame, OrderedDict, KEPT_FRAMES)
            self._kept_for = frame

    def reset_rows(self, cursor: int = 0) -> None:
        """The rows changed: forget cached text, re-measure a sample, keep the cursor in range."""
        self._forget()
        self._measure()
        self.cursor = max(0, min(cursor, self.row_count() - 1))
        self._auto_top = True
        self._scroll_to_cursor()        # before layout, the first resize does it
        self.refresh()
        if self.has_focus and self.row_count():     # what the cursor is on changed under it
            self.post_message(self.CursorMoved(self, self.cursor))

    def _scroll_to_cursor(self) -> None:
        """Fresh rows: the cursor's row in view, centred when it is past the first page."""
        if not self.size.height:        # a page of one row before layout would scroll to the wrong place
            return
        page = self._page()
        top = round(self.scroll_offset.y)
        if not top <= self.cursor < top + page:
            self.scroll_to(y=max(0, self.cursor - page // 2), animate=False, immediate=True)

    def _keep_cursor_in_view(self) -> None:
        """After a resize. Until a key moves the cursor, its place follows from the final page size alone
        (top, or centred past the first page), whatever sizes the pane went through while the screen was
        laid out; after that, the view scrolls only as far as the cursor needs."""
        if not self.size.height:
            return
        page = self._page()
        top = round(self.scroll_offset.y)
        if self._auto_top:
            want = 0 if self.cursor < page else self.cursor - page // 2
        elif self.cursor < top:
            want = self.cursor
        elif self.cursor >= top + page:
            want = self.cursor - page + 1
        else:
            return
        if want != top:
            self.scroll_to(y=want, animate=False, immediate=True)

    def rows_changed(self) -> None:
        """Rows were inserted or removed (tree expansion): only the row count and cache move."""
        self._forget()
        self._set_virtual_size()
        self.refresh()

    def refresh_text(self) -> None:
        """Cell text changed (raw names toggled) without the rows changing."""
        self._forget()
        self._drop_lines()
        self._measure()
        self.refresh()

    def measured_widths(self) -> list[int]:
        """Natural column widths: each fixed column fits its header and a sample of its cells."""
        heads = self.header_cells()
        widths = [max(c.width, cell_len(heads[i]) if i < len(heads) else 0) for i, c in enumerate(self.columns)]
        for i in self.sample_rows() if self.MEASURE else ():
            for j, cell in enumerate(self.cells(i)):
                if j < len(widths) and self.columns[j].width:
                    text = cell if isinstance(cell, str) else cell[0]
                    widths[j] = max(widths[j], min(cell_len(text), 48))
        return widths

    def _measure(self) -> None:
        widths = self.measured_widths()
        if widths != self._widths:     # the same natural widths keep the fitted ones
            self._strips.clear()
            self._layout = (-1, [])
        self._widths = widths
        self._set_virtual_size()

    def fit_widths(self, room: int, natural: list[int]) -> list[int]:
        """Column widths for `room` cells: the flexible column takes the room left; when even its
        minimum does not fit, droppable columns are hidden (width 0), highest `drop` first."""
        widths = list(natural)
        shown = [True] * len(widths)

        def need() -> int:
            cols = [j for j in range(len(widths)) if shown[j]]
            fixed = sum(widths[j] if self.columns[j].width else self.columns[j].min_width for j in cols)
            return fixed + len(self.SEPARATOR) * (len(cols) - 1)

        for j in sorted((j for j, c in enumerate(self.columns) if c.drop), key=lambda j: -self.columns[j].drop):
            if need() <= room:
                break
            shown[j] = False
        cols = [j for j in range(len(widths)) if shown[j]]
        fixed = sum(widths[j] for j in cols if self.columns[j].width) + len(self.SEPARATOR) * (len(cols) - 1)
        for j, column in enumerate(self.columns):
            if not shown[j]:
                widths[j] = 0
            elif not column.width:
                widths[j] = max(min(column.min_width, 12), room - fixed)
        return widths

    def _layout_widths(self) -> list[int]:
        """The widths for the pane's current width, computed once per width. The room changes when the
        scrollbar comes and goes: lines cut for the old width are dropped."""
        if not self._widths:
            self._measure()
        room = self.scrollable_content_region.width - 1
        if self._layout[0] == room:
            return self._layout[1]
        widths = self.fit_widths(room, self._widths)
        self._layout = (room, widths)
        self._strips.clear()
        return widths

    def _set_virtual_size(self) -> None:
        widths = self._layout_widths()
        width = 1 + sum(widths) + len(self.SEPARATOR) * (sum(1 for w in widths if w) - 1)
        set_scroll_range(self, Size(width, self.row_count() + (1 if self.header else 0)))

    def on_resize(self) -> None:
        """A new size (first layout, a terminal resize, a class that shrinks the pane): the scroll range
        follows, and the cursor is brought back on screen, since the page it was centred in has changed."""
        self._set_virtual_size()
        self._keep_cursor_in_view()

    # -- rendering ---------------------------------------------------------------------------
    def cells(self, index: int) -> list[Cell]:
        cached = self._cells.get(index)
        if cached is None:
            cached = self._cells[index] = _printable_cells(self.row_cells(index))
            if len(self._cells) > self.CACHE_ROWS:
                self._cells.popitem(last=False)
        return cached

    def notify_style_update(self) -> None:
        self._styles.clear()
        self._drop_lines()
        super().notify_style_update()

    def _style(self, name: str) -> Style:
        style = self._styles.get(name)
        if style is None:
            style = self.rich_style + self.get_component_rich_style(f"line-list--{name}", partial=True) \
                if name != "base" else self.rich_style
            self._styles[name] = style
        return style

    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - (1 if self.header else 0))

    def _line(self, texts: Sequence[Cell], widths: list[int], gutter: str, tone: str) -> list[Segment]:
        """The row's cells fitted to their widths, as few segments as styles: a run of cells in one style
        is one segment, so every later step of the paint (cropping, colour filters, the terminal's bytes)
        has a handful of pieces per line, not two per column."""
        base = self._style(tone)
        segments: list[Segment] = []
        run: list[str] = [gutter]
        run_style = base
        first = True
        for j, cell in enumerate(texts[: len(widths)]):
            width = widths[j]
            if not width:
                continue
            text, cell_tone = (cell, tone) if isinstance(cell, str) else (cell[0], cell[1])
            if cell_len(text) > width:
                text = self.fit_text(j, text, width)
            pad = width - cell_len(text)
            text = text + " " * pad if self.columns[j].align == "<" else " " * pad + text
            if cell_tone == tone:
                style = base
            elif tone == "base":
                style = self._style(cell_tone)
            else:
                style = self._style(cell_tone) + base
            if not first:       # the separator takes the row's own style
                if run_style != base:
                    segments.append(Segment("".join(run), run_style))
                    run, run_style = [], base
                run.append(self.SEPARATOR)
            first = False
            if style != run_style:
                if run:
                    segments.append(Segment("".join(run), run_style))
                run, run_style = [], style
            run.append(text)
        if run:
            segments.append(Segment("".join(run), run_style))
        return segments

    def predraw(self, rows: Iterable[tuple[Hashable, list[Cell]]]) -> None:
        """Draw rows ahead, by their `row_key` and cells, into the kept lines of the frame shown now: rows
        about to be shown (a neighbour step) then cost nothing to draw, when they come in the same frame."""
        if not self.size.width or not self._widths:
            return
        _, _, _, widths, total = self._frame_geometry()
        for key, cells in rows:
            if (key, "base") not in self._kept:
                self._keep_line((key, "base"), self._drawn_row(_printable_cells(cells), widths, total, "base"))

    def _drawn_row(self, cells: Sequence[Cell], widths: list[int], total: int, tone: str) -> Strip:
        """One line: the gutter (the cursor's `>`, a mark's `*`), the cells, widened to `total` cells."""
        segments = self._line(cells, widths, GUTTERS.get(tone, " "), tone)
        return Strip(segments).adjust_cell_length(total, self._style(tone))

    def _keep_line(self, key: Hashable, strip: Strip) -> None:
        self._kept[key] = strip
        if len(self._kept) > self.CACHE_ROWS:
            self._kept.popitem(last=False)

    def _frame_geometry(self) -> Frame:
        """What every line of one paint shares: the scroll offset, the pane's width, the column widths and
        the width the lines are drawn at."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        widths = self._layout_widths()
        total = max(width, 1 + sum(widths) + len(self.SEPARATOR) * (sum(1 for w in widths if w) - 1))
        self._keep_for(widths, total)
        return scroll_x, scroll_y, width, widths, total

    def render_lines(self, crop: Region) -> list[Strip]:
        # the geometry is looked up once per paint, not once per line (each lookup walks Textual's styles)
        self._frame = self._frame_geometry()
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y, width, widths, total = self._frame or self._frame_geometry()
        if self.header and y == 0:
            return self._drawn_row(self.header_cells(), widths, total, "header").crop(scroll_x, scroll_x + width)
        index = scroll_y + y - (1 if self.header else 0)
        if index >= self.row_count() or index < 0:
            return Strip.blank(width, self._style("base"))
        tone = "cursor" if index == self.cursor else "mark" if index in self.marked else "base"
        strip = self._strips.get((index, tone))
        if strip is None:
            key = self.row_key(index)
            if key is not None:
                key = (key, tone)
                strip = self._kept.get(key)
            if strip is None:
                strip = self._drawn_row(self.cells(index), widths, total, tone)
                if key is not None:
                    self._keep_line(key, strip)
            else:
                self._kept.move_to_end(key)
            if len(self._strips) > self.CACHE_ROWS:
                self._strips.clear()
            self._strips[(index, tone)] = strip
        return strip.crop(scroll_x, scroll_x + width) if scroll_x or strip.cell_length > width else strip

    # -- cursor ------------------------------------------------------------------------------
    def move_cursor(self, index: int, *, center: bool = False) -> None:
        count = self.row_count()
        if count == 0:
            return
        index = max(0, min(index, count - 1))
        previous, self.cursor = self.cursor, index
        self._auto_top = False
        page = self._page()
        top = round(self.scroll_offset.y)
        if center and not top <= index < top + page:
            self.scroll_to(y=max(0, index - page // 2), animate=False, immediate=True)
        elif index < top:
            self.scroll_to(y=index, animate=False, immediate=True)
        elif index >= top + page:
            self.scroll_to(y=index - page + 1, animate=False, immediate=True)
        self.refresh()
        if previous != index or center:
            self.post_message(self.CursorMoved(self, index))

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor + self._page())

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor - self._page())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(self.row_count() - 1)

    def action_select(self) -> None:
        if self.row_count():
            self.post_message(self.Chosen(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        index = round(self.scroll_offset.y) + event.y - (1 if self.header else 0)
        if 0 <= index < self.row_count():
            self.focus()
            self.move_cursor(index)


class SideScrolling:
    """For tables wider than their pane: the TABLE_KEYS' left/right move the view ten columns."""

    def action_scroll_right(self) -> None:
        self.scroll_to(x=self.scroll_offset.x + 10, animate=False)  # type: ignore[attr-defined]

    def action_scroll_left(self) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x - 10), animate=False)  # type: ignore[attr-defined]
