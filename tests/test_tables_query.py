"""Tables a profiler user queries: `/` filters the operator and kernel views by name, `r` shows raw kernel
names there, kernels whose names decode alike are told apart, the kernel view has each kernel's launch
(grid, block, registers, shared memory), the kernels pane's groups (`a`) have a calls column, and `x`
writes what a table shows as CSV, never beside the trace and never over another file; `summary --csv`
writes a report table. Figures are checked against a plain reading of the trace file."""

from __future__ import annotations

import csv
import gzip
import io
from collections import Counter
from pathlib import Path

import orjson
import pytest
from app_support import wait_for_screen
from conftest import ROOT, SAMPLES

from mlptui.app import make_app
from mlptui.cli import main
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.trace.names.kernel import decode_kernel
from mlptui.widgets.kernels import KernelTable
from mlptui.widgets.profile_tables import KernelStatsTable, OperatorTable

SIZE = (160, 48)
TRAIN = sorted(SAMPLES.glob("mlp-train-eager-64x128x*.pt.trace.json.gz"))[-1]


def raw_events(path: Path) -> list[dict]:
    return orjson.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def step_window(events: list[dict], name: str) -> tuple[float, float]:
    step = next(e for e in events if e.get("name") == name and e.get("ph") == "X")
    return step["ts"], step["ts"] + step["dur"]


def launched_in(events: list[dict], window: tuple[float, float]) -> list[dict]:
    """Kernels whose launch call starts in the window (the views scope kernels by the step that launched them)."""
    start, end = window
    calls = {e["args"]["correlation"] for e in events if e.get("ph") == "X"
             and e.get("cat") in ("cuda_runtime", "cuda_driver") and start <= e["ts"] < end}
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"
            and e["args"].get("correlation") in calls]


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


async def open_view(pilot, app, key: str) -> ProfileScreen:
    await pilot.press(key)
    screen = await wait_for_screen(app, pilot, ProfileScreen)
    await app.workers.wait_for_complete()
    await pilot.pause()
    return screen


async def type_filter(pilot, text: str) -> None:
    await pilot.press("slash", *text, "enter")
    await pilot.pause()


async def test_slash_filters_the_operator_view_and_x_exports_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLPTUI_EXPORT_DIR", str(tmp_path / "out"))
    events = raw_events(TRAIN)
    app = make_app([str(TRAIN)])
    async with app.run_test(size=SIZE) as pilot:
        trace_screen = await wait_for_screen(app, pilot, TraceScreen)
        step_name = trace_screen.facts.trace.steps[trace_screen.scope.step].name
        screen = await open_view(pilot, app, "p")
        table = screen.query_one(OperatorTable)
        everything = len(table.rows)
        await type_filter(pilot, "MM")
        start, end = step_window(events, step_name)
        want = {e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"
                and start <= e["ts"] < end and "mm" in e["name"].lower()}
        assert want and {r.name for r in table.rows} == want and len(table.rows) < everything
        assert "filter: MM" in str(screen.query_one("#profile-header").render())
        # `x`: the rows on screen, as CSV, in a new file each time, in the export folder
        await pilot.press("x")
        await pilot.press("x")
        first = tmp_path / "out" / f"{TRAIN.name.removesuffix('.pt.trace.json.gz')}-operators-{step_name.replace('#', '-')}.csv"
        second = first.with_name(first.stem + "-2.csv")
        assert sorted((tmp_path / "out").iterdir()) == sorted([first, second])
        assert first.read_text() == second.read_text()
        rows = csv_rows(first.read_text())
        assert [r["name"] for r in rows] == [r.name for r in table.rows]
        calls = Counter(e["name"] for e in events if e.get("ph") == "X" and e.get("cat") == "cpu_op"
                        and start <= e["ts"] < end)
        assert all(int(r["calls"]) == calls[r["name"]] for r in rows)
        assert not any(p.suffix == ".csv" for p in TRAIN.parent.iterdir())       # never beside the trace
        # an empty filter shows every row again
        await pilot.press("slash", *["backspace"] * 2, "enter")
        await pilot.pause()
        assert len(table.rows) == everything


async def test_kernel_view_filter_raw_names_distinct_labels_and_launch() -> None:
    events = raw_events(TRAIN)
    app = make_app([str(TRAIN)])
    async with app.run_test(size=SIZE) as pilot:
        trace_screen = await wait_for_screen(app, pilot, TraceScreen)
        step_name = trace_screen.facts.trace.steps[trace_screen.scope.step].name
        screen = await open_view(pilot, app, "K")
        table = screen.query_one(KernelStatsTable)
        kernels = launched_in(events, step_window(events, step_name))
        by_name: dict[str, list[dict]] = {}
        for k in kernels:
            by_name.setdefault(k["name"], []).append(k)
        assert {r.name for r in table.rows} == set(by_name)
        # two raw names that decode to one short name are told apart, every label differs
        shorts = Counter(decode_kernel(n).short for n in by_name)
        assert any(c > 1 for c in shorts.values()), "the sample should have names that decode alike"
        labels = [table.cells(i)[0] for i in range(table.row_count())]
        assert len(set(labels)) == len(labels)
        # grid, block, registers, shared memory: each row's from the raw args when every call agrees
        heads = table.header_cells()
        for i, row in enumerate(table.rows):
            cells = dict(zip(heads, table.cells(i), strict=True))
            args = [k["args"] for k in by_name[row.name]]
            for title, key in (("grid", "grid"), ("block", "block")):
                values = {tuple(a[key]) for a in args}
                assert cells[title] == ("x".join(map(str, values.pop())) if len(values) == 1 else "varies")
            regs = {a["registers per thread"] for a in args}
            assert cells["regs"] == (str(regs.pop()) if len(regs) == 1 else "varies")
        # `/` on the raw or decoded name
        await type_filter(pilot, "nvjet")
        assert table.rows and {r.name for r in table.rows} == {n for n in by_name if "nvjet" in n.lower()}
        # `r`: the raw names
        await pilot.press("r")
        await pilot.pause()
        assert {table.cells(i)[0] for i in range(table.row_count())} == {r.name for r in table.rows}


async def test_grouped_kernels_pane_has_a_calls_column() -> None:
    events = raw_events(TRAIN)
    app = make_app([str(TRAIN)])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        step_name = screen.facts.trace.steps[screen.scope.step].name
        await pilot.press("3", "a")
        await pilot.pause()
        table = screen.query_one(KernelTable)
        assert table.header_cells()[0] == "calls"
        gpu = {e["args"]["correlation"]: e for e in events if e.get("ph") == "X"
               and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
        start, end = step_window(events, step_name)
        calls = Counter(gpu[e["args"]["correlation"]]["name"] for e in events if e.get("ph") == "X"
                        and e.get("cat") in ("cuda_runtime", "cuda_driver") and start <= e["ts"] < end
                        and e["args"].get("correlation") in gpu)
        top = round(table.scroll_offset.y)
        for y in range(1, min(table.scrollable_content_region.height, table.row_count() - top + 1)):
            line = table.render_line(y).text
            name = table.trace.gpu[table.rows[top + y - 1]].name
            assert line[1:].split()[0] == str(calls[name])     # the calls column is on screen at 80×24
        assert sum(calls.values()) == len(table.order)


def test_summary_csv_writes_a_report_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(TRAIN), "--csv", "kernel_stats"]) == 0
    rows = csv_rows(capsys.readouterr().out)
    events = raw_events(TRAIN)
    steps = [e for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#")]
    kernels = [k for s in steps for k in launched_in(events, (s["ts"], s["ts"] + s["dur"]))]
    totals = Counter()
    for k in kernels:
        totals[k["name"]] += k["dur"]
    assert {r["name"] for r in rows} == set(totals)
    for r in rows:
        assert float(r["total_us"]) == pytest.approx(totals[r["name"]], abs=1e-3)


async def test_grouping_an_empty_kernels_pane_keeps_it_empty() -> None:
    """A trace with launch calls but no GPU activity recorded: `a` on its empty kernels pane."""
    path = ROOT.parent / "shared" / "corpus" / "real" / "HazyResearch__zoology__trace.json"
    if not path.exists():
        pytest.skip("real-trace corpus not available")
    events = orjson.loads(path.read_bytes())
    assert not any(e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") for e in events["traceEvents"])
    app = make_app([str(path)])
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await wait_for_screen(app, pilot, TraceScreen)
        table = screen.query_one(KernelTable)
        await pilot.press("3", "a")
        await pilot.pause()
        assert table.grouped and table.row_count() == 0 and table.header_cells()[0] == "calls"
        await pilot.press("a")
        await pilot.pause()
        assert not table.grouped and table.row_count() == 0


def test_summary_csv_of_a_folder_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(SAMPLES), "--csv", "operators"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip().count("\n") == 0 and "--csv" in captured.err
