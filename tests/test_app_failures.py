"""The app's worker boundary: whatever goes wrong while a trace loads or is summarised, the picker row
of that trace says why and the others still load; the loading screen shows the error instead of
staying at 100 % forever; a hostile trace's names reach the screen as escapes."""

from __future__ import annotations

import shutil
from pathlib import Path

from app_support import rows_text, wait_for_screen
from conftest import find_sample
from fuzz import hostile
from textual.widgets import Static

from mlptui.app import make_app
from mlptui.screens.loading import LoadingScreen
from mlptui.screens.picker import PickerScreen, TraceList
from mlptui.screens.trace_screen import TraceScreen
from mlptui.viewmodels import facts as facts_module  # the screens import build_facts after the first paint
from mlptui.widgets.kernels import KernelTable

SIZE = (120, 30)


async def test_a_failing_trace_says_why_in_its_row_and_the_others_load(tmp_path: Path, monkeypatch) -> None:
    good = find_sample("linear", "eager")
    shutil.copy(good, tmp_path / "a-good.pt.trace.json.gz")
    shutil.copy(good, tmp_path / "b-bad.pt.trace.json.gz")
    shutil.copy(good, tmp_path / "c-good.pt.trace.json.gz")
    real = facts_module.build_facts

    def build(trace):
        if "b-bad" in trace.source:
            raise RecursionError("maximum recursion depth exceeded")     # anything, not only MlptuiError
        return real(trace)

    monkeypatch.setattr(facts_module, "build_facts", build)
    app = make_app([str(tmp_path)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        rows = rows_text(screen.query_one(TraceList))
        bad = next(r for r in rows if "b-bad" in r)
        assert "unreadable: RecursionError" in bad
        assert sum("GEMM" in r for r in rows) == 2          # both good traces summarised, after the bad one


async def test_a_crashing_load_shows_its_error_instead_of_hanging(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "t.pt.trace.json.gz"
    shutil.copy(find_sample("linear", "eager"), path)

    def boom(trace):
        raise TypeError("something no one expected")

    monkeypatch.setattr(facts_module, "build_facts", boom)
    app = make_app([str(path)])
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_for_screen(app, pilot, LoadingScreen)
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause(0.05)
            text = str(screen.query_one("#loading-error", Static).render())
            if text:
                break
        assert "something no one expected" in text      # main's worker-error handler says it in place


async def test_hostile_names_reach_the_screen_as_escapes(tmp_path: Path) -> None:
    path = tmp_path / "ctl.json"
    path.write_bytes(hostile.cases()["control-names"])
    app = make_app([str(path)])
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        rows = rows_text(screen.query_one(KernelTable))
        assert rows and all("\x1b" not in r and "\x07" not in r and "\n" not in r for r in rows)
        assert any("\\x1b" in r for r in rows)
