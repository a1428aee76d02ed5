"""The look of the screens this part of the explorer changed, at 80×24 and 160×48, in full colour, in 16
colours (Textual's ANSI mode) and with NO_COLOR: the `?` overlay (ids on their keys' rows), a rank opened
from the ranks view (named first on its header), and the picker (findings wrapped, mix by GPU time).
Regenerate with `pytest --snapshot-update` and look at the SVGs."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import no_color, settle, wait_for_screen

from mlptui.app import make_app
from mlptui.screens.help_screen import HelpScreen
from mlptui.screens.picker import PickerScreen
from mlptui.screens.rank_trace_screen import RankTraceScreen
from mlptui.screens.ranks_screen import RanksScreen

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"
SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
COLOURS = pytest.mark.parametrize("colours", ["full", "16", "none"])


def _app(specs: list[str], colours: str, monkeypatch: pytest.MonkeyPatch):
    no_color(monkeypatch, colours == "none")
    app = make_app(specs)
    if colours == "16":
        app.ansi_color = True
    return app


def _ready(first, kind, *keys: str):
    """Wait for screen `first`, press `keys`, wait for screen `kind`."""
    async def run_before(pilot) -> None:
        await wait_for_screen(pilot.app, pilot, first)
        for key in keys:
            await pilot.press(key)
            await pilot.pause(0.05)
        await wait_for_screen(pilot.app, pilot, kind)
        await settle(pilot)
    return run_before


@SIZES
@COLOURS
def test_snapshot_help(snap_compare, size, colours, monkeypatch) -> None:
    app = _app([], colours, monkeypatch)
    assert snap_compare(app, terminal_size=size, run_before=_ready(PickerScreen, HelpScreen, "question_mark"))


@SIZES
@COLOURS
def test_snapshot_rank_screen(snap_compare, size, colours, monkeypatch) -> None:
    run = str(sorted(SAMPLES.glob("tp-mlp-eager-*-x2-*"))[-1])
    app = _app([run], colours, monkeypatch)
    assert snap_compare(app, terminal_size=size, run_before=_ready(RanksScreen, RankTraceScreen, "greater_than_sign", "enter"))


@SIZES
@COLOURS
def test_snapshot_picker_findings(snap_compare, size, colours, monkeypatch) -> None:
    app = _app([], colours, monkeypatch)
    assert snap_compare(app, terminal_size=size, run_before=_ready(PickerScreen, PickerScreen, "4"))
