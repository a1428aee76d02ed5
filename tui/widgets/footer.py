"""The key bar: Textual's Footer, rebuilt only when the keys it shows change.

Textual's Footer remounts every key widget whenever the screen's bindings are refreshed (each focus move,
each `refresh_bindings`), which restyles a few dozen widgets per key press; most such refreshes leave the
shown keys as they were, and then nothing needs rebuilding.
"""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    def __init__(self, *, compact: bool = False) -> None:
        super().__init__(compact=compact)
        self._shown: Hashable = None        # what the last compose showed (None: nothing yet)

    def _keys(self) -> Hashable:
        """Everything of the active bindings that compose draws."""
        return tuple((b.key, b.action, b.description, b.group, b.key_display, enabled, tooltip)
                     for (_, b, enabled, tooltip) in self.screen.active_bindings.values() if b.show)

    def compose(self) -> ComposeResult:
        self._shown = self._keys() if self._bindings_ready else None
        yield from super().compose()

    def bindings_changed(self, screen: Screen) -> None:
        if self._bindings_ready and self.is_attached and screen is self.screen and self._keys() == self._shown:
            return
        super().bindings_changed(screen)
