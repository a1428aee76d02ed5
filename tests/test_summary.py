"""`summarize` and `mlptui summary`: the JSON contract, text and Markdown, and bad input."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from mlptui.cli import main
from mlptui.render.summary_text import render_markdown, render_text
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.parse.load import load_trace

STEP_KEYS = {"index", "name", "cpu_us", "gpu_busy_us", "gpu_idle_us", "kernels", "launches",
             "launch_overhead_us", "verdict", "window_us", "device_busy_us", "device_idle_us"}


def test_json_contract_on_mlp_compile(sample_trace: Callable[..., Path]) -> None:
    d = orjson.loads(orjson.dumps(summarize(load_trace(sample_trace("mlp", "compile")))))
    assert d["format"] == "kineto" and d["device"]["name"] == "NVIDIA H200" and d["warnings"] == []
    assert d["manifest"]["mode"] == "compile"
    assert d["counts"]["steps"] == 3
    assert d["counts"]["gpu_ops"] == sum(k["count"] for k in d["kernels"]) + sum(m["count"] for m in d["memory_ops"])
    assert d["counts"]["unlinked_gpu_ops"] == 0 and d["counts"]["threads"] >= 1
    assert [s["name"] for s in d["steps"]] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    assert all(set(s) == STEP_KEYS for s in d["steps"]) and set(d["total"]) == STEP_KEYS
    assert [s["kernels"] for s in d["steps"]] == [4, 4, 4]
    kernels = {k["name"]: k for k in d["kernels"]}
    fused = kernels["triton_poi_fused__unsafe_view_gelu_mul_0"]
    assert (fused["count"], fused["family"]) == (3, "pointwise")
    assert fused["mean_us"] == pytest.approx(fused["total_us"] / 3, abs=1e-3)
    assert sum(k["count"] for k in d["kernels"]) == 12          # kernels only; memsets apart
    assert {m["kind"] for m in d["memory_ops"]} == {"memset"}
    assert d["kernels"] == sorted(d["kernels"], key=lambda k: -k["total_us"])
    assert {c["name"] for c in d["launch_calls"]} >= {"cuLaunchKernelEx", "cuLaunchKernel"}


def test_dispatch_linear_eager(sample_trace: Callable[..., Path]) -> None:
    d = orjson.loads(orjson.dumps(summarize(load_trace(sample_trace("linear", "eager")))))
    # every leaf path of the steps, the one that launches nothing included
    assert len(d["dispatch"]) == 2
    quiet, row = d["dispatch"]
    assert quiet["path"][-4:] == ["aten::linear", "aten::t", "aten::transpose", "aten::as_strided"]
    assert quiet["gpu_kernels"] == [] and quiet["count"] == 3 and quiet["gpu_us"] == 0.0
    assert row["path"][-2:] == ["aten::linear", "aten::addmm"] and row["count"] == 3
    assert len(row["gpu_kernels"]) == 1 and row["gpu_kernels"][0].startswith("nvjet_sm90_")


def test_renderings_mention_what_matters(sample_trace: Callable[..., Path]) -> None:
    report = summarize(load_trace(sample_trace("mlp", "eager")))
    d = orjson.loads(orjson.dumps(report))
    text = render_text(report)
    assert "ProfilerStep#3" in text and "verdict rule" in text and "aten::linear" in text
    assert f"verdict: {d['total']['verdict']} (all 3 steps: device idle " in text
    md = render_markdown(report)
    assert md.startswith("### Trace summary") and "| step |" in md and "#### Dispatch" in md
    assert d["memory_ops"] and "#### Memcpy / memset" in md and "memcpy / memset" in text
    assert all(f"| {m['name']} | {m['kind']} | {m['count']} |" in md for m in d["memory_ops"][:15])


def test_cli_text_json_md(sample_trace: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    path = str(sample_trace("mlp", "eager"))
    assert main(["summary", path]) == 0
    assert "kernels (" in capsys.readouterr().out
    assert main(["summary", path, "--json"]) == 0
    d = orjson.loads(capsys.readouterr().out)
    assert d["source"] == path and len(d["steps"]) == 3
    assert main(["summary", path, "--md"]) == 0
    assert capsys.readouterr().out.startswith("### Trace summary")


def test_cli_folder_lists_traces(sample_trace: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    folder = sample_trace("mlp", "eager").parent
    assert main(["summary", str(folder), "--json"]) == 0
    listed = orjson.loads(capsys.readouterr().out)["traces"]
    assert any("mlp-eager-" in s for s in listed) and not any(s.endswith("manifest.json") for s in listed)


@pytest.mark.parametrize(
    ("content", "expect"),
    [(b"", "empty file"), (b"{not json", "not valid JSON"), (b'{"traceEvents": [', "truncated JSON"),
     (b"\x1f\x8b\x08\x00garbage", "gzip")],
)
def test_cli_bad_input_exits_2_with_one_line(tmp_path: Path, content: bytes, expect: str) -> None:
    bad = tmp_path / "bad.pt.trace.json"
    bad.write_bytes(content)
    proc = subprocess.run([sys.executable, "-m", "mlptui.cli", "summary", str(bad)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlptui: ") and expect in lines[0]
    assert "Traceback" not in proc.stderr


def test_cli_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


def test_summary_and_view_of_an_empty_folder_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    codes, errors = [], []
    for command in (["summary", str(tmp_path)], ["summary", str(tmp_path), "--json"], ["view", str(tmp_path)]):
        codes.append(main(command))
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        errors.append(err)
    assert codes == [2, 2, 2] and len(set(errors)) == 1 and "no traces" in errors[0]
