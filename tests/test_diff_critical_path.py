"""The diff's critical-path block: each side's path length is its aligned step's window, read here from
the raw events, its time by kind adds up to it, and the text report, the Markdown and the app's diff
header show the same figures."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import orjson
from conftest import raw_step_window
from diff_support import sample

from mlptui.base.units import duration
from mlptui.commands.output import dumps_json
from mlptui.render.diff_text import render_markdown, render_text
from mlptui.trace.diff.trace_diff import diff_traces
from mlptui.trace.parse.load import load_trace
from mlptui.trace.reports.diff import DiffReport


def _step_window(path: Path, name: str) -> float:
    events = json.load(gzip.open(path))["traceEvents"]
    step = next(e for e in events if e.get("ph") == "X" and e.get("name") == name
                and e.get("cat") in ("user_annotation", "cpu_op"))
    return raw_step_window(events, step)


def _report() -> DiffReport:
    a, b = sample("mlp", "eager"), sample("mlp", "compile")
    return diff_traces(load_trace(a), load_trace(b)).report()


def _doc() -> tuple[dict[str, Any], Path, Path]:
    """The `diff --json` document, as the one encoder writes it."""
    return orjson.loads(dumps_json(_report())), sample("mlp", "eager"), sample("mlp", "compile")


def test_each_side_is_its_aligned_step_by_kind() -> None:
    doc, a, b = _doc()
    cp = doc["critical_path"]
    assert (cp["a_step"], cp["b_step"]) == (doc["a"]["step"], doc["b"]["step"])
    assert abs(cp["a_us"] - _step_window(a, cp["a_step"])) < 0.01
    assert abs(cp["b_us"] - _step_window(b, cp["b_step"])) < 0.01
    assert [r["kind"] for r in cp["by_kind"]] == ["cpu", "launch", "launch_delay", "kernel", "memcpy", "memset",
                                                  "sync_wait", "idle"]
    for side in ("a_us", "b_us"):
        assert abs(sum(r[side] for r in cp["by_kind"]) - cp[side]) < 0.01
    for r in cp["by_kind"]:
        assert abs(r["delta_us"] - (r["b_us"] - r["a_us"])) < 0.002
    by = {r["kind"]: r for r in cp["by_kind"]}
    # compile collapses the eager CPU chain: less host time on B's path, more of it on the device
    assert by["cpu"]["b_us"] < by["cpu"]["a_us"] and cp["gpu_share"]["b"] > cp["gpu_share"]["a"]


def test_text_markdown_and_header_show_it() -> None:
    doc, _a, _b = _doc()
    cp = doc["critical_path"]
    report = _report()
    text = render_text(report)
    assert "Critical path by kind" in text
    length = next(line for line in text.splitlines() if line.strip().startswith("length"))
    assert duration(cp["a_us"]) in length and duration(cp["b_us"]) in length
    assert f"| length | {duration(cp['a_us'])} | {duration(cp['b_us'])} |" in render_markdown(report)

    from mlptui.screens.diff_screen import header_text

    a, b = sample("mlp", "eager"), sample("mlp", "compile")
    header = header_text(diff_traces(load_trace(a), load_trace(b))).splitlines()
    assert header[-1].startswith(f"path A {duration(cp['a_us'])} → B {duration(cp['b_us'])}")
    assert all(len(line) <= 80 for line in header[-1:])


def test_swapping_sides_swaps_the_block() -> None:
    a, b = sample("mlp", "eager"), sample("mlp", "compile")
    d = diff_traces(load_trace(a), load_trace(b))
    there = d.swapped().critical_path()
    back = diff_traces(load_trace(b), load_trace(a)).critical_path()
    assert there == back
