"""The pane holding the focus is drawn lit (a heavy accent title rule, the title in reverse).

Textual's `:focus-within` would do it, but on every focus move it restyles the old and the new pane with
everything inside them (the list, its scrollbars, the header), a few dozen nodes per focus key,
though only the panes' own border and title change. Here the pane takes a class, and only the pane
itself is restyled: nothing inside a pane is styled by it (app.tcss has no `.pane.-lit X` rule).
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widget import Widget

LIT = "-lit"


def focused_pane(screen: Screen) -> Widget | None:
    focused = screen.focused
    if focused is None:
        return None
    return next((node for node in focused.ancestors_with_self if isinstance(node, Widget) and node.has_class("pane")),
                None)


def light_focused_pane(screen: Screen) -> None:
    """Light the pane that holds the screen's focus, and put out any other."""
    lit = focused_pane(screen)
    for pane in screen.query(f".pane.{LIT}"):
        if pane is not lit:
            pane.remove_class(LIT, update=False)
            screen.app.stylesheet.update_nodes([pane], animate=True)
    if lit is not None and not lit.has_class(LIT):
        lit.add_class(LIT, update=False)
        screen.app.stylesheet.update_nodes([lit], animate=True)
