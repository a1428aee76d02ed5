"""Every use of Textual beyond its public API, in one place, with a check that the installed Textual has it.

mlptui reaches into Textual for four things its public API does not offer: laying out and drawing a hidden
screen ahead of a key (screens/hidden_draw.py), a pane's own scrollbar class (widgets/steady_scrollbar.py),
a widget's blank-cell style (widgets/plain_paint.py), and the key name of a printable
character (keys.py). A Textual release may rename any of them; `missing()` lists what this one lacks, and
`require()` turns that into one line at start-up instead of a traceback in the middle of a key press.
Tested against every Textual the package allows (tests/test_textual_private.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mlptui.base.errors import MlptuiError

if TYPE_CHECKING:
    from rich.style import Style
    from textual.app import App
    from textual.screen import Screen
    from textual.scrollbar import ScrollBar
    from textual.widget import Widget

def _uses() -> list[tuple[str, Any, str]]:
    """(what it is called in a message, the object that should have it, the private name) for each use below."""
    from textual import keys
    from textual.app import App
    from textual.screen import Screen
    from textual.widget import Widget

    compositor: Any = None          # reported as missing below when Textual moved it
    try:
        from textual._compositor import Compositor
        compositor = Compositor
    except ImportError:
        pass
    return [("Screen", Screen, "_refresh_layout"), ("Compositor", compositor, "_get_renders"),
            ("App", App, "_start_widget"), ("Widget", Widget, "_styles_cache"),
            ("Widget", Widget, "_vertical_scrollbar"), ("textual.keys", keys, "_character_to_key")]


def missing() -> list[str]:
    """The private names this module uses that the installed Textual lacks (empty when all are there)."""
    absent: list[str] = []
    for label, owner, name in _uses():
        if owner is not None and (hasattr(owner, name) or name in _set_in_init(owner)):
            continue
        absent.append(f"{label}.{name}")
    return absent


def _set_in_init(owner: Any) -> tuple[str, ...]:
    """The attribute names `owner.__init__` refers to (self._x = … is not on the class). Read from the compiled
    code, not the source: reading and searching Widget's source was a large share of every start."""
    init = getattr(owner, "__init__", None)
    code = getattr(init, "__code__", None)
    return tuple(code.co_names) if code is not None else ()


def require() -> None:
    """Raise MlptuiError (one line) when the installed Textual lacks a name mlptui uses."""
    absent = missing()
    if absent:
        from importlib.metadata import version

        raise MlptuiError(f"Textual {version('textual')} lacks {', '.join(absent)}, which mlptui uses: install the "
                          "Textual range pyproject.toml allows (pip install -e . or pip install mlptui)")


# --- the uses themselves -------------------------------------------------------------------------------------

def layout_required(screen: Screen[Any]) -> bool:
    return bool(getattr(screen, "_layout_required", False))


def lay_out_hidden(screen: Screen[Any]) -> bool:
    """Lay out `screen` (places its panes, paints nothing) if it needs it; False when this Textual cannot."""
    if not hasattr(screen, "_refresh_layout"):
        return False
    if layout_required(screen):
        screen._refresh_layout()
        screen._layout_required = False
    return True


def compositor_renders(screen: Screen[Any]) -> Any | None:
    """The compositor's per-widget render iterator (what a repaint would draw); None when unavailable."""
    compositor = getattr(screen, "_compositor", None)
    if compositor is None or not hasattr(compositor, "_get_renders"):
        return None
    return compositor._get_renders()


def own_vertical_scrollbar(pane: Widget) -> Any:
    return pane._vertical_scrollbar


def adopt_vertical_scrollbar(pane: Widget, bar: ScrollBar) -> None:
    """Make `bar` the pane's vertical scrollbar, started as Textual starts its own."""
    pane._vertical_scrollbar = bar
    bar.display = False
    app: App[Any] = pane.app
    app._start_widget(pane, bar)


def blank_cell_style(widget: Widget) -> Style:
    """The style Textual gives a widget's cells that hold no text: its background over what lies beneath."""
    style: Style = widget._styles_cache.get_inner_outer(*widget.background_colors)[0].rich_style
    return style


def character_key(text: str) -> str:
    """Textual's key name for one printable character (`?` → question_mark)."""
    from textual.keys import _character_to_key

    return str(_character_to_key(text))
