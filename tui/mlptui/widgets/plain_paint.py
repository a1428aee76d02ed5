"""Lines go to the screen as the widget drew them, where Textual's styling pass has nothing to add.

For every line of every paint, Textual's styles cache reads the border, outline, padding, hatch, tint and
opacity rules, then wraps the line in a new Strip. A new Strip each paint also throws away what the strip
had kept: its colour-filtered copy and its cuts, which the screen asks for again on every paint. For a
widget with none of those rules (the lists, the timeline, the details) the pass changes nothing but the cost: here
each line is the widget's own kept strip, widened to the widget and filtered as Textual filters it, so a
row that did not change costs a few lookups. A widget with any such rule takes Textual's own path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.style import Style
from textual.geometry import Region, Spacing
from textual.strip import Strip

from mlptui.textual_private import blank_cell_style

if TYPE_CHECKING:
    from textual.widget import Widget

NO_SPACE = Spacing(0, 0, 0, 0)


def paints_plain(widget: Widget) -> bool:
    """True when Textual's styling pass would hand the widget's lines on unchanged (but for the width and
    the colour filters): no border, outline, padding, hatch, tint or opacity, and no link under the mouse."""
    styles = widget.styles
    if styles.padding != NO_SPACE or any(edge[0] for edge in styles.border) \
            or any(edge[0] for edge in styles.outline):
        return False
    if styles.tint.a or styles.text_opacity != 1.0 or widget.opacity != 1.0:
        return False
    if styles.has_rule("hatch") and styles.hatch != "none":
        return False
    return not (widget.auto_links and widget.hover_style.link_id)


def bare_style(widget: Widget) -> Style:
    """The style Textual gives a widget's cells that hold no text (padding, the room right of a short line):
    the widget's background over what lies beneath it."""
    return blank_cell_style(widget)


class PlainPaint:
    """Mixin for a widget whose `render_line` returns kept strips: painted without the styling pass
    whenever `paints_plain` holds."""

    def render_lines(self, crop: Region) -> list[Strip]:
        widget: Any = self
        if not paints_plain(widget):
            # a rule change repaints the whole widget, which empties Textual's kept lines: none is stale
            lines: list[Strip] = super().render_lines(crop)  # type: ignore[misc]
            return lines
        width, height = widget.region.size
        background = widget.background_colors[1]
        inner = bare_style(widget)
        filters = widget.get_line_filters()
        render_line = widget.render_line
        strips: list[Strip] = []
        for y in crop.line_range:
            strip = render_line(y).adjust_cell_length(width, inner) if y < height else Strip.blank(width, inner)
            for line_filter in filters:
                strip = strip.apply_filter(line_filter, background)
            strips.append(strip)
        if crop.column_span != (0, width):
            x1, x2 = crop.column_span
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips
