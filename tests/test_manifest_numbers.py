"""Integers a manifest holds are copied into `summary --json` only while a JSON reader reads them exactly
(the signed 64-bit range); a 401-digit `timed_us` was copied through as 401 digits. Outside the range a
value is null, as an unknown figure is; everything else of the run's entry is kept."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import find_sample

from mlptui.cli import main
from mlptui.contract.manifest import manifest_for

HUGE = int("9" * 401)


def _run_folder(tmp_path: Path, **fields: object) -> Path:
    trace = tmp_path / "t.pt.trace.json.gz"
    shutil.copy(find_sample("linear", "eager", "bf16"), trace)
    run = {"trace": trace.name, "workload": "linear", **fields}
    # written by hand: the stdlib writes any integer, as a hostile or broken writer would
    (tmp_path / "manifest.json").write_text(json.dumps({"mlptui_manifest": 1, "runs": [run]}))
    return trace


def test_summary_json_gives_null_for_an_integer_no_reader_reads_exactly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _run_folder(tmp_path, timed_us=HUGE, steps=-HUGE, shape={"m": [1, HUGE]},
                        widest=2**63 - 1, lowest=-2**63, over=2**63, flag=True)
    assert main(["summary", str(trace), "--json"]) == 0
    out = capsys.readouterr().out
    assert "9" * 30 not in out
    manifest = json.loads(out)["manifest"]
    assert manifest == {"trace": trace.name, "workload": "linear", "timed_us": None, "steps": None,
                        "shape": {"m": [1, None]}, "widest": 2**63 - 1, "lowest": -2**63, "over": None,
                        "flag": True}


def test_an_ordinary_entry_is_the_same_object_untouched(tmp_path: Path) -> None:
    trace = _run_folder(tmp_path, timed_us=123.5, steps=3, shape={"m": [64, 128]})
    assert manifest_for(trace) == {"trace": trace.name, "workload": "linear", "timed_us": 123.5, "steps": 3,
                                   "shape": {"m": [64, 128]}}


def test_the_text_report_reads_the_same_bounded_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _run_folder(tmp_path, timed_us=HUGE)
    assert main(["summary", str(trace)]) == 0
    assert "9" * 30 not in capsys.readouterr().out
