"""The look of the explorer on a real H200 trace: the picker, the whole trace screen, and each pane
zoomed (`z`), at 80×24 and 160×48. Regenerate with `pytest --snapshot-update` and look at the SVGs."""

from __future__ import annotations

import pytest
from app_support import settle, wait_for_screen
from conftest import find_sample

from mlptui.app import make_app
from mlptui.screens.picker import PickerScreen
from mlptui.screens.trace_screen import TraceScreen

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])


def waiting_for(kind, *keys: str):
    async def run_before(pilot) -> None:
        await wait_for_screen(pilot.app, pilot, kind)
        await pilot.press(*keys)
        await settle(pilot)
    return run_before


@SIZES
def test_snapshot_picker(snap_compare, size) -> None:
    assert snap_compare(make_app([]), terminal_size=size, run_before=waiting_for(PickerScreen))


@SIZES
def test_snapshot_trace_screen(snap_compare, size) -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    assert snap_compare(app, terminal_size=size, run_before=waiting_for(TraceScreen))


# pane key, then keys that put something worth seeing under the cursor, then `z` to zoom the pane
PANES = {
    "steps": ["1"],
    "tree": ["2", "j"],
    "kernels": ["3", "j"],
    "launches": ["4", "j"],
    "timeline": ["2", "5"],
    "details": ["3", "j", "6"],
}


@SIZES
@pytest.mark.parametrize("pane", list(PANES))
def test_snapshot_pane(snap_compare, size, pane) -> None:
    app = make_app([str(find_sample("mlp", "eager"))])
    assert snap_compare(app, terminal_size=size, run_before=waiting_for(TraceScreen, *PANES[pane], "z"))


# the profiler views on the training sample (memory and modules recorded)
@SIZES
@pytest.mark.parametrize("key", ["o", "p", "K", "M", "u"])
def test_snapshot_profile_view(snap_compare, size, key) -> None:
    from conftest import SAMPLES

    from mlptui.screens.profile_screen import ProfileScreen

    path = sorted(SAMPLES.glob("mlp-train-*.pt.trace.json.gz"))[-1]

    async def run_before(pilot) -> None:
        await wait_for_screen(pilot.app, pilot, TraceScreen)
        await pilot.press(key)
        await wait_for_screen(pilot.app, pilot, ProfileScreen)
        await settle(pilot)

    assert snap_compare(make_app([str(path)]), terminal_size=size, run_before=run_before)
