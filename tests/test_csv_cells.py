"""CSV cells a spreadsheet would run are written as text: a cell beginning with `=`, `+`, `-`, `@`, a tab or a
carriage return gets `'` in front (OWASP, CSV Injection), in `x` (the explorer's export) and in `summary
--csv`; numbers, negative ones included, stay numbers. An op named `=HYPERLINK(…)` was written as is, and
ran as a formula when the file was opened."""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path

import pytest
from app_support import wait_for_screen
from conftest import find_sample

from mlptui.app import make_app
from mlptui.cli import main
from mlptui.screens.profile_screen import ProfileScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.viewmodels.table_export import csv_text

FORMULAS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "@SUM(1+1)*cmd"]


def read(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_formula_cells_are_text_and_numbers_stay_numbers() -> None:
    cells = [*FORMULAS, "\t=1+1", "\r=1+1", "-", "+", "=", "@"]
    numbers = [-1.5, -3, 0, 2.5e-7, "-1.5", "+3e4", "-0.25", ".5", "-7"]
    text = csv_text(["name", "value"], [[c, n] for c, n in zip(cells, numbers * 2, strict=False)])
    rows = read(text)
    assert len(rows) == 1 + len(cells)          # a carriage return in a cell does not split its row
    assert [r[0] for r in rows[1:]] == ["'" + c for c in cells]
    assert [r[1] for r in rows[1:]] == [str(n) for n in (numbers * 2)[:len(cells)]]


def test_text_that_only_holds_a_sign_inside_is_left_alone() -> None:
    rows = read(csv_text(["a"], [["a-b"], ["1-2"], ["x=y"], ["aten::mm"], [None], [["=x"]]]))
    assert [r[0] for r in rows[1:]] == ["a-b", "1-2", "x=y", "aten::mm", "", '["=x"]']


def _formula_trace(tmp_path: Path) -> tuple[Path, list[str]]:
    """The bundled eager MLP with its ops (and their kernels) renamed to start like formulas."""
    doc = json.loads(gzip.decompress(find_sample("mlp", "eager", "bf16").read_bytes()))
    names = []
    for n, event in enumerate(e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"):
        event["name"] = FORMULAS[n % len(FORMULAS)] + event["name"]
        names.append(event["name"])
    path = tmp_path / "formulas.pt.trace.json"
    path.write_text(json.dumps(doc))
    return path, names


def test_summary_csv_writes_formula_names_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, names = _formula_trace(tmp_path)
    assert main(["summary", str(path), "--csv", "operators"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out, newline="")))
    assert rows and {r["name"] for r in rows} <= {"'" + n for n in names}
    assert all(r["name"].startswith("'") for r in rows)
    assert all(float(r["calls"]) >= 1 and not r["calls"].startswith("'") for r in rows)      # numbers stay numbers


async def test_x_writes_formula_names_as_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, names = _formula_trace(tmp_path)
    out = tmp_path / "out"
    monkeypatch.setenv("MLPTUI_EXPORT_DIR", str(out))
    app = make_app([str(path)])
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for_screen(app, pilot, TraceScreen)
        await pilot.press("4", "x")           # the launches pane: launching op, call, kernel, figures
        await pilot.press("p")                # the operators view: its own export, unformatted figures
        await wait_for_screen(app, pilot, ProfileScreen)
        await app.workers.wait_for_complete()
        await pilot.press("x")
        await pilot.pause()
    launches, operators = sorted(out.glob("*.csv"), key=lambda p: "operators" in p.name)
    rows = list(csv.reader(io.StringIO(launches.read_text(), newline="")))
    ops = [r[0] for r in rows[1:] if not r[0].startswith("ProfilerStep#")]      # annotations keep their names
    assert ops and all(op.startswith("'") and op[1:] in names for op in ops), ops[:5]
    rows = list(csv.DictReader(io.StringIO(operators.read_text(), newline="")))
    assert rows and all(r["name"].startswith("'") and r["name"][1:] in names for r in rows)
    assert all(int(r["calls"]) >= 1 for r in rows)
