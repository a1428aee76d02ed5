"""The critical path of the aligned steps, side by side: its length and its time by kind on A and on B.

    critical_path_diff(a, b, step_a, step_b) -> {"a_step", "b_step", "a_us", "b_us", "delta_us",
                                                 "gpu_share": {"a", "b"}, "by_kind": [{"kind", "a_us", "b_us", "delta_us"}]}
    critical_path_lines(doc) -> [lines]           the text report's section
    critical_path_markdown(doc) -> [lines]
    critical_path_header(doc, width) -> str       one line for the app's diff header: the kinds that moved most

Each side's path is mlptui.trace.analysis.critical_path's for its aligned step (the whole trace when it has
no steps); `delta_us` is B minus A. Every kind is listed, in KINDS' order.
"""

from __future__ import annotations

from typing import Any

from mlptui.base.units import duration
from mlptui.trace.analysis.critical_path.critical_graph import KINDS
from mlptui.trace.analysis.critical_path.critical_path import critical_path
from mlptui.trace.model import Trace

LABEL = {"launch_delay": "launch delay", "sync_wait": "sync wait"}


def _r(x: float) -> float:
    return round(x, 3) + 0.0


def critical_path_diff(a: Trace, b: Trace, step_a: int | None, step_b: int | None) -> dict[str, Any]:
    pa, pb = critical_path(a, step_a), critical_path(b, step_b)
    return {
        "a_step": pa.name, "b_step": pb.name,
        "a_us": _r(pa.length_us), "b_us": _r(pb.length_us), "delta_us": _r(pb.length_us - pa.length_us),
        "gpu_share": {"a": round(pa.gpu_share, 4), "b": round(pb.gpu_share, 4)},
        "by_kind": [{"kind": k, "a_us": _r(pa.breakdown_us[k]), "b_us": _r(pb.breakdown_us[k]),
                     "delta_us": _r(pb.breakdown_us[k] - pa.breakdown_us[k])} for k in KINDS],
    }


def _delta(x: float) -> str:
    return ("+" if x > 0 else "−" if x < 0 else "±") + duration(abs(x))


def critical_path_lines(doc: dict[str, Any]) -> list[str]:
    cp = doc.get("critical_path")
    if not cp:
        return []
    lines = ["", f"Critical path by kind (A {cp['a_step']} ⇄ B {cp['b_step']}):",
             f"  {'':<14} {'A':>11} {'B':>11} {'Δ':>11}"]
    rows = [("length", cp["a_us"], cp["b_us"], cp["delta_us"])]
    rows += [(LABEL.get(r["kind"], r["kind"]), r["a_us"], r["b_us"], r["delta_us"]) for r in cp["by_kind"]]
    lines += [f"  {name:<14} {duration(a):>11} {duration(b):>11} {_delta(d):>11}" for name, a, b, d in rows]
    share = cp["gpu_share"]
    lines.append(f"  device work's share of the path: A {share['a'] * 100:.0f}%, B {share['b'] * 100:.0f}%")
    return lines


def critical_path_markdown(doc: dict[str, Any]) -> list[str]:
    cp = doc.get("critical_path")
    if not cp:
        return []
    lines = ["", f"### Critical path by kind (A `{cp['a_step']}` ⇄ B `{cp['b_step']}`)", "",
             "| kind | A | B | Δ |", "|---|---:|---:|---:|",
             f"| length | {duration(cp['a_us'])} | {duration(cp['b_us'])} | {_delta(cp['delta_us'])} |"]
    lines += [f"| {LABEL.get(r['kind'], r['kind'])} | {duration(r['a_us'])} | {duration(r['b_us'])} | "
              f"{_delta(r['delta_us'])} |" for r in cp["by_kind"]]
    return lines


def critical_path_header(cp: dict[str, Any], width: int = 80) -> str:
    """`path A 370.52 µs → B 290.10 µs: cpu −60.1 µs, launch delay −25.0 µs, …`: the kinds by how much they
    moved, as many as `width` holds."""
    line = f"path A {duration(cp['a_us'])} → B {duration(cp['b_us'])}"
    moved = sorted((r for r in cp["by_kind"] if abs(r["delta_us"]) >= 0.0005), key=lambda r: -abs(r["delta_us"]))
    sep = ": "
    for r in moved:
        part = f"{sep}{LABEL.get(r['kind'], r['kind'])} {_delta(r['delta_us'])}"
        if len(line) + len(part) > width:
            break
        line += part
        sep = ", "
    return line
