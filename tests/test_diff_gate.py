"""`mlptui diff A B --fail-if-slower PCT` on the committed eager/compile sample pairs, both ways: the exit
code follows GPU busy time and the manifests' unprofiled timings, each computed here from the raw events
and the raw manifest; the report is Markdown; a bad percentage is a one-line error."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest
from attention_support import Raw, attention_sample
from conftest import find_sample

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


PAIRS = [(("mlp", "eager"), ("mlp", "compile")), (("linear", "eager"), ("linear", "compile"))]


@pytest.mark.parametrize("pair", PAIRS)
@pytest.mark.parametrize("swap", [False, True])
def test_the_gate_on_eager_and_compile_both_ways(pair, swap, capsys) -> None:
    a, b = (find_sample(*p, dtype="bf16") for p in pair)
    if swap:
        a, b = b, a
    slower = {"GPU busy": (_busy_median(b) / _busy_median(a) - 1) * 100, "unprofiled": (_timed(b) / _timed(a) - 1) * 100}
    code = main(["diff", str(a), str(b), "--fail-if-slower", "5%"])
    out, err = capsys.readouterr()
    assert out.startswith("#") and "#### Gate: fail if B is more than 5% slower than A" in out
    failing = [what for what, pct in slower.items() if pct > 5]
    assert code == (1 if failing else 0)
    for what, pct in slower.items():
        m = re.search(rf"- {what}: A [\d.]+ µs, B [\d.]+ µs: B is ([\d.]+)% (slower|faster)", out)
        assert m is not None
        shown = float(m.group(1)) * (1 if m.group(2) == "slower" else -1)
        assert shown == pytest.approx(pct, abs=0.25)     # the busy time's rounding to the ns
    if failing:
        assert err.count("\n") == 1 and all(f"{w} +" in err for w in failing)
    else:
        assert err == ""


def test_mlp_compile_passes_against_eager_and_eager_fails_against_compile(capsys) -> None:
    eager, compiled = find_sample("mlp", "eager", "bf16"), find_sample("mlp", "compile", "bf16")
    assert main(["diff", str(eager), str(compiled), "--fail-if-slower", "5"]) == 0
    assert main(["diff", str(compiled), str(eager), "--fail-if-slower", "5%"]) == 1
    assert main(["diff", str(compiled), str(eager), "--fail-if-slower", "50%"]) == 0
    capsys.readouterr()


def test_the_gate_in_json(capsys) -> None:
    eager, compiled = find_sample("mlp", "eager", "bf16"), find_sample("mlp", "compile", "bf16")
    assert main(["diff", str(compiled), str(eager), "--fail-if-slower", "5%", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert {c["what"] for c in doc["gate"]} == {"GPU busy", "unprofiled"} and all(c["failed"] for c in doc["gate"])


@pytest.mark.parametrize("bad", ["five", "-3%", "%", "nan"])
def test_a_bad_percentage_is_one_line_and_exit_2(bad, capsys) -> None:
    flash = attention_sample("attention-sdpa-flash")
    code = main(["diff", str(flash), str(flash), f"--fail-if-slower={bad}"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "--fail-if-slower" in err
