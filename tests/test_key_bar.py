"""The key bar draws what Textual's compact Footer draws: the bottom line of the same screen, one app with
Textual's Footer and one with the bar, compared cell by cell and style by style — in truecolour, the 16 ANSI
colours and under NO_COLOR, with a disabled key, a key under the mouse, a terminal too narrow for the keys,
and after the bindings change. Then what the bar does that the Footer did: a click presses the key (a
disabled one rings the bell), the mouse's key shows its tooltip, the wheel slides a bar wider than the screen."""

from __future__ import annotations

import pytest
from app_support import no_color
from rich.segment import Segment
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Static

from mlptui.widgets.footer import KeyBar


class Keys(App[None]):
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Keys", key_display="?"),
        Binding("j,down", "down", "Down", show=False),
        Binding("x", "export", "CSV", tooltip="write the table to a CSV file"),
        Binding("left_square_bracket", "step(-1)", "Prev step", key_display="["),
        Binding("right_square_bracket", "step(1)", "Next step", key_display="]"),
        Binding("e", "expand", "Expand all"),
        Binding("E", "expand", "Expand again"),         # the same action: shown once, as its first key
        Binding("z", "zoom", "Zoom"),
    ]

    def __init__(self, bar: str) -> None:
        super().__init__()
        self.bar = bar
        self.export_on = False
        self.pressed: list[str] = []
        self.bells = 0

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield KeyBar() if self.bar == "bar" else Footer(compact=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "export":
            return True if self.export_on else None     # None: shown dimmed
        return True

    def action_export(self) -> None:
        self.pressed.append("export")

    def action_zoom(self) -> None:
        self.pressed.append("zoom")

    def action_help(self) -> None:
        self.pressed.append("help")

    def bell(self) -> None:
        self.bells += 1


def bottom(app: App[None]) -> list[tuple[str, object]]:
    strip = app.screen._compositor.render_strips()[-1]
    # the Footer's cells carry the mouse offsets Textual adds to every widget's render; only what is drawn counts
    return [(ch, seg.style.clear_meta_and_links() if seg.style else None)
            for seg in Segment.simplify(strip) for ch in seg.text]


async def drawn(bar: str, colours: str, width: int, monkeypatch: pytest.MonkeyPatch, *,
                hover_x: int | None = None, export_on: bool = False) -> list[tuple[str, object]]:
    no_color(monkeypatch, colours == "no-color")
    app = Keys(bar)
    if colours == "ansi16":
        app.theme = "ansi-dark"
    async with app.run_test(size=(width, 6)) as pilot:
        await pilot.pause()
        if export_on:
            app.export_on = True
            app.refresh_bindings()
            await pilot.pause()
            await pilot.pause()
        if hover_x is not None:
            await pilot.hover(None, offset=(hover_x, 5))
            await pilot.pause()
        await pilot.pause()
        return bottom(app)


@pytest.mark.parametrize("colours", ["truecolor", "ansi16", "no-color"])
@pytest.mark.parametrize("width", [100, 30])
@pytest.mark.parametrize("hover_x", [None, 8, 0, 25, 29])
async def test_bar_draws_what_the_footer_draws(colours: str, width: int, hover_x: int | None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    footer = await drawn("footer", colours, width, monkeypatch, hover_x=hover_x)
    bar = await drawn("bar", colours, width, monkeypatch, hover_x=hover_x)
    assert "".join(ch for ch, _ in bar).startswith("q Quit ? Keys x CSV"[:width])
    assert bar == footer
    if hover_x is not None and bar[hover_x][0] != " " and colours == "truecolor":   # ANSI: no hover colour
        still = await drawn("bar", colours, width, monkeypatch)
        assert bar != still     # the key under the mouse is lit


async def test_bar_follows_a_binding_that_becomes_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    footer = await drawn("footer", "truecolor", 100, monkeypatch, export_on=True)
    bar = await drawn("bar", "truecolor", 100, monkeypatch, export_on=True)
    dimmed = await drawn("bar", "truecolor", 100, monkeypatch)
    assert bar == footer
    assert bar != dimmed        # the CSV key's cells change style when it is enabled


async def test_a_click_presses_the_key_and_a_disabled_key_rings() -> None:
    app = Keys("bar")
    async with app.run_test(size=(100, 6)) as pilot:
        await pilot.pause()
        bar = app.query_one(KeyBar)
        spans = dict(zip((k.display for k in bar.keys), bar._spans, strict=True))
        assert [k.display for k in bar.keys] == ["q", "?", "x", "[", "]", "e", "z"]
        await pilot.click(KeyBar, offset=(spans["z"][0] + 2, 0))
        await pilot.click(KeyBar, offset=(spans["?"][0], 0))
        await pilot.click(KeyBar, offset=(spans["x"][0] + 1, 0))       # disabled: the bell, no action
        await pilot.click(KeyBar, offset=(spans["x"][1], 0))           # the gap after a key: nothing
        await pilot.pause()
        assert app.pressed == ["zoom", "help"]
        assert app.bells == 1


async def test_the_mouse_shows_the_key_tooltip_and_the_wheel_slides() -> None:
    app = Keys("bar")
    async with app.run_test(size=(30, 6)) as pilot:
        await pilot.pause()
        bar = app.query_one(KeyBar)
        x = bar._spans[2][0]
        await pilot.hover(KeyBar, offset=(x, 0))
        assert bar.tooltip == "write the table to a CSV file"
        await pilot.hover(KeyBar, offset=(0, 0))
        assert bar.tooltip is None
        before = "".join(ch for ch, _ in bottom(app))
        width = bar._bar().cell_length
        assert width > 30
        for _ in range(40):     # Pilot has no wheel of its own: its event poster sends the notches
            await pilot._post_mouse_events([events.MouseScrollDown], KeyBar, offset=(1, 0))
        await pilot.pause()
        after = "".join(ch for ch, _ in bottom(app))
        assert after.rstrip().endswith("z Zoom")
        assert bar._offset == width - 30
        assert before.startswith("q Quit") and not after.startswith("q Quit")
