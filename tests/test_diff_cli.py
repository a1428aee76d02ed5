"""`mlptui diff` as a user runs it: text, --json, --md, chosen steps, and one-line errors."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from diff_support import ROOT, sample


def mlptui(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlptui.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_text_report_tells_the_mlp_story() -> None:
    out = mlptui("diff", str(sample("mlp", "eager")), str(sample("mlp", "compile")))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "mlp/eager" in text and "mlp/compile" in text and "NVIDIA H200" in text
    assert "5 same, 0 changed, 0 added, 0 removed, 1 fused" in text
    fused = [line for line in text.splitlines() if re.match(r"\s+\d+ ⊕ ", line)]
    assert len(fused) == 1 and "gelu" in fused[0] and "fused" in fused[0].lower()
    assert "removed (A only): aten::linear, aten::t" in text
    assert "TorchDynamo Cache Lookup" in text
    assert "B vs A: unprofiled " in text and "; step time " in text and "; GPU busy " in text
    assert "GPU time by kernel family" in text and "cuLaunchKernelEx" in text


def test_json_is_the_contract_and_raw_names() -> None:
    out = mlptui("diff", str(sample("linear", "eager")), str(sample("linear", "compile")), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert set(doc) >= {"a", "b", "kernels", "cpu", "speedup"} and doc["mlptui_diff"] == 1
    assert doc["kernels"][0]["status"] == "same"
    assert doc["kernels"][0]["a"] == doc["kernels"][0]["b"]
    assert doc["kernels"][0]["a"][0].startswith("nvjet_sm90")
    assert "aten::t" in doc["cpu"]["removed_ops"]


def test_markdown_has_tables_and_escapes_pipes() -> None:
    out = mlptui("diff", str(sample("mlp", "eager")), str(sample("kernels-mlp", "eager")), "--md")
    assert out.returncode == 0, out.stderr
    md = out.stdout
    assert md.startswith("## Trace diff")
    assert "| 5 | ⊕ fused |" in md and "geglu" in md
    assert "`LigerGELUMulFunction`" in md


def test_chosen_steps_and_only_diff() -> None:
    a, b = sample("mlp", "eager"), sample("mlp", "compile")
    out = mlptui("diff", str(a), str(b), "--json", "--step-a", "2", "--step-b", "4")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["a"]["step"], doc["b"]["step"]) == ("ProfilerStep#2", "ProfilerStep#4")
    only = mlptui("diff", str(a), str(b), "--only-diff")
    rows = [line for line in only.stdout.splitlines() if re.match(r"\s+\d+ . ", line)]
    assert rows and all(" = " not in line for line in rows) and any(" ⊕ " in line for line in rows)


def test_bad_inputs_exit_2_with_one_line() -> None:
    good = str(sample("mlp", "eager"))
    cases = [
        ("diff", good, str(ROOT / "no-such-trace.json")),
        ("diff", good, str(ROOT / "pyproject.toml")),
        ("diff", good, good, "--step-a", "999"),
    ]
    for args in cases:
        out = mlptui(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stdout == ""
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("mlptui: "), out.stderr
    missing = mlptui("diff", good)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr


def test_markdown_never_prints_a_signed_zero() -> None:
    path = str(sample("mlp", "eager"))
    out = mlptui("diff", path, path, "--md")      # a trace against itself: every change is zero
    assert out.returncode == 0, out.stderr
    assert "| ±0.00 µs |" in out.stdout
    assert not re.search(r"[-+−]0\.0+\b", out.stdout)
