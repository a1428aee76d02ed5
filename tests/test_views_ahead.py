"""The views screen composed ahead of its key: it opens as a new one would, whatever the last one was
left at (sorted, filtered, grouped, on another view), and a fresh one is composed for the next key."""

from __future__ import annotations

import asyncio

from app_support import settle, wait_for_screen
from conftest import training_sample

from mlptui.app import make_app
from mlptui.screens.picker import PickerScreen
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import VIEWS_AHEAD_AFTER_S, TraceScreen
from mlptui.widgets.profile_tables import OperatorTable

SIZE = (120, 40)



async def composed_ahead(app, pilot, trace: TraceScreen) -> ProfileScreen:
    """Wait until the trace screen holds a views screen composed ahead and mounted."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not (trace._views_ahead is not None and trace._views_ahead.mounted):
        assert loop.time() < deadline, "no views screen was composed ahead"
        await app.workers.wait_for_complete()
        await pilot.pause(VIEWS_AHEAD_AFTER_S)
    return trace._views_ahead


async def open_and_read(app, pilot, key: str) -> tuple[ProfileScreen, str]:
    await pilot.press(key)
    screen = await wait_for_screen(app, pilot, ProfileScreen)
    await settle(pilot)
    return screen, app.export_screenshot()


async def test_a_views_screen_composed_ahead_opens_as_a_new_one() -> None:
    app = make_app([training_sample()])
    async with app.run_test(size=SIZE) as pilot:
        trace = await wait_for_screen(app, pilot, TraceScreen)
        assert isinstance(trace, TraceScreen)
        ahead = await composed_ahead(app, pilot, trace)
        assert not ahead.is_current

        # first opening: the screen composed ahead is the one shown
        shown, first = await open_and_read(app, pilot, "p")
        assert shown is ahead and shown.view == "operators"
        table = shown.query_one(OperatorTable)
        await pilot.press("s", "s", "a")        # left sorted and grouped by input shapes
        await settle(pilot)
        assert table.sort_column == 1 and shown.grouped["operators"]
        await pilot.press("escape")
        await wait_for_screen(app, pilot, TraceScreen)

        # the next one is another screen, composed ahead again, and shows the view as new
        again_ahead = await composed_ahead(app, pilot, trace)
        assert again_ahead is not ahead
        shown, second = await open_and_read(app, pilot, "p")
        assert shown is again_ahead
        assert shown.query_one(OperatorTable).sort_column == -1 and not shown.grouped["operators"]
        assert second == first
        await pilot.press("escape")
        await wait_for_screen(app, pilot, TraceScreen)

        # a screen composed on the key (none ahead) shows the same
        await composed_ahead(app, pilot, trace)
        trace._views_ahead.remove()
        trace._views_ahead = None
        shown, fresh = await open_and_read(app, pilot, "p")
        assert not shown.ahead and fresh == first


async def test_the_screen_composed_ahead_goes_with_its_trace_screen() -> None:
    app = make_app([])
    async with app.run_test(size=SIZE) as pilot:
        picker = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.press("enter")
        trace = await wait_for_screen(app, pilot, TraceScreen)
        assert isinstance(trace, TraceScreen)
        ahead = await composed_ahead(app, pilot, trace)
        await pilot.press("escape")                     # back to the picker: the trace screen goes
        assert await wait_for_screen(app, pilot, PickerScreen) is picker
        await pilot.pause()
        assert not trace.is_attached and not ahead.is_attached and trace._views_ahead is None


async def test_a_screen_removed_while_composed_ahead_leaves_quietly() -> None:
    """The trace screen may go (or the app close) between a views screen's start and its mount: its
    children are then never mounted, and its mount must not look for them."""
    for closing in ("removed", "app exits"):
        app = make_app([training_sample()])
        async with app.run_test(size=SIZE) as pilot:
            trace = await wait_for_screen(app, pilot, TraceScreen)
            assert isinstance(trace, TraceScreen)
            trace._compose_views_ahead()
            ahead = trace._views_ahead
            assert ahead is not None and not ahead.mounted
            if closing == "removed":
                ahead.remove()
                trace._views_ahead = None
                await pilot.pause()
                assert not ahead.is_attached and isinstance(app.screen, TraceScreen)
        assert app.return_code in (0, None), closing      # run_test re-raises a handler's exception
