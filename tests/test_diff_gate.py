"""`mlptui diff A B --fail-if-slower PCT [--on FIGURE]` on the committed sample pairs, both ways: the exit
code follows the one figure the gate judges — by default the runs' unprofiled timings when both manifests
have them, else the median step window; `--on step|gpu-busy|unprofiled` picks it — each computed here from
the raw events and the raw manifest; the report names the figure; the A100/V100 corpus pair, without
manifests, is judged on its step windows; a bad percentage or figure is a one-line error."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from attention_support import Raw, attention_sample
from conftest import CORPUS, find_sample
from diff_support import corpus_pair
from test_overview_all_steps import _events, raw_windows

from mlptui.cli import main


def _busy_median(path: Path) -> float:
    raw = Raw(path)
    per_step = []
    for i in range(len(raw.steps)):
        spans = sorted((g["ts"], g["ts"] + g["dur"]) for cat in ("kernel", "gpu_memcpy", "gpu_memset")
                       for g in raw.gpu_in_step(i, cat))
        total, end = 0.0, float("-inf")
        for start, stop in spans:          # the union of the step's GPU work
            if stop > end:
                total += stop - max(start, end)
                end = stop
        per_step.append(total)
    return statistics.median(per_step)


def _timed(path: Path) -> float:
    runs = json.loads((path.parent / "manifest.json").read_text())["runs"]
    return float(next(r for r in runs if r["trace"] == path.name)["timing"]["median_us"])


def _window_median(path: Path) -> float:
    return statistics.median((hi - lo) / 1000 for lo, hi in raw_windows(_events(path)))


TIME = r"[\d.]+ (?:µs|ms|s)"       # a duration in the documented form (docs/figures.md)
PAIRS = [(("mlp", "eager"), ("mlp", "compile")), (("linear", "eager"), ("linear", "compile"))]
FIGURE = {"unprofiled": ("unprofiled", _timed), "step": ("step time", _window_median),
          "gpu-busy": ("GPU busy", _busy_median)}


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("on", [None, "step", "gpu-busy", "unprofiled"])
def test_the_gate_on_eager_and_compile_both_ways(pair, swap, on, capsys) -> None:
    a, b = (find_sample(*p, dtype="bf16") for p in pair)
    if swap:
        a, b = b, a
    figure = on or "unprofiled"                     # both samples come with their manifest
    label, measure = FIGURE[figure]
    slower = (measure(b) / measure(a) - 1) * 100
    code = main(["diff", str(a), str(b), "--fail-if-slower", "5%", *(["--on", on] if on else [])])
    out, err = capsys.readouterr()
    assert out.startswith("#") and "#### Gate: fail if B is more than 5% slower than A" in out
    assert code == (1 if slower > 5 else 0)
    m = re.search(rf"- judged on {label} \(`--on {figure}`\): A {TIME}, B {TIME}: B is ([\d.]+)% "
                  r"(slower|faster)", out)
    assert m is not None
    shown = float(m.group(1)) * (1 if m.group(2) == "slower" else -1)
    assert shown == pytest.approx(slower, abs=0.25)     # the busy time's rounding to the ns
    assert out.count("- judged on ") == 1
    if slower > 5:
        assert err.count("\n") == 1 and f"judged on {label} +" in err
    else:
        assert err == ""


def test_the_corpus_pair_without_manifests_is_judged_on_its_step_windows(capsys) -> None:
    a, b = corpus_pair()
    slower = (_window_median(b) / _window_median(a) - 1) * 100
    assert slower > 5                                   # the V100 side's steps are longer
    assert main(["diff", str(a), str(b), "--fail-if-slower", "5%"]) == 1
    out, err = capsys.readouterr()
    assert "- judged on step time (`--on step`)" in out and "judged on step time +" in err
    assert main(["diff", str(b), str(a), "--fail-if-slower", "0"]) == 0
    capsys.readouterr()
    assert main(["diff", str(a), str(b), "--fail-if-slower", "5%", "--on", "unprofiled"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "--on unprofiled" in err


def test_mlp_compile_passes_against_eager_and_eager_fails_against_compile(capsys) -> None:
    eager, compiled = find_sample("mlp", "eager", "bf16"), find_sample("mlp", "compile", "bf16")
    assert main(["diff", str(eager), str(compiled), "--fail-if-slower", "5"]) == 0
    assert main(["diff", str(compiled), str(eager), "--fail-if-slower", "5%"]) == 1
    assert main(["diff", str(compiled), str(eager), "--fail-if-slower", "50%"]) == 0
    capsys.readouterr()


def test_the_gate_in_json(capsys) -> None:
    eager, compiled = find_sample("mlp", "eager", "bf16"), find_sample("mlp", "compile", "bf16")
    assert main(["diff", str(compiled), str(eager), "--fail-if-slower", "5%", "--json", "--on", "gpu-busy"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [(c["what"], c["figure"], c["failed"]) for c in doc["gate"]] == [("GPU busy", "gpu-busy", True)]


def test_on_without_a_gate_is_one_line_and_exit_2(capsys) -> None:
    flash = attention_sample("attention-sdpa-flash")
    assert main(["diff", str(flash), str(flash), "--on", "step"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "--fail-if-slower" in err


@pytest.mark.parametrize("bad", ["five", "-3%", "%", "nan"])
def test_a_bad_percentage_is_one_line_and_exit_2(bad, capsys) -> None:
    flash = attention_sample("attention-sdpa-flash")
    code = main(["diff", str(flash), str(flash), f"--fail-if-slower={bad}"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "--fail-if-slower" in err


def _documented(us: float) -> str:
    """A duration as docs/figures.md writes it, spelled out here: the largest unit keeping it at 1 or more."""
    return f"{us / 1e6:.2f} s" if us >= 1e6 else f"{us / 1e3:.2f} ms" if us >= 1e3 else f"{us:.2f} µs"


def test_the_gate_writes_times_as_every_report_does(capsys) -> None:
    """The A100 training pair of the trace corpus: GPU busy in tens of ms, once written `65830.5 µs`."""
    a, b = CORPUS / "trace_diff__control__control.json.gz", CORPUS / "trace_diff__test__test.json.gz"
    if not a.exists():
        pytest.skip("corpus not available")
    busy_a, busy_b = _busy_median(a), _busy_median(b)
    assert busy_a >= 1e3 and busy_b / busy_a > 1.05
    assert main(["diff", str(a), str(b), "--fail-if-slower", "5%", "--on", "gpu-busy"]) == 1
    out, err = capsys.readouterr()
    shown = re.search(rf"- judged on GPU busy \(`--on gpu-busy`\): A ({TIME}), B ({TIME}): B is ([\d.]+)% slower: "
                      r"\*\*FAIL\*\*", out)
    assert shown is not None, out[-400:]
    assert shown.group(1, 2) == (_documented(busy_a), _documented(busy_b))
    assert float(shown.group(3)) == pytest.approx((busy_b / busy_a - 1) * 100, abs=0.06)
    assert err == (f"mlptui: B is slower than A beyond the gate, judged on GPU busy +{shown.group(3)}% "
                   f"({_documented(busy_a)} → {_documented(busy_b)})\n")
