"""Everything about the selected op, launch call or kernel; args decoded now, for this item only."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from rich.containers import Lines
from rich.segment import Segment
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from mlptui.base.text import printable
from mlptui.widgets.plain_paint import PlainPaint, bare_style
from mlptui.widgets.scroll_range import set_scroll_range
from mlptui.widgets.steady_scrollbar import SteadyScrollbars

KEPT_TEXTS = 8


@dataclass(frozen=True)
class Shown:
    """A text as it was wrapped and drawn, kept to be shown again."""
    content: Text
    lines: list[Strip]
    wrapped_for: int
    drawn: dict[tuple[int, int], Strip]
    width: int              # the width it was wrapped at


def shown_text(markup: str) -> Text:
    """The details text as the pane shows it. Names inside come from files: control characters are shown as
    escapes, never sent raw, and `:o:` in a kernel's name stays three characters (no emoji codes)."""
    markup = "\n".join(printable(line) for line in markup.split("\n"))
    return Text.from_markup(markup, emoji=False) if markup else Text()


class Details(SteadyScrollbars, PlainPaint, ScrollView, can_focus=True):
    """The selected item's facts as text lines, wrapped to the pane and rendered line by line, so a
    new selection repaints this pane only (no layout pass over the screen). The lines draw their own
    one-column margin (no CSS padding), so they are painted plain."""

    DEFAULT_CSS = """
    Details { height: 1fr; overflow-x: hidden; }
    """
    MARGIN = 1
    BINDINGS = [
        Binding("down,j", "scroll_down", "Down", show=False, id="details-down"),
        Binding("up,k", "scroll_up", "Up", show=False, id="details-up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="details-page-down"),
        Binding("pageup", "page_up", "Page up", show=False, id="details-page-up"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""
        self._content = Text()
        self._lines: list[Strip] = []
        self._wrapped_for = -1
        self._width = 0                                      # the width the lines were wrapped at
        self._drawn: dict[tuple[int, int], Strip] = {}      # lines fitted and styled, by (index, width)
        # the last texts shown, wrapped and drawn: going back to an item (the step shown before) redraws nothing
        self._kept: OrderedDict[str, Shown] = OrderedDict()

    def show_text(self, markup: str) -> None:
        if markup == self.text and self._wrapped_for >= 0:    # the same item again: back to its top only
            self.scroll_to(y=0, animate=False, immediate=True)
            return
        if self._wrapped_for >= 0:
            self._keep(self.text, Shown(self._content, self._lines, self._wrapped_for, self._drawn, self._width))
        self.text = markup
        kept = self._kept.pop(markup, None)
        if kept is not None and kept.wrapped_for == self._room():
            self._content, self._lines, self._wrapped_for, self._drawn, self._width = (
                kept.content, kept.lines, kept.wrapped_for, kept.drawn, kept.width)
            self.scroll_to(y=0, animate=False, immediate=True)
            self._set_range()
            self.refresh()
            return
        self._content = self._parsed(markup)
        self._wrapped_for = -1
        self.scroll_to(y=0, animate=False, immediate=True)
        self._wrap()
        self.refresh()

    def prepare(self, markup: str) -> None:
        """Parse and wrap a text ahead (what the step a key is likely to show next will select) and keep it
        for show_text; what is shown is left as it is."""
        if markup == self.text or markup in self._kept or self._wrapped_for < 0:
            return
        room = self._room()
        content = self._parsed(markup)
        lines, width = self._wrapped(content, room)
        self._keep(markup, Shown(content, lines, room, {}, width))

    def _keep(self, markup: str, shown: Shown) -> None:
        self._kept[markup] = shown
        self._kept.move_to_end(markup)
        if len(self._kept) > KEPT_TEXTS:
            self._kept.popitem(last=False)

    @staticmethod
    def _parsed(markup: str) -> Text:
        return shown_text(markup)

    def _wrap(self) -> None:
        room = self._room()
        if room == self._wrapped_for:
            return
        self._lines, self._width = self._wrapped(self._content, room)
        self._wrapped_for = room
        self._drawn = {}
        self._set_range()

    def _set_range(self) -> None:
        set_scroll_range(self, Size(self._width + self.MARGIN, len(self._lines)))

    def _wrapped(self, content: Text, room: int) -> tuple[list[Strip], int]:
        """The text's lines and the width they were wrapped at. Wrapped for the width the text will have:
        narrower by the scrollbar when the lines will not fit. Wrapped at the full width first, a long text
        would be wrapped again once the layout has shown the scrollbar, and laid out a second time."""
        bar = self.styles.scrollbar_size_vertical
        console = self.app.console
        overflow, height = self.styles.overflow_y, self.container_size.height
        narrow = bool(bar) and room - bar >= 10 and overflow in ("scroll", "auto")
        # more text lines than the pane holds need the scrollbar at any width: one wrap, at the narrow one
        width = room - bar if narrow and (overflow == "scroll" or content.plain.count("\n") >= height) \
            else room
        lines = content.wrap(console, width, overflow="fold") if content else Lines()
        if narrow and width == room and len(lines) > height:
            width = room - bar
            lines = content.wrap(console, width, overflow="fold")
        return [Strip(list(line.render(console, "")), line.cell_len) for line in lines], width

    def _room(self) -> int:
        """The width the text is wrapped within: the pane's, scrollbar included, less the margin."""
        bar = self.styles.scrollbar_size_vertical
        return max(self.scrollable_content_region.width - self.MARGIN + (bar if self.show_vertical_scrollbar else 0), 10)

    def notify_style_update(self) -> None:
        self._drawn = {}
        self._kept.clear()
        super().notify_style_update()

    def on_resize(self) -> None:
        self._wrapped_for = -1
        self._kept.clear()
        self._wrap()

    def render_line(self, y: int) -> Strip:
        self._wrap()
        index = round(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width
        key = (index if index < len(self._lines) else -1, width)
        strip = self._drawn.get(key)
        if strip is None:
            style = self.rich_style
            text = max(0, width - self.MARGIN)
            line = (self._lines[index].adjust_cell_length(text).apply_style(style) if key[0] >= 0
                    else Strip.blank(text, style))
            # the margin is drawn as Textual draws padding: the pane's background only
            strip = Strip([Segment(" " * min(self.MARGIN, width), bare_style(self)), *line], width)
            self._drawn[key] = strip
        return strip
