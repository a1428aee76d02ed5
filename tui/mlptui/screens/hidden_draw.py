"""A screen covered by another one, laid out and drawn while it is hidden.

The views screen changes the trace screen's scope (`[` `]` there). The trace screen takes the new scope at
once, under the views, and this lays it out and draws its panes' lines, a few panes per message, between
keys. `esc` then shows it from Textual's own caches (the layout, each pane's lines) instead of laying out and
drawing a whole screen of new lines in the key's time. Nothing is drawn that a repaint would not draw: a pane
that changes afterwards is marked dirty by Textual as usual and drawn again when shown. Where this version
of Textual keeps its layout and line caches elsewhere, nothing is drawn ahead and `esc` draws as before.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from textual.screen import Screen

from mlptui.textual_private import compositor_renders, lay_out_hidden, layout_required

PIECE_S = 0.003         # drawing per message: a key pressed meanwhile waits this long at most


class HiddenDraw:
    def __init__(self, screen: Screen[Any]) -> None:
        self.screen = screen
        self.generation = 0
        self._renders: Iterator[Any] | None = None

    def start(self) -> None:
        """Lay out and draw the screen after the current screen's next paint (and any earlier plan stops)."""
        self.generation += 1
        self._renders = None
        self.screen.call_after_refresh(self._layout, self.generation)

    def _hidden(self, generation: int) -> bool:
        screen = self.screen
        # not `is_current`: Textual counts the screen just under the top one as current (it may show through)
        return generation == self.generation and screen.is_attached and screen.app.screen is not screen

    def _layout(self, generation: int) -> None:
        screen = self.screen
        if not self._hidden(generation):
            return
        if screen.size != screen.app.size:          # the terminal changed size: showing it lays it out anew
            return
        if not lay_out_hidden(screen):              # hidden: places the panes, paints nothing
            return
        self._renders = compositor_renders(screen)  # one pane's lines per step, as a repaint draws them
        if self._renders is None:
            return
        screen.call_after_refresh(self._draw, generation)

    def _draw(self, generation: int) -> None:
        screen = self.screen
        if not self._hidden(generation) or self._renders is None:
            return
        if layout_required(screen):                          # a pane changed its size since: lay out again
            self._renders = None
            screen.call_after_refresh(self._layout, generation)
            return
        deadline = time.perf_counter() + PIECE_S
        for _ in self._renders:
            if time.perf_counter() > deadline:
                screen.call_after_refresh(self._draw, generation)
                return
        self._renders = None
