"""Every row of the README's two "three key presses" tables holds at 80×24: a fresh explorer (the bundled
samples, or sample_traces/attention for Part 3), the row's keys pressed, and every backticked snippet of
its last column is on the screen as drawn, at some point along the keys or after `space` pages the
picker's findings (the one key the tables leave implicit). Wrapped lines are read as one text: the
snippet's characters, spaces aside, stand in a row on the screen."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field

import pytest
from app_support import screen_lines, wait_for_screen
from attention_support import ATTENTION_SAMPLES
from conftest import ROOT
from textual.app import App
from textual.pilot import Pilot
from textual.screen import Screen

from mlptui.app import make_app
from mlptui.screens.loading import LoadingScreen
from mlptui.screens.picker import PickerScreen

SIZE = (80, 24)
PART_2 = "## What you see in three key presses"
PART_3 = "### Part 3: attention, in three key presses"
THEN_KEYS = re.compile(r"`([^`]+)` then `([^`]+)`")      # "`enter` then `M` draws…": more keys, mid-cell
SCROLLBAR = str.maketrans("", "", "▁▂▃▄▅▆▇█▔")           # a scrollbar's glyphs at a line's end
PAGES = 8                                                 # `space` presses at most, per screen read


@dataclass
class Row:
    part: str
    finding: str
    stages: list[tuple[list[str], list[str]]] = field(default_factory=list)   # (keys, snippets seen after)


def _snippets(text: str) -> list[str]:
    return [s for s in re.findall(r"`([^`]+)`", text) if "expect.toml" not in s]


def _table(section: str) -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8").split(section, 1)[1]
    table = next(block for block in text.split("\n\n") if block.startswith("| the article's finding"))
    return table.splitlines()[2:]


def _rows() -> list[Row]:
    rows = []
    for part, section in (("part2", PART_2), ("part3", PART_3)):
        for line in _table(section):
            finding, keys, shows = (c.strip() for c in line.strip("|").split(" | "))
            row = Row(part, finding)
            first = re.findall(r"`([^`]+)`", keys) if keys != "none" else []
            later = THEN_KEYS.search(shows)
            if later is None:
                row.stages.append((first, _snippets(shows)))
            else:
                row.stages.append((first, _snippets(shows[:later.start()])))
                row.stages.append((list(later.groups()), _snippets(shows[later.end():])))
            rows.append(row)
    return rows


ROWS = _rows()


def screen_text(app: App) -> str:
    """What the terminal shows, every character but spaces and scrollbar glyphs, line after line."""
    return "".join("".join(line.split()).translate(SCROLLBAR) for line in screen_lines(app))


def _flat(snippet: str) -> str:
    return "".join(snippet.split())


async def _press(app: App, pilot: Pilot, key: str) -> None:
    """One key; a key that opens a screen (a trace, a diff, a view) waits for it to show and fill."""
    before: Screen = app.screen
    await pilot.press(key)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while key in ("enter", "d", "M") and (app.screen is before or isinstance(app.screen, LoadingScreen)):
        assert loop.time() < deadline, f"{key!r} opened nothing; screen is {app.screen!r}"
        await app.workers.wait_for_complete()
        await pilot.pause(0.05)
    await app.workers.wait_for_complete()
    await pilot.pause()


async def _reads(app: App, pilot: Pilot, missing: set[str]) -> None:
    """Remove from `missing` each snippet the screen shows now; on the picker, page its findings until none
    is missing or they come round to the top."""
    first = screen_text(app)
    text = first
    for _ in range(PAGES):
        missing -= {s for s in missing if _flat(s) in text}
        if not missing or not isinstance(app.screen, PickerScreen):
            return
        await _press(app, pilot, "space")
        text = screen_text(app)
        if text == first:
            return


def test_both_tables_are_there_with_keys_and_snippets() -> None:
    assert sum(r.part == "part2" for r in ROWS) >= 9 and sum(r.part == "part3" for r in ROWS) >= 12
    assert all(any(snippets for _, snippets in r.stages) for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.part}-{i}-{r.finding[:30]}" for i, r in enumerate(ROWS)])
async def test_the_row_is_on_screen_at_80x24(row: Row) -> None:
    app = make_app([str(ATTENTION_SAMPLES)] if row.part == "part3" else [])
    async with app.run_test(size=SIZE) as pilot:
        await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        for keys, snippets in row.stages:
            missing = set(snippets)
            for key in keys:
                await _press(app, pilot, key)
                await _reads(app, pilot, missing)
            if not keys:
                await _reads(app, pilot, missing)
            assert not missing, f"{row.finding}: not on screen at 80×24 after {keys}: {sorted(missing)}"
