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
    assert t.operators().rows == cli["operators"]
    assert t.kernels().rows == cli["kernel_stats"]
    ov = t.overview()
    assert (ov.rows, ov.total, ov.devices) == (cli["overview"]["steps"], cli["overview"]["total"],
                                               cli["overview"]["devices"])
    mem, mods = t.memory(), t.modules()
    assert mem.available == (cli["memory"] is not None)
    assert mem.rows == (cli["memory"]["ops"] if cli["memory"] else [])
    assert mods.rows == (cli["modules"] or [])
    assert _json(t.findings().recommendations) == cli["recommendations"]


def test_a_step_is_that_steps_row_and_sections(capsys: pytest.CaptureFixture[str]) -> None:
    path = training_sample()
    cli = _cli_json(capsys, "summary", "--json", path)
    t = api.load(path)
    last = cli["steps"][-1]
    number = int(last["name"].rpartition("#")[2])
    assert _json(t.step(number)) == last and t.scope(number) == last["name"]
    assert [r["name"] for r in t.overview(step=number).rows] == [last["name"]]
    assert sum(r["calls"] for r in t.kernels(step=number).rows) == last["kernels"]
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
    assert sum(r["calls"] for r in rows) == len(kernels) == 3
    assert sum(r["total_us"] for r in rows) == pytest.approx(sum(e["dur"] for e in kernels), abs=1e-3)

    addmm = [e for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::addmm" and inside(e["ts"])]
    row = next(r for r in t.operators().rows if r["name"] == "aten::addmm")
    assert row["calls"] == len(addmm)
    assert row["host_total_us"] == pytest.approx(sum(e["dur"] for e in addmm), abs=1e-3)
    under = [k for k in kernels if any(
        a["ts"] <= launches[k["args"]["correlation"]]["ts"] <= a["ts"] + a["dur"] for a in addmm)]
    assert row["device_self_us"] == pytest.approx(sum(k["dur"] for k in under), abs=1e-3)

    by_sort = t.operators(sort="host_total_us").rows
    assert [r["host_total_us"] for r in by_sort] == sorted((r["host_total_us"] for r in by_sort), reverse=True)
    assert {r["name"] for r in t.operators(filter="ADDMM").rows} == {"aten::addmm"}
    with pytest.raises(api.MlptuiError, match="cannot sort by 'nope'"):
        t.operators(sort="nope")


def test_dispatch_of_linear_reaches_addmm_and_its_gemm() -> None:
    path = _linear()
    events = _raw(path)
    gemms = [e for e in events if e.get("cat") == "kernel"]
    d = api.load(str(path)).dispatch("aten::linear")
    by_name = {r["name"]: r for r in d.rows}
    assert d.rows[0]["name"] == "aten::linear" and d.rows[0]["depth"] == 0
    assert by_name["aten::t"]["depth"] == by_name["aten::addmm"]["depth"] == 1
    assert by_name["aten::addmm"]["gpu_kernels"] == sorted({e["name"] for e in gemms})
    assert by_name["aten::addmm"]["gpu_us"] == pytest.approx(sum(e["dur"] for e in gemms), abs=1e-3)
    assert by_name["aten::t"]["gpu_kernels"] == [] and by_name["aten::t"]["gpu_us"] == 0
    shallow = api.load(str(path)).dispatch("aten::linear → aten::t", depth=0)
    assert [r["name"] for r in shallow.rows] == ["aten::t"]
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
    assert k["ts_us"] == pytest.approx(first["ts"] - origin, abs=1e-3) and k["dur_us"] == pytest.approx(first["dur"])
    narrow = t.timeline(k["ts_us"], k["ts_us"] + k["dur_us"]).rows
    assert any(r["kind"] == "gpu" and r["name"] == first["name"] for r in narrow)
    assert all(r["ts_us"] < k["ts_us"] + k["dur_us"] and r["ts_us"] + r["dur_us"] >= k["ts_us"] for r in narrow)
    with pytest.raises(api.MlptuiError, match="no lane"):
        t.timeline(0, 10, lanes=["gpu 9/9"])


# ---------------------------------------------------------------- diff, check, ranks, errors

def test_diff_is_diff_json(capsys: pytest.CaptureFixture[str]) -> None:
    a, b = str(_linear()), str(find_sample("linear", "compile"))
    cli = _cli_json(capsys, "diff", "--json", a, b)
    d = api.diff(a, b)
    assert d.doc == cli and d.rows == cli["kernels"] and d.speedup == cli["speedup"]
    assert api.load(a).diff(api.load(b)).doc == cli          # the method, as the function


def test_check_outcomes(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_linear())
    kernels = sum(1 for e in _raw(_linear()) if e.get("cat") == "kernel")
    r = api.check(path, ["kernels per step == 1", "no memcpy", "kernels per step == 2"])
    assert kernels == 3 and [o["ok"] for o in r.rows] == [True, True, False] and not r.ok
    assert api.load(path).check(["kernels per step == 1", "no memcpy", "kernels per step == 2"]) == r
    capsys.readouterr()
    assert main(["check", path, "--expect", "kernels per step == 2"]) == 1
    assert r.rows[2]["shows"] in capsys.readouterr().out
    with pytest.raises(api.MlptuiError):
        api.check(path, ["kernels are fast"])


def test_ranks_is_the_run_report(capsys: pytest.CaptureFixture[str]) -> None:
    cli = _cli_json(capsys, "summary", "--json", str(RUN_DIR))
    r = api.load_run(RUN_DIR)
    assert r.report == cli["ranks"] and r.sources == cli["traces"]
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

def test_operators_and_steps_to_pandas_are_the_report_rows() -> None:
    pandas = pytest.importorskip("pandas", reason="the `pandas` extra is not installed")
    import mlptui

    t = mlptui.load(str(_linear()))
    ops = t.operators()
    frame = ops.to_pandas()
    assert isinstance(frame, pandas.DataFrame) and list(frame.columns) == list(ops.rows[0])
    # pandas writes a missing figure (None) as NaN in a column of numbers
    assert frame.astype(object).where(frame.notna(), None).to_dict("records") == ops.rows
    steps = t.steps()
    frame = steps.to_pandas()
    assert list(frame.columns) == [f.name for f in dataclasses.fields(api.StepStats)]
    assert frame.to_dict("records") == [dataclasses.asdict(s) for s in steps.rows]
    events = _raw(_linear())
    assert frame["kernels"].sum() == sum(1 for e in events if e.get("cat") == "kernel")


def test_to_pandas_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)        # import pandas raises ImportError
    with pytest.raises(api.MlptuiError, match=r"pip install 'mlptui\[pandas\]'"):
        api.load(str(_linear())).steps().to_pandas()
