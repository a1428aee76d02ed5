"""The look of the screens that make real traces legible, at 80×24 and 160×48, each in true colour, in 16
colours (Textual's ansi-dark theme, what a 16-colour terminal gets) and under NO_COLOR: the dispatch pane of a
with_stack trace with and without its Python frames, the timeline's event cursor with its launch → kernel
caption, the kernels pane grouped, the operator view filtered and the kernel view.
Regenerate with `pytest --snapshot-update tests/test_legible_snapshots.py` and look at the SVGs."""

from __future__ import annotations

import pytest
from app_support import settle, wait_for_screen
from conftest import ROOT, SAMPLES, find_sample

from mlptui.app import make_app
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen

pytestmark = pytest.mark.slow
REAL = ROOT.parent / "shared" / "corpus" / "real"
BERT = REAL / "AMD-AGI__TraceLens__h100_gaunernst_bert-small-uncased__1016001.json.gz"
SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
COLOURS = pytest.mark.parametrize("colours", ["truecolor", "ansi16", "no-color"])

# screen: (trace, keys pressed on the trace screen)
SCREENS = {
    "dispatch-with-stack": (BERT, []),
    "dispatch-frames-hidden": (BERT, ["f"]),
    "timeline-event-cursor": (None, ["5", "full_stop", "full_stop", "full_stop"]),
    "kernels-grouped": (None, ["3", "a"]),
    "operators-filtered": ("train", ["p", "slash", "m", "m", "enter"]),
    "kernel-view": ("train", ["K"]),
}


def make(colours: str, path: str, monkeypatch: pytest.MonkeyPatch):
    if colours == "no-color":
        monkeypatch.setenv("NO_COLOR", "1")      # read (and removed) when the app is made
    app = make_app([path])
    if colours == "ansi16":
        app.theme = "ansi-dark"
    return app


@SIZES
@COLOURS
@pytest.mark.parametrize("screen", list(SCREENS))
def test_snapshot_legible(snap_compare, monkeypatch, size, colours, screen) -> None:
    trace, keys = SCREENS[screen]
    if trace is BERT and not BERT.exists():
        pytest.skip("real-trace corpus not available")
    path = str(sorted(SAMPLES.glob("mlp-train-eager-64x128x*.pt.trace.json.gz"))[-1]) if trace == "train" \
        else str(find_sample("mlp", "eager", "bf16")) if trace is None else str(trace)

    async def run_before(pilot) -> None:
        await wait_for_screen(pilot.app, pilot, TraceScreen, timeout=60)
        for key in keys:
            await pilot.press(key)
            if key in ("p", "K"):
                await wait_for_screen(pilot.app, pilot, ProfileScreen)
        await settle(pilot)

    assert snap_compare(make(colours, path, monkeypatch), terminal_size=size, run_before=run_before)
