"""Helpers for driving the explorer in tests: wait for a screen, read a pane's rows as text."""

from __future__ import annotations

import asyncio

import pytest
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

from mlptui.widgets.lines import LineList


async def wait_for_screen(app: App, pilot: Pilot, kind: type[Screen], timeout: float = 20.0) -> Screen:
    """Let workers finish and messages land until `kind` is the active screen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not isinstance(app.screen, kind):
        if loop.time() > deadline:
            raise AssertionError(f"{kind.__name__} never showed; screen is {app.screen!r}")
        await app.workers.wait_for_complete()
        await pilot.pause(0.05)
    await app.workers.wait_for_complete()
    await pilot.pause()
    return app.screen


async def settle(pilot: Pilot, quiet: int = 3, timeout: float = 15.0) -> None:
    """Before a snapshot: wait until workers are done and the screen reads the same `quiet` times in a row,
    50 ms apart. A fixed pause is not enough on a loaded 2-core machine, where a cursor message can land
    after it. Gives up silently at `timeout` (a cursor that blinks never settles); the comparison decides."""
    app = pilot.app
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last, same = "", 0
    while same < quiet and loop.time() < deadline:
        await app.workers.wait_for_complete()
        await pilot.pause(0.05)
        now = app.export_screenshot()
        same = same + 1 if now == last else 0
        last = now


def screen_lines(app: App) -> list[str]:
    """The terminal's lines as the app draws them now (Textual's compositor: no public API gives text)."""
    return ["".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips()]


def row_text(pane: LineList, index: int) -> str:
    cells = pane.cells(index)
    return " | ".join(c if isinstance(c, str) else c[0] for c in cells)


def rows_text(pane: LineList) -> list[str]:
    return [row_text(pane, i) for i in range(pane.row_count())]


def cursor_text(pane: LineList) -> str:
    return row_text(pane, pane.cursor)


def no_color(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    """NO_COLOR as the next app made will read it (Textual reads it, and removes it, when an app is made)."""
    if on:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
