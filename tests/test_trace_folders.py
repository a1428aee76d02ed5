"""A folder whose traces sit in folders below it (`h100x4/ddp/<run>/`, the bundled two-GPU runs and the
attention rung): `mlptui view` opens a picker over those folders, `summary` and `check` name them in their
one line; the bundled picker reaches `attention/` and the two-GPU runs; no two picker rows read alike, at
any width. The run folders are the bundled real two-GPU runs, copied into the layout a cluster job writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from app_support import wait_for_screen
from conftest import SAMPLES

from mlptui.app import make_app
from mlptui.base.errors import MlptuiError
from mlptui.cli import main
from mlptui.commands.view import check_spec
from mlptui.screens.picker import PickerScreen
from mlptui.screens.ranks_screen import RanksScreen
from mlptui.widgets.trace_list import TraceList, distinct_cuts

RUNS = sorted(p for p in SAMPLES.iterdir() if p.is_dir() and "-x2-" in p.name)
ATTENTION = SAMPLES / "attention"
CORPUS_REAL = SAMPLES.parent.parent / "shared" / "corpus" / "real"


@pytest.fixture
def cluster(tmp_path: Path) -> Path:
    """`h100x4/ddp/<run>/` as a job writes it: two runs, each its own folder of ranks."""
    ddp = tmp_path / "h100x4" / "ddp"
    for run in RUNS[:2]:
        shutil.copytree(run, ddp / run.name)
    return tmp_path / "h100x4"


def test_summary_and_check_say_where_the_traces_are(cluster: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["summary", str(cluster)], ["check", str(cluster)], ["summary", str(cluster / "ddp")]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no traces" in err
        assert all(f"{run.name}/" in err for run in RUNS[:2]), err
    assert "ddp/" + RUNS[0].name in main_err(["summary", str(cluster)], capsys)


def main_err(command: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    main(command)
    return capsys.readouterr().err


def test_view_takes_a_folder_of_run_folders_and_refuses_an_empty_one(cluster: Path, tmp_path: Path) -> None:
    check_spec(str(cluster), allow_folder=True)
    check_spec(str(cluster / "ddp"), allow_folder=True)
    (tmp_path / "empty" / "below").mkdir(parents=True)
    with pytest.raises(MlptuiError, match="no traces .* or the folders below it"):
        check_spec(str(tmp_path / "empty"), allow_folder=True)


async def test_a_folder_of_runs_opens_a_picker_whose_rows_open_each_run(cluster: Path) -> None:
    app = make_app([str(cluster / "ddp")])
    async with app.run_test(size=(80, 24)) as pilot:
        picker = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = picker.query_one(TraceList)
        assert [Path(s).name for s in table.specs] == [run.name for run in RUNS[:2]]
        rows = [table.render_line(1 + i).text for i in range(table.row_count())]
        assert all("run of 2" in r for r in rows) and len({(await _labels(pilot, table))[i] for i in (0, 1)}) == 2
        await pilot.press("enter")
        ranks = await wait_for_screen(app, pilot, RanksScreen, timeout=60)
        assert ranks is not None


async def test_the_bundled_picker_reaches_attention_and_the_two_gpu_runs() -> None:
    files = sorted(p for p in SAMPLES.iterdir() if p.name.endswith(".pt.trace.json.gz"))
    attention = sorted(ATTENTION.glob("*.pt.trace.json.gz"))
    assert len(RUNS) == 4 and attention
    app = make_app([])
    async with app.run_test(size=(80, 24)) as pilot:
        picker = await wait_for_screen(app, pilot, PickerScreen)
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = picker.query_one(TraceList)
        names = [Path(s).name for s in table.specs]
        assert sorted(names) == sorted([p.name for p in files] + [p.name for p in RUNS] + ["attention"])
        assert str(picker.query_one("#picker-list-pane").border_title).startswith(f"{len(files)} traces, 5 folders")
        for width in (80, 120, 160):
            await pilot.resize_terminal(width, 24 if width == 80 else 48)
            await pilot.pause()
            labels = await _labels(pilot, table)
            assert len(set(labels)) == len(labels) == len(names), labels
            assert all(labels) and sum("‹" in label for label in labels) == 4      # the runs, two by two
        table.move_cursor(names.index("attention"))
        await pilot.press("enter")
        await pilot.pause()
        inner = await wait_for_screen(app, pilot, PickerScreen)
        while inner is picker:
            await pilot.pause(0.05)
            inner = app.screen
        assert sorted(Path(s).name for s in inner.query_one(TraceList).specs) == [p.name for p in attention]


async def _labels(pilot, table: TraceList) -> list[str]:
    """The trace column of each row as drawn, the cursor brought to each row in turn."""
    header = table.render_line(0).text
    start, end = header.index("trace"), header.index("kernels")
    labels = []
    for index in range(table.row_count()):
        table.move_cursor(index)
        await pilot.pause()
        labels.append(table.render_line(index - round(table.scroll_offset.y) + 1).text[start:end].strip())
    table.move_cursor(0)
    return labels


def test_labels_a_cut_would_make_alike_are_cut_where_they_differ() -> None:
    names = sorted(p.name for p in CORPUS_REAL.iterdir()) if CORPUS_REAL.exists() else []
    names += [run.name for run in RUNS]
    assert len(names) >= 4
    for width in range(16, 64):
        cuts = distinct_cuts(names, width)
        assert len(set(cuts.values())) == len(set(names)), width
        assert all(len(c) <= width for c in cuts.values())
