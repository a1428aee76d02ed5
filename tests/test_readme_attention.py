"""The README's Part 3 table holds: for each row, a fresh explorer on sample_traces/attention, the row's
keys pressed, and every backticked snippet of its last column is on the screen (the picker's findings
pane, or the diff screen's header and rows)."""

from __future__ import annotations

import re

import pytest
from app_support import wait_for_screen
from attention_support import ATTENTION_SAMPLES
from conftest import ROOT
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.diff_screen import DiffScreen
from mlptui.screens.picker import PickerScreen
from mlptui.widgets.lines import LineList

SECTION = "### Part 3: attention, in three key presses"


def _rows() -> list[tuple[str, list[str], list[str]]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(SECTION, 1)[1]
    table = next(block for block in section.split("\n\n") if block.startswith("| the article's finding"))
    rows = []
    for line in table.splitlines()[2:]:
        finding, keys, shows = (c.strip() for c in line.strip("|").split(" | "))
        snippets = [s for s in re.findall(r"`([^`]+)`", shows) if "expect.toml" not in s]
        rows.append((finding, re.findall(r"`([^`]+)`", keys), snippets))
    return rows


ROWS = _rows()


def test_the_table_is_there_and_every_row_has_keys_and_snippets() -> None:
    assert len(ROWS) >= 10
    assert all(keys and snippets for _, keys, snippets in ROWS)


def _screen_text(screen) -> str:
    parts = [str(w.render()) for w in screen.query(Static)]
    for pane in screen.query(LineList):
        parts += [pane.render_line(y).text for y in range(pane.scrollable_content_region.height)]
    return " ".join(" ".join(parts).split())


@pytest.mark.parametrize(("finding", "keys", "snippets"), ROWS, ids=[r[0][:40] for r in ROWS])
async def test_the_row_holds_when_its_keys_are_pressed(finding, keys, snippets) -> None:
    app = make_app([str(ATTENTION_SAMPLES)])
    async with app.run_test(size=(200, 60)) as pilot:
        picker = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press(*keys)
        if keys[-1] == "d":
            screen = await wait_for_screen(app, pilot, DiffScreen)
            await app.workers.wait_for_complete()
            await pilot.pause()
        else:
            screen = picker
        text = _screen_text(screen)
        for snippet in snippets:
            assert " ".join(snippet.split()) in text, f"{finding}: {snippet!r} not on screen:\n{text}"


def _runs() -> dict[str, dict]:
    import json

    runs = json.loads((ATTENTION_SAMPLES / "manifest.json").read_text())["runs"]
    return {r["command"].split(" --mode")[0].removeprefix("mlptui run ") + (" --compile" if r["mode"] == "compile"
                                                                             else ""): r for r in runs}


def test_the_samples_timing_table_is_the_manifest_s() -> None:
    text = (ROOT / "sample_traces" / "README.md").read_text(encoding="utf-8")
    table = text.split("## The attention rung", 1)[1]
    rows = [line.strip("|").split(" | ") for line in table.splitlines() if line.startswith("| attention")]
    runs = _runs()
    assert len(rows) == len(runs) == 8
    for command, mode, median, p10_p90, tflops, err in (map(str.strip, r) for r in rows):
        run = runs[command]
        t = run["timing"]
        assert mode == run["mode"] and median == f"{t['median_us']:.1f}"
        assert p10_p90 == f"{t['p10_us']:.1f}–{t['p90_us']:.1f}"
        assert tflops == f"{run['tflops']:.0f}" and err == f"{run['max_rel_err_vs_fp32']:.1e}"


def test_the_math_to_in_place_ratio_in_the_readme_is_the_manifest_s() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"The math backend is ([\d.]+)× slower than the in-place twin", text)
    assert m is not None
    runs = _runs()
    ratio = (runs["attention --variant sdpa --backend math"]["timing"]["median_us"]
             / runs["attention --variant inplace"]["timing"]["median_us"])
    assert m.group(1) == f"{ratio:.1f}"
