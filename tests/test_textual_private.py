"""mlptui's uses of Textual beyond its public API (mlptui/textual_private.py): each private name is there in the
installed Textual, the start-up check refuses one that lacks a name with one line, and each use does what its
caller relies on in a running app."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.scrollbar import ScrollBar
from textual.widgets import Static

from mlptui import textual_private as tp
from mlptui.base.errors import MlptuiError
from mlptui.widgets.steady_scrollbar import SteadyScrollBar


def test_the_installed_textual_has_every_private_name_used() -> None:
    assert tp.missing() == []
    tp.require()          # no exception


def test_a_textual_without_a_name_is_refused_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.screen import Screen

    monkeypatch.delattr(Screen, "_refresh_layout")
    assert tp.missing() == ["Screen._refresh_layout"]
    with pytest.raises(MlptuiError) as caught:
        tp.require()
    message = str(caught.value)
    assert "\n" not in message and "Screen._refresh_layout" in message and "Textual" in message


def test_the_app_factory_runs_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from textual import keys

    from mlptui.app import make_app

    monkeypatch.delattr(keys, "_character_to_key")
    with pytest.raises(MlptuiError, match="textual.keys._character_to_key"):
        make_app([])


def test_character_key_names_printable_characters() -> None:
    assert tp.character_key("?") == "question_mark"
    assert tp.character_key("[") == "left_square_bracket"


class _Pane(VerticalScroll):
    pass


class _Probe(App[None]):
    def compose(self) -> ComposeResult:
        with _Pane(id="pane"):
            for i in range(50):
                yield Static(f"line {i}")


async def test_the_uses_work_in_a_running_app() -> None:
    app = _Probe()
    async with app.run_test(size=(40, 10)) as pilot:
        pane = app.query_one("#pane", _Pane)
        # the blank-cell style is the pane's background over the screen's
        style = tp.blank_cell_style(pane)
        assert style.bgcolor is not None
        # a scrollbar adopted as Textual adopts its own becomes the pane's scrollbar
        bar = SteadyScrollBar(vertical=True, name="vertical", thickness=1)
        assert isinstance(tp.own_vertical_scrollbar(pane), ScrollBar | type(None))
        tp.adopt_vertical_scrollbar(pane, bar)
        await pilot.pause()
        assert tp.own_vertical_scrollbar(pane) is bar and bar.parent is pane
        # laying out a screen and asking for its renders
        assert tp.lay_out_hidden(app.screen)
        assert not tp.layout_required(app.screen)
        renders = tp.compositor_renders(app.screen)
        assert renders is not None and any(True for _ in renders)


def test_an_attribute_set_in_init_that_textual_dropped_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_styles_cache` and `_vertical_scrollbar` are set by Widget.__init__, not on the class: a Widget whose
    __init__ no longer sets them lacks them."""
    from textual.widget import Widget

    def bare_init(self: Widget, *args: object, **kwargs: object) -> None:
        pass

    monkeypatch.setattr(Widget, "__init__", bare_init)
    assert tp.missing() == ["Widget._styles_cache", "Widget._vertical_scrollbar"]
