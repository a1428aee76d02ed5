"""The Python API (mlptui.api): the same figures as `mlptui summary --json`, `diff --json` and `check` on
the bundled samples, and its operator, kernel, dispatch and timeline figures against the raw events."""

from __future__ import annotations

import dataclasses
import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import SAMPLES, find_sample, training_sample

import mlptui.api as api
from mlptui.cli import main
from mlptui.commands.output import dumps_json
from mlptui.trace.reports.check import CountsShown

SAMPLE_FILES = sorted(SAMPLES.glob("*.pt.trace.json.gz"))
RUN_DIR = sorted(p for p in SAMPLES.glob("tp-mlp-eager-*-x2-*") if p.is_dir())[-1]


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def _json(value: Any) -> Any:
    """A typed report as `--json` writes it."""
    return json.loads(dumps_json(value))


def _linear() -> Path:
    return find_sample("linear", "eager", "bf16")


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name.split("-2026")[0])
def test_figures_equal_summary_json(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cli = _cli_json(capsys, "summary", "--json", str(path))
    t = api.load(str(path))
    assert _json(t.summary()) == cli
    assert _json(t.steps().rows) == cli["steps"]
    assert _json(t.operators().rows) == cli["operators"]
    assert _json(t.kernels().rows) == cli["kernel_stats"]
    ov = t.overview()
    assert _json([ov.rows, ov.total, ov.devices, ov.main_device]) == [
        cli["overview"][k] for k in ("steps", "total", "devices", "main_device")]
    assert ov.notes == {k: cli["overview"][k] for k in ("unlinked", "outside_operators")}
    mem, mods = t.memory(), t.modules()
    assert mem.available == (cli["memory"] is not None)
    assert _json([mem.rows, mem.devices, mem.unfreed]) == (
        [cli["memory"][k] for k in ("ops", "devices", "unfreed")] if cli["memory"] else [[], [], []])
    assert _json(mods.rows) == (cli["modules"] or [])
    assert _json(t.findings().recommendations) == cli["recommendations"]
    # typed all the way down: each row is the core's report type, not a plain dict
    rows = [*t.operators().rows, *t.kernels().rows, *ov.rows, *mem.rows, *mods.rows]
    assert all(dataclasses.is_dataclass(r) for r in rows)


def test_a_step_is_that_steps_row_and_sections(capsys: pytest.CaptureFixture[str]) -> None:
    path = training_sample()
    cli = _cli_json(capsys, "summary", "--json", path)
    t = api.load(path)
    last = cli["steps"][-1]
    number = int(last["name"].rpartition("#")[2])
    assert _json(t.step(number)) == last and t.scope(number) == last["name"]
    assert [r.name for r in t.overview(step=number).rows] == [last["name"]]
    assert sum(r.calls for r in t.kernels(step=number).rows) == last["kernels"]
    with pytest.raises(api.MlptuiError, match="no ProfilerStep#999"):
        t.operators(step=999)


# ---------------------------------------------------------------- against the raw events

def _raw(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def _in_steps(events: list[dict[str, Any]]) -> tuple[list[tuple[float, float]], dict[int, dict[str, Any]]]:
    """The ProfilerStep windows, and each launch call by its correlation id."""
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in (e.get("args") or {})}
    return steps, launches


def test_operator_and_kernel_totals_from_raw_events() -> None:
    path = _linear()
    events = _raw(path)
    steps, launches = _in_steps(events)

    def inside(ts: float) -> bool:
        return any(a <= ts <= b for a, b in steps)

    kernels = [e for e in events if e.get("cat") == "kernel" and inside(launches[e["args"]["correlation"]]["ts"])]
    t = api.load(str(path))
    rows = t.kernels().rows
    assert sum(r.calls for r in rows) == len(kernels) == 3
    assert sum(r.total_us for r in rows) == pytest.approx(sum(e["dur"] for e in kernels), abs=1e-3)

    addmm = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::addmm" and inside(e["ts"])]
    row = next(r for r in t.operators().rows if r.name == "aten::addmm")
    assert row.calls == len(addmm)
    assert row.host_total_us == pytest.approx(sum(e["dur"] for e in addmm), abs=1e-3)
    under = [k for k in kernels if any(
        a["ts"] <= launches[k["args"]["correlation"]]["ts"] <= a["ts"] + a["dur"] for a in addmm)]
    assert row.device_self_us == pytest.approx(sum(k["dur"] for k in under), abs=1e-3)

    by_sort = t.operators(sort="host_total_us").rows
    assert [r.host_total_us for r in by_sort] == sorted((r.host_total_us for r in by_sort), reverse=True)
    assert len(by_sort) > 2 and [r.name for r in t.operators(sort="-name").rows] == sorted(
        (r.name for r in by_sort), reverse=True)
    assert {r.name for r in t.operators(filter="ADDMM").rows} == {"aten::addmm"}
    short = rows[0].short                          # a kernel is found by its decoded name as well
    assert short != rows[0].name and t.kernels(filter=short.upper()).rows == [
        r for r in rows if short.lower() in r.short.lower() or short.lower() in r.name.lower()]
    with pytest.raises(api.MlptuiError, match="cannot sort by 'nope'"):
        t.operators(sort="nope")


def test_dispatch_of_linear_reaches_addmm_and_its_gemm() -> None:
    path = _linear()
    events = _raw(path)
    gemms = [e for e in events if e.get("cat") == "kernel"]
    d = api.load(str(path)).dispatch("aten::linear")
    by_name = {r.name: r for r in d.rows}
    assert d.rows[0].name == "aten::linear" and d.rows[0].depth == 0
    assert by_name["aten::t"].depth == by_name["aten::addmm"].depth == 1
    assert by_name["aten::addmm"].gpu_kernels == sorted({e["name"] for e in gemms})
    assert by_name["aten::addmm"].gpu_us == pytest.approx(sum(e["dur"] for e in gemms), abs=1e-3)
    assert by_name["aten::t"].gpu_kernels == [] and by_name["aten::t"].gpu_us == 0
    shallow = api.load(str(path)).dispatch("aten::linear → aten::t", depth=0)
    assert [r.name for r in shallow.rows] == ["aten::t"]
    with pytest.raises(api.MlptuiError, match="no op aten::nothing"):
        api.load(str(path)).dispatch("aten::nothing")


def test_timeline_window_holds_the_raw_events() -> None:
    path = _linear()
    events = _raw(path)
    # times count from the first CPU or GPU slice (not the profiler's own "Trace" span)
    origin = min(e["ts"] for e in events if e.get("ph") == "X" and e.get("cat") != "Trace")
    t = api.load(str(path))
    gpu = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    rows = t.timeline(0, 1e12, lanes=["gpu"]).rows
    assert len(rows) == len(gpu)
    first = min(gpu, key=lambda e: e["ts"])
    k = rows[0]
    assert k.ts_us == pytest.approx(first["ts"] - origin, abs=1e-3) and k.dur_us == pytest.approx(first["dur"])
    narrow = t.timeline(k.ts_us, k.ts_us + k.dur_us).rows
    assert any(r.kind == "gpu" and r.name == first["name"] for r in narrow)
    assert all(r.ts_us < k.ts_us + k.dur_us and r.ts_us + r.dur_us >= k.ts_us for r in narrow)
    with pytest.raises(api.MlptuiError, match="no lane"):
        t.timeline(0, 10, lanes=["gpu 9/9"])


# ---------------------------------------------------------------- diff, check, ranks, errors

def test_diff_is_diff_json(capsys: pytest.CaptureFixture[str]) -> None:
    a, b = str(_linear()), str(find_sample("linear", "compile"))
    cli = _cli_json(capsys, "diff", "--json", a, b)
    d = api.diff(a, b)
    assert isinstance(d, api.DiffReport) and _json(d) == cli and d.speedup == cli["speedup"]
    assert d.kernels and _json(d.kernels) == cli["kernels"]
    assert api.load(a).diff(api.load(b)) == d               # the method, as the function


def test_check_outcomes(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_linear())
    kernels = sum(1 for e in _raw(_linear()) if e.get("cat") == "kernel")
    r = api.check(path, ["kernels per step == 1", "no memcpy", "kernels per step == 2"])
    assert kernels == 3 and [o.ok for o in r.rows] == [True, True, False] and not r.ok
    assert api.load(path).check(["kernels per step == 1", "no memcpy", "kernels per step == 2"]) == r
    # the typed outcome: what the trace shows as values (one kernel in each step), and as `check` prints it
    steps = len(_in_steps(_raw(_linear()))[0])
    assert isinstance(r.rows[2].shown, CountsShown) and r.rows[2].shown.counts == [kernels // steps] * steps
    capsys.readouterr()
    assert main(["check", path, "--expect", "kernels per step == 2"]) == 1
    assert r.rows[2].shows and r.rows[2].shows in capsys.readouterr().out
    with pytest.raises(api.MlptuiError):
        api.check(path, ["kernels are fast"])


def test_ranks_is_the_run_report(capsys: pytest.CaptureFixture[str]) -> None:
    cli = _cli_json(capsys, "summary", "--json", str(RUN_DIR))
    r = api.load_run(RUN_DIR)
    assert isinstance(r.report, api.RanksReport) and _json(r.report) == cli["ranks"]
    assert r.sources == cli["traces"] == [row.source for row in r.report.ranks]
    with pytest.raises(api.MlptuiError, match="not a folder"):
        api.load_run(_linear())


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(api.MlptuiError) as missing:
        api.load(str(tmp_path / "none.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{ not json")
    with pytest.raises(api.MlptuiError) as broken:
        api.load(str(bad))
    with pytest.raises(api.MlptuiError, match="is a folder of 2 trace"):
        api.load(str(RUN_DIR))
    assert "\n" not in str(missing.value) and "\n" not in str(broken.value)


# ---------------------------------------------------------------- tables as DataFrames

def _columns(rows: list[Any]) -> list[str]:
    return [f.name for f in dataclasses.fields(rows[0])]


def _records(frame: Any) -> list[dict[str, Any]]:
    """The frame's rows back as dicts; pandas writes a missing figure (None) as NaN in a column of numbers."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def _fields(rows: list[Any]) -> list[dict[str, Any]]:
    return [{f.name: getattr(r, f.name) for f in dataclasses.fields(r)} for r in rows]


def test_every_table_kind_to_pandas_is_its_typed_rows() -> None:
    pytest.importorskip("pandas", reason="the `pandas` extra is not installed")
    path = _linear()
    events = _raw(path)
    t = api.load(str(path))
    tables = {"steps": t.steps(), "operators": t.operators(), "kernels": t.kernels(), "overview": t.overview(),
              "dispatch": t.dispatch("aten::linear"), "timeline": t.timeline(0, 1e12, lanes=["gpu"]),
              "check": t.check(["no memcpy"])}
    for kind, table in tables.items():
        frame = table.to_pandas()
        assert len(table.rows) > 0, kind
        assert list(frame.columns) == _columns(table.rows), kind       # the fields, in order
        assert _records(frame) == _fields(table.rows), kind
    # figures of the frames against the raw events
    kernels = [e for e in events if e.get("cat") == "kernel"]
    assert tables["steps"].to_pandas()["kernels"].sum() == len(kernels)
    assert tables["kernels"].to_pandas()["total_us"].sum() == pytest.approx(sum(e["dur"] for e in kernels), abs=1e-3)
    assert sorted(tables["timeline"].to_pandas()["name"]) == sorted(e["name"] for e in kernels)
    # a report's other typed rows (a diff's kernel alignment) through the same function
    d = t.diff(api.load(str(find_sample("linear", "compile"))))
    frame = api.to_pandas(d.kernels)
    assert list(frame.columns) == _columns(d.kernels) and len(frame) == len(d.kernels)
    with pytest.raises(api.MlptuiError, match="typed rows"):
        api.to_pandas([{"name": "x"}])


def test_memory_modules_and_ranks_to_pandas() -> None:
    pytest.importorskip("pandas", reason="the `pandas` extra is not installed")
    path = training_sample()
    raw = _raw(Path(path))
    t = api.load(path)
    mem, mods = t.memory(), t.modules()
    assert mem.available and mods.available
    for table in (mem, mods):
        frame = table.to_pandas()
        assert list(frame.columns) == _columns(table.rows) and _records(frame) == _fields(table.rows)
    # every allocation the allocator recorded in the steps (a positive Bytes) is counted in one op's row
    steps, _ = _in_steps(raw)
    allocs = [e["args"]["Bytes"] for e in raw if e.get("name") == "[memory]" and e["args"].get("Bytes", 0) > 0
              and any(a <= e["ts"] <= b for a, b in steps)]
    frame = mem.to_pandas()
    assert allocs and (frame["allocs"].sum(), frame["bytes_allocated"].sum()) == (len(allocs), sum(allocs))
    run = api.load_run(RUN_DIR)
    frame = api.to_pandas(run.report.ranks)
    assert list(frame["rank"]) == list(range(run.report.world_size)) and list(frame["source"]) == run.sources


def test_to_pandas_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)        # import pandas raises ImportError
    with pytest.raises(api.MlptuiError, match=r"pip install 'mlptui\[pandas\]'"):
        api.load(str(_linear())).steps().to_pandas()
