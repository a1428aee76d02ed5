"""A pane's scroll range set without a layout of the screen when its scrollbars stay as they are.

Textual's `virtual_size` asks for a layout of the whole screen on every change. The panes' sizes are fixed
by the CSS, so a new row count or a new text only moves the range and the thumb: the pane and its
scrollbar repaint, nothing else is laid out. A layout also re-renders the scrollbars of every pane whose
range was set this way since the last one, thumbs unchanged.
"""

from __future__ import annotations

from textual.geometry import Size
from textual.scroll_view import ScrollView


def set_scroll_range(view: ScrollView, size: Size) -> None:
    """Give `view` the scroll range `size`, with a layout only when a scrollbar comes or goes."""
    if size == view.virtual_size:
        return
    room = view.container_size
    if view.is_mounted and room.height and (size.height > room.height) == (view.virtual_size.height > room.height) \
            and size.width <= room.width >= view.virtual_size.width:
        view.set_reactive(ScrollView.virtual_size, size)
        view._scroll_update(size)
        view.refresh()
    else:
        view.virtual_size = size
        if view.is_mounted and room.height:
            # The scrollbar comes or goes in this layout: left to the layout, it would ask for a second one.
            view._scroll_update(size)
            if view.show_vertical_scrollbar:    # a scrollbar shown again keeps the thumb it had when hidden
                view.vertical_scrollbar.position = view.scroll_y
