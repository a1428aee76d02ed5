"""Names that look like Textual markup are shown as written, on every screen and after every key.

Every name of a real recording carries MARK (tests/markup_names.py): `[/]`, a closing tag with nothing to
close, stopped the explorer when a notification, a border title or a pane read it as markup (an op
named so, `g` on it: a blank screen and a traceback at exit); `[b]` was eaten; `[@click=app.quit]` became
a link. The trace's folder, the export folder, a search text and MLPTUI_KEYS carry markup too. After each
key the app must still run, and the screen must show MARK's text literally. Notifications are drawn
(`notifications=True`): the test harness hides them otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from app_support import wait_for_screen
from conftest import find_sample, training_sample
from markup_names import MARK, SHOWN, marked, screen_text
from textual.app import App
from textual.pilot import Pilot
from textual.widgets._toast import Toast

from mlptui.app import make_app
from mlptui.screens.diff_profile_screen import DiffProfileScreen
from mlptui.screens.diff_screen import DiffScreen, PairDetails
from mlptui.screens.help_screen import HelpScreen
from mlptui.screens.loading import LoadingScreen
from mlptui.screens.partner import PartnerScreen
from mlptui.screens.picker import PickerScreen
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.rank_trace_screen import RankTraceScreen
from mlptui.screens.ranks_screen import RanksScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.widgets.details import Details, shown_text

SIZE = (160, 50)
FILE_MARK = MARK.replace("/", "")      # a file's name holds no `/`: its folder's path has `[/]`
SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"


def marked_folder(tmp_path: Path) -> Path:
    """A folder whose path holds `[/]` (a folder `ev[` with `]il` in it)."""
    folder = tmp_path / "ev[" / "]il"
    folder.mkdir(parents=True)
    return folder


def notes(app: App) -> list[str]:
    return [n.message for n in app._notifications]


def toasts(app: App) -> str:
    """The notifications on screen, as drawn."""
    return "\n".join(toast.render().plain for toast in app.screen.query(Toast))


async def press(pilot: Pilot, *keys: str) -> str:
    """Press `keys`, let the app settle, and return the screen; the app must still be running."""
    for key in keys:
        await pilot.press(key)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.1)
    assert pilot.app.is_running and pilot.app.return_code is None, keys
    return screen_text(pilot.app)


async def test_every_pane_and_key_of_a_trace_shows_markup_names_as_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = marked_folder(tmp_path)
    trace = marked(Path(training_sample()), folder / "train[b].pt.trace.json")
    shutil.copy(find_sample("linear", "eager", "bf16"), folder / "other.pt.trace.json.gz")
    export = tmp_path / "out[" / "]csv"
    monkeypatch.setenv("MLPTUI_EXPORT_DIR", str(export))
    app = make_app([str(trace)])
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        text = await press(pilot)
        assert f"scope: ProfilerStep#3 {MARK} ([ ] to change)" in text      # the steps pane's title
        assert f"NVIDIA H200 {MARK}" in text and "train[b]" in text          # the header
        assert "highlighted: " in text and MARK in text.split("highlighted: ")[1]      # the timeline

        # g on an op that launches nothing: its name in a notification
        tree = screen.query_one("#tree")
        await press(pilot, "2")
        leaf = next(i for i in range(tree.row_count()) if "no GPU" in " ".join(map(str, tree.cells(i)))
                    and "aten::" in str(tree.cells(i)[0]))
        tree.move_cursor(leaf)
        text = await press(pilot, "g")
        assert any(n.endswith(f"{MARK} launches nothing on the GPU") for n in notes(app)), notes(app)
        assert f"{MARK} launches nothing on the GPU" in toasts(app)

        # a search that finds nothing, then one that finds the names
        text = await press(pilot, "slash", *"zz[/]", "enter")
        assert "no name contains 'zz[/]'" in notes(app) and "no name contains 'zz[/]'" in toasts(app)
        text = await press(pilot, "slash", *"[b]B", "enter", "n", "N")
        assert any(n.startswith("match ") for n in notes(app))

        # every pane, the kernel walk, grouping, sorting, raw names, the timeline's event cursor, zoom
        for keys in (("1", "j", "k"), ("3", "g"), ("3", "a", "s", "S", "r", "a"), ("4", "s", "r"),
                     ("5", "plus", "minus", "full_stop", "comma", "0"), ("6",), ("2", "f", "e", "f"),
                     ("z",), ("z",), ("left_square_bracket",), ("right_square_bracket",)):
            text = await press(pilot, *keys)
            assert SHOWN in text, keys
        assert f"note{MARK}  value{MARK}" in shown_text(screen.query_one(Details).text).plain    # arg keys

        # `x` writes the CSV into a folder whose name holds markup, and says where, as written
        text = await press(pilot, "2", "x")
        assert any(str(export) in n for n in notes(app)), notes(app)
        assert str(export) in toasts(app)
        assert len(list(export.glob("*.csv"))) == 1

        # the profiler views, each with its keys; a filter text that is markup
        await press(pilot, "o")
        await wait_for_screen(app, pilot, ProfileScreen)
        for keys in (("o",), ("p", "a", "s", "S", "a"), ("K", "a", "r", "s", "a"), ("M", "v", "s"), ("u", "s"),
                     ("left_square_bracket",), ("right_square_bracket",), ("p", "x")):
            text = await press(pilot, *keys)
            assert "scope: " in text, (keys, text)
            if keys[0] in "pKu":
                assert SHOWN in text, keys
        text = await press(pilot, "p", "slash", *"[b]B", "enter")
        assert "filter: [b]B (/ to change)" in text and SHOWN in text
        await press(pilot, "escape")
        await wait_for_screen(app, pilot, TraceScreen)

        # d: the partner list, titled with the folder
        text = await press(pilot, "d")
        assert isinstance(app.screen, PartnerScreen)
        assert f"traces in {folder}" in text and "ev[/]il" in text
        await press(pilot, "escape")
        text = await press(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        await press(pilot, "escape")
        await pilot.press("q")
    assert app.return_code == 0


async def test_the_picker_and_the_diff_of_marked_traces_show_names_as_written(tmp_path: Path) -> None:
    folder = marked_folder(tmp_path)
    for name in ("mlp-eager", "mlp-compile"):
        workload, mode = name.split("-")
        marked(find_sample(workload, mode, "bf16"), folder / f"{name}{FILE_MARK}.pt.trace.json")
    (folder / f"broken{FILE_MARK}.pt.trace.json").write_text('{"traceEvents": [')
    app = make_app([str(folder)])
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for_screen(app, pilot, PickerScreen)
        text = await press(pilot)
        assert str(folder) in text and f"mlp-eager{FILE_MARK}" in text       # the title, the rows
        for _ in range(3):
            text = await press(pilot, "j")
        assert f"NVIDIA H200 {MARK}" in text or "broken" in text      # the findings pane
        await press(pilot, "1", "m", "2")
        await press(pilot, "d")
        screen = await wait_for_screen(app, pilot, DiffScreen)
        await pilot.pause(0.3)
        assert screen.ready
        text = await press(pilot)
        assert f"ProfilerStep#4 {MARK} step" in text      # the header: the aligned step
        for keys in (("n",), ("p",), ("r",), ("r",), ("c",), ("c",), ("x",), ("x",),
                     ("right_square_bracket",), ("left_square_bracket",)):
            text = await press(pilot, *keys)
            assert SHOWN in text, keys
        await press(pilot, "enter")
        text = await press(pilot)
        assert isinstance(app.screen, PairDetails) and SHOWN in text
        await press(pilot, "escape")
        await press(pilot, "o")
        await wait_for_screen(app, pilot, DiffProfileScreen)
        text = await press(pilot, "s", "S")
        assert SHOWN in text
        await press(pilot, "escape", "question_mark")
        await press(pilot, "escape", "escape")
        await pilot.press("q")
    assert app.return_code == 0


async def test_a_run_of_marked_ranks_shows_names_as_written(tmp_path: Path) -> None:
    folder = marked_folder(tmp_path)
    run = sorted(SAMPLES.glob("tp-mlp-eager-*-x2-*"))[-1]
    for rank in sorted(run.glob("*rank-*.pt.trace.json.gz")):
        marked(rank, folder / rank.name.removesuffix(".gz"))
    app = make_app([str(folder)])
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for_screen(app, pilot, RanksScreen)
        text = await press(pilot)
        assert f"ProfilerStep#2 {MARK}" in text
        await press(pilot, "enter")
        await wait_for_screen(app, pilot, RankTraceScreen)
        for keys in ((), ("greater_than_sign",), ("less_than_sign",)):
            text = await press(pilot, *keys)
            assert "rank " in text and f"scope: ProfilerStep#4 {MARK}" in text, keys
        await pilot.press("q")
    assert app.return_code == 0


async def test_a_trace_that_fails_to_load_names_its_path_as_written(tmp_path: Path) -> None:
    bad = marked_folder(tmp_path) / f"bad{FILE_MARK}.json"
    bad.write_text("[{")
    app = make_app([str(bad)])
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for_screen(app, pilot, LoadingScreen)
        for _ in range(100):
            text = await press(pilot)
            if "mlptui:" in text:
                break
        assert f"bad{FILE_MARK}.json" in text.replace("\n", "")
        await pilot.press("q")
    assert app.return_code == 0


@pytest.mark.parametrize("keys", ["[/]=x", "[b]=x,quit=[@click=app.quit]"])
async def test_markup_in_mlptui_keys_is_refused_and_shown_as_written(
        keys: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_KEYS", keys)
    app = make_app([str(find_sample("linear", "eager"))])
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await press(pilot)
        assert app.user_keys == {}
        first = keys.split("=")[0]
        assert f"unknown id {first!r}" in notes(app)[0] and f"unknown id {first!r}" in toasts(app)
        await pilot.press("q")
    assert app.return_code == 0
