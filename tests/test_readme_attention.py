"""The README's Part 3 figures that come from the attention rung's manifest (its rows, driven by their keys
at 80×24, are test_readme_rows_80x24.py's)."""

from __future__ import annotations

import re

from attention_support import ATTENTION_SAMPLES
from conftest import ROOT


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
