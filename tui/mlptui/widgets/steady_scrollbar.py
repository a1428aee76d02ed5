"""A vertical scrollbar whose drawn lines are kept per look, so a repaint with the thumb where it was costs
a lookup instead of Textual styling each of its lines again.

Textual repaints a pane's scrollbar whenever the pane's scroll range is set or a style cascades into it
(a scope change sets every pane's range, a focus move restyles two panes), and nearly always the thumb is
drawn on the cells it was: the same lines, styled again each time. The look is everything the lines
are made from: the size and the cut asked for, the bar's segments, the colours beneath and the line filters;
the first time a look is asked for, Textual draws it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from functools import partial
from typing import TYPE_CHECKING, TypeVar

from rich.color import Color
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

from mlptui.textual_private import adopt_vertical_scrollbar, own_vertical_scrollbar
from mlptui.widgets.kept import lru_get_or_make

if TYPE_CHECKING:
    from textual.widget import Widget

LOOKS_KEPT = 8
Bar = TypeVar("Bar", bound="SteadyScrollBar")
DEFAULT_BACK, DEFAULT_BAR = Color.parse("#555555"), Color.parse("bright_magenta")    # ScrollBarRender's


class SteadyScrollBar(ScrollBar):
    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self._looks: OrderedDict[Hashable, list[Strip]] = OrderedDict()
        self._shown: Hashable | None = None
        self._shown_for: tuple[object, ...] = ()
        self._drawn: dict[tuple[object, ...], tuple[Segment, ...]] = {}     # the bar's segments per thumb

    def look(self) -> Hashable | None:
        """What the lines are made from: the bar ScrollBar.render draws (its segments, as ScrollBarRender
        makes them for this size, so ranges that put the thumb on the same cells look the same), and what
        Textual styles them with. None for another renderer: nothing is known of what it draws."""
        bar = self.render()
        if not isinstance(bar, ScrollBarRender) or type(bar) is not ScrollBarRender:
            return None
        style = bar.style if isinstance(bar.style, Style) else Style.parse(bar.style)
        inputs = (bar.virtual_size, bar.window_size, bar.position, bar.vertical, self.size, style)
        drawn = self._drawn.get(inputs)
        if drawn is None:
            width, height = self.size
            drawn = tuple(bar.render_bar(
                size=height if bar.vertical else width, virtual_size=bar.virtual_size,
                window_size=bar.window_size, position=bar.position, thickness=width if bar.vertical else height,
                vertical=bar.vertical, back_color=style.bgcolor or DEFAULT_BACK,
                bar_color=style.color or DEFAULT_BAR).segments)
            if len(self._drawn) >= 64:
                self._drawn.clear()
            self._drawn[inputs] = drawn
        return (drawn, self.size, self.background_colors, tuple(self.get_line_filters()), self.opacity,
                id(self.app.ansi_theme))

    def notify_style_update(self) -> None:
        self._looks.clear()         # a style or theme change: every kept look may be drawn otherwise
        self._shown = None
        super().notify_style_update()

    def refresh(self: Bar, *regions: Region, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Bar:
        # Textual asks for a repaint on every new range, window or position, and on every range it sets
        # during a layout, though the thumb is drawn where it is: the screen would redraw the bar's cells
        # (from kept lines, still a compositing pass) after the key's paint, inside the next key's time.
        # No style has changed since the look was shown (that forgets it): the same thumb inputs need no
        # look computed again (a focus move asks 6-8 times per bar).
        if repaint and not (regions or layout or recompose) and self._shown is not None:
            if self._shown_for == self._thumb_inputs() or self._shown == self.look():
                return self
            self._shown = None      # a repaint is asked for: until it is drawn, no look to compare with
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _thumb_inputs(self) -> tuple[object, ...]:
        return (self.window_virtual_size, self.window_size, self.position, self.size, self.mouse_over,
                self.grabbed)

    def render_lines(self, crop: Region) -> list[Strip]:
        look = self.look()
        # what the screen shows of the bar, when it asked for all of it
        self._shown = look if crop == self.size.region else None
        self._shown_for = self._thumb_inputs()
        if look is None:
            return super().render_lines(crop)
        return lru_get_or_make(self._looks, (crop, look), partial(super().render_lines, crop), LOOKS_KEPT)


class SteadyScrollbars:
    """For a scrolling pane: its vertical scrollbar is a SteadyScrollBar (made as Textual makes its own)."""

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        pane: Widget = self  # type: ignore[assignment]
        if own_vertical_scrollbar(pane) is None:
            bar = SteadyScrollBar(vertical=True, name="vertical", thickness=pane.scrollbar_size_vertical)
            adopt_vertical_scrollbar(pane, bar)
        bar_now: ScrollBar = own_vertical_scrollbar(pane)
        return bar_now

