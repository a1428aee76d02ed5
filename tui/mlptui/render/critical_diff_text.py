"""The critical-path block of a diff (mlptui.trace.diff.critical_diff) as text, Markdown and the app's one-line
header."""

from __future__ import annotations

from mlptui.base.units import duration
from mlptui.trace.reports.diff import CriticalPathDiff

LABEL = {"launch_delay": "launch delay", "sync_wait": "sync wait"}


def _delta(x: float) -> str:
    return ("+" if x > 0 else "−" if x < 0 else "±") + duration(abs(x))


def critical_path_lines(cp: CriticalPathDiff | None) -> list[str]:
    if cp is None:
        return []
    lines = ["", f"Critical path by kind (A {cp.a_step} ⇄ B {cp.b_step}):",
             f"  {'':<14} {'A':>11} {'B':>11} {'Δ':>11}"]
    rows = [("length", cp.a_us, cp.b_us, cp.delta_us)]
    rows += [(LABEL.get(r.kind, r.kind), r.a_us, r.b_us, r.delta_us) for r in cp.by_kind]
    lines += [f"  {name:<14} {duration(a):>11} {duration(b):>11} {_delta(d):>11}" for name, a, b, d in rows]
    lines.append(f"  device work's share of the path: A {cp.gpu_share.a * 100:.0f}%, B {cp.gpu_share.b * 100:.0f}%")
    return lines


def critical_path_markdown(cp: CriticalPathDiff | None) -> list[str]:
    if cp is None:
        return []
    lines = ["", f"### Critical path by kind (A `{cp.a_step}` ⇄ B `{cp.b_step}`)", "",
             "| kind | A | B | Δ |", "|---|---:|---:|---:|",
             f"| length | {duration(cp.a_us)} | {duration(cp.b_us)} | {_delta(cp.delta_us)} |"]
    lines += [f"| {LABEL.get(r.kind, r.kind)} | {duration(r.a_us)} | {duration(r.b_us)} | {_delta(r.delta_us)} |"
              for r in cp.by_kind]
    return lines


def critical_path_header(cp: CriticalPathDiff, width: int = 80) -> str:
    """`path A … → B …: cpu −…, launch delay −…`: both lengths, then the kinds by how much they moved, as
    many as `width` holds."""
    line = f"path A {duration(cp.a_us)} → B {duration(cp.b_us)}"
    moved = sorted((r for r in cp.by_kind if abs(r.delta_us) >= 0.0005), key=lambda r: -abs(r.delta_us))
    sep = ": "
    for r in moved:
        part = f"{sep}{LABEL.get(r.kind, r.kind)} {_delta(r.delta_us)}"
        if len(line) + len(part) > width:
            break
        line += part
        sep = ", "
    return line
