"""Text and Markdown reports of a diff, rendered from its typed report (TraceDiff.report(),
mlptui.trace.reports.diff): what they show is what `--json` has.

Every status has a one-character marker as well as a word, so the report reads without colour.
"""

from __future__ import annotations

from mlptui.base.units import MISSING, duration, share
from mlptui.render.critical_diff_text import critical_path_lines, critical_path_markdown
from mlptui.trace.diff.cpu import op_key
from mlptui.trace.diff.figures import figure_pairs
from mlptui.trace.reports.diff import (
    DiffReport,
    FamilyTotal,
    KernelDiffRow,
    LaunchTotal,
    OperatorDiffRow,
    OverviewPair,
)

MARKERS = {"same": "=", "changed": "~", "added": "+", "removed": "-", "fused": "⊕"}

# Distinct dispatch-chain pairs shown in the text report before "... and N more".
_MAX_CHAINS = 12


def fmt_delta(x: float | None) -> str:
    """A change of duration with its sign (`+1.20 ms`, `−3.40 µs`); one that rounds to zero is `±0.00 µs`,
    never `-0.00` or `+0.00`."""
    if x is None:
        return ""
    if abs(x) < 0.005:
        return "±" + duration(0.0)
    return ("+" if x > 0 else "−") + duration(abs(x))


def fmt_speedup(x: float | None) -> str:
    return MISSING if x is None else f"{x:.2f}×"


def _ratio(a: float | None, b: float | None) -> str:
    return fmt_speedup(a / b) if a and b else MISSING


def summary_rows(doc: DiffReport) -> list[tuple[str, str, str, str]]:
    """(label, A, B, A/B) lines of the per-step table; medians over each side's active steps."""
    a, b = doc.a, doc.b
    out = []
    for x, y, label in ((a.step_us, b.step_us, "step"), (a.cpu_us, b.cpu_us, "CPU time"),
                        (a.gpu_busy_us, b.gpu_busy_us, "GPU busy"), (a.gpu_idle_us, b.gpu_idle_us, "GPU idle")):
        out.append((label, duration(x), duration(y), _ratio(x, y)))
    out.append(("kernels", str(a.kernels), str(b.kernels), ""))
    out.append(("launches", str(a.launches), str(b.launches), ""))
    return out


def counts_line(doc: DiffReport) -> str:
    return ", ".join(f"{doc.counts.get(s, 0)} {s}" for s in MARKERS)


def direction(a_us: float, b_us: float) -> str:
    """"faster", "slower" or "level" (B against A; a ratio that rounds to 1.00× is level)."""
    ratio = a_us / b_us
    return "level" if abs(ratio - 1.0) < 0.005 else "faster" if ratio > 1 else "slower"


def verdict_text(label: str, a_us: float, b_us: float) -> str:
    """`step time 1.47× (B faster), 189.10 ms → 128.50 ms`: the figure's name is never left out."""
    word = direction(a_us, b_us)
    said = "level" if word == "level" else f"B {word}"
    return f"{label} {fmt_speedup(a_us / b_us)} ({said}), {duration(a_us)} → {duration(b_us)}"


def headline(doc: DiffReport) -> str:
    """One sentence that leads with the step time — the runs' unprofiled timings first when both
    manifests have them, then the median step window — with GPU busy beside it, each with its own
    direction; when the figures point different ways it says so, naming both."""
    pairs = figure_pairs(doc.a, doc.b)
    if not pairs:
        return "B vs A: unknown (no step timings and no GPU work)"
    parts = [verdict_text(label, x, y) + (" (the runs' manifests)" if name == "unprofiled" else "")
             for name, label, x, y in pairs]
    ways: dict[str, list[str]] = {}
    for _name, label, x, y in pairs:
        ways.setdefault(direction(x, y), []).append(label)
    text = "B vs A: " + "; ".join(parts) + " — medians over each side's steps"
    if "faster" in ways and "slower" in ways:
        text += (f"; the figures disagree: B is faster in {' and '.join(ways['faster'])} but slower in "
                 f"{' and '.join(ways['slower'])}")
    return text


def pair_table(items: list[FamilyTotal] | list[LaunchTotal]) -> list[tuple[str, str, str, str]]:
    """(name, "n × time" on A, on B, B−A) for by_family / launch_calls entries."""
    out = []
    for p in items:
        delta = p.b_us - p.a_us if p.a_count and p.b_count else None
        name = p.family if isinstance(p, FamilyTotal) else p.name
        out.append((name, f"{p.a_count} × {duration(p.a_us)}" if p.a_count else MISSING,
                    f"{p.b_count} × {duration(p.b_us)}" if p.b_count else MISSING, fmt_delta(delta)))
    return out


def empty_notes(doc: DiffReport) -> list[str]:
    """Say so when a side ran nothing on the GPU in its aligned step (a CPU-only trace, a bad step)."""
    notes = []
    for tag, side, names in (("A", doc.a, [row.a for row in doc.kernels]), ("B", doc.b, [row.b for row in doc.kernels])):
        if not any(names):
            notes.append(f"note: {tag} has no GPU work in {side.step}: every row is "
                         f"{'added' if tag == 'A' else 'removed'}")
    return notes


def _names(row: KernelDiffRow, side: str, raw: bool) -> list[str]:
    names, short = (row.a, row.a_short) if side == "a" else (row.b, row.b_short)
    return list(names if raw else short or names)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _chain_groups(doc: DiffReport) -> list[tuple[list[int], list[str], list[str]]]:
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[int]] = {}
    for n, row in enumerate(doc.kernels, 1):
        key = (tuple(row.a_chain), tuple(row.b_chain))
        if key != ((), ()):
            groups.setdefault(key, []).append(n)
    return [(rows, list(ca), list(cb)) for (ca, cb), rows in groups.items()]


def _row_numbers(rows: list[int]) -> str:
    if len(rows) > 6:
        return ",".join(map(str, rows[:5])) + f",… ({len(rows)} rows)"
    return ",".join(map(str, rows))


def render_text(doc: DiffReport, *, raw: bool = False, width: int = 100, only_diff: bool = False) -> str:
    a, b = doc.a, doc.b
    lines = [
        f"A  {a.label}  {a.device or 'unknown GPU'}  {a.source}",
        f"B  {b.label}  {b.device or 'unknown GPU'}  {b.source}",
        f"aligned steps: A {a.step} ⇄ B {b.step}   (medians over {a.steps} and "
        f"{b.steps} active steps below)",
        "",
        f"{'':<12} {'A':>11} {'B':>11} {'A/B':>8}",
    ]
    lines += [f"{label:<12} {va:>11} {vb:>11} {ratio:>8}" for label, va, vb, ratio in summary_rows(doc)]
    lines += [headline(doc), "", f"GPU work, row by row: {counts_line(doc)}"]
    name_w = max(16, (width - 43) // 2)
    lines.append(f"{'#':>4} {'':1} {'A':<{name_w}} {'time':>10}  {'B':<{name_w}} {'time':>10} {'Δ':>10}")
    for n, row in enumerate(doc.kernels, 1):
        if only_diff and row.status == "same":
            continue
        na, nb = _names(row, "a", raw), _names(row, "b", raw)
        depth = max(len(na), len(nb))
        for k in range(depth):
            left = _cut(na[k], name_w) if k < len(na) else ""
            right = _cut(nb[k], name_w) if k < len(nb) else ""
            if k == 0:
                lines.append(f"{n:>4} {MARKERS[row.status]} {left:<{name_w}} {duration(row.a_us) if na else '':>10}"
                             f"  {right:<{name_w}} {duration(row.b_us) if nb else '':>10} {fmt_delta(row.delta_us):>10}")
            else:
                lines.append(f"{'':>4} {'│'} {left:<{name_w}} {'':>10}  {right:<{name_w}}")
    lines += empty_notes(doc)
    if doc.biggest:
        lines += ["", "Largest changes in GPU time: " + ", ".join(
            f"row {n} ({MARKERS[doc.kernels[n - 1].status]} {fmt_delta(_row_delta(doc.kernels[n - 1]))})"
            for n in doc.biggest)]
    tables: tuple[tuple[str, list[FamilyTotal] | list[LaunchTotal]], ...] = (
        ("GPU time by kernel family", doc.by_family), ("Launch calls (runtime/driver)", doc.launch_calls))
    for title, items in tables:
        if items:
            lines += ["", f"{title}, aligned steps:", f"  {'':<34} {'A':>16} {'B':>16} {'Δ':>10}"]
            lines += [f"  {_cut(n, 34):<34} {va:>16} {vb:>16} {d:>10}" for n, va, vb, d in pair_table(items)]
    cpu = doc.cpu
    lines += ["", "CPU ops in one step only:",
              "  removed (A only): " + (", ".join(cpu.removed_ops) or "none"),
              "  added   (B only): " + (", ".join(cpu.added_ops) or "none")]
    if cpu.count_changes:
        lines.append("  count changed: " + ", ".join(f"{c.name} {c.a}→{c.b}" for c in cpu.count_changes))
    groups = _chain_groups(doc)
    lines += ["", f"Dispatch chains, A ⇒ B ({len(groups)} distinct):"]
    for rows, ca, cb in groups[:_MAX_CHAINS]:
        lines.append(f"  rows {_row_numbers(rows)}")
        lines.append("    A: " + (" → ".join(map(op_key, ca)) or "(nothing on A)"))
        lines.append("    B: " + (" → ".join(map(op_key, cb)) or "(nothing on B)"))
    if len(groups) > _MAX_CHAINS:
        lines.append(f"  … and {len(groups) - _MAX_CHAINS} more (see --json)")
    if doc.overview is not None:
        lines += ["", "Overview (all steps of each side):"] + ["  " + x for x in overview_lines(doc.overview)]
        lines += ["", "Operators of the aligned steps, side by side:"] + operator_lines(doc.operators or [])
    lines += critical_path_lines(doc.critical_path)
    lines.append("")
    lines.append("markers: " + "  ".join(f"{m} {s}" for s, m in MARKERS.items()))
    return "\n".join(lines) + "\n"


def _row_delta(row: KernelDiffRow) -> float:
    return (row.b_us or 0.0) - (row.a_us or 0.0)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(doc: DiffReport, *, raw: bool = False, only_diff: bool = False) -> str:
    a, b = doc.a, doc.b
    lines = [
        "## Trace diff",
        "",
        f"- **A**: `{a.source}` — {a.label}, {a.device or 'unknown GPU'}, step `{a.step}`",
        f"- **B**: `{b.source}` — {b.label}, {b.device or 'unknown GPU'}, step `{b.step}`",
        f"- **{headline(doc)}**",
        "",
        "| per step (median) | A | B | A/B |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {label} | {va} | {vb} | {ratio} |" for label, va, vb, ratio in summary_rows(doc)]
    lines += ["", f"### GPU work ({counts_line(doc)})", "",
              "| # | | A | A time | B | B time | Δ |", "|---:|:-:|---|---:|---|---:|---:|"]
    for n, row in enumerate(doc.kernels, 1):
        if only_diff and row.status == "same":
            continue
        na = "<br>".join(f"`{_md(x)}`" for x in _names(row, "a", raw))
        nb = "<br>".join(f"`{_md(x)}`" for x in _names(row, "b", raw))
        a_us = "" if row.a_us is None else duration(row.a_us)
        b_us = "" if row.b_us is None else duration(row.b_us)
        d_us = fmt_delta(row.delta_us)
        lines.append(f"| {n} | {MARKERS[row.status]} {row.status} | {na} | {a_us} | {nb} | {b_us} | {d_us} |")
    lines += [""] + empty_notes(doc) if empty_notes(doc) else []
    tables: tuple[tuple[str, str, list[FamilyTotal] | list[LaunchTotal]], ...] = (
        ("GPU time by kernel family", "family", doc.by_family), ("Launch calls", "name", doc.launch_calls))
    for title, key, items in tables:
        if items:
            lines += ["", f"### {title} (aligned steps)", "", f"| {key} | A | B | Δ |", "|---|---:|---:|---:|"]
            lines += [f"| `{_md(n)}` | {va} | {vb} | {d} |" for n, va, vb, d in pair_table(items)]
    cpu = doc.cpu
    lines += ["", "### CPU ops in one step only", "",
              "- removed (A only): " + (", ".join(f"`{_md(x)}`" for x in cpu.removed_ops) or "none"),
              "- added (B only): " + (", ".join(f"`{_md(x)}`" for x in cpu.added_ops) or "none")]
    if cpu.count_changes:
        lines.append("- count changed: " + ", ".join(f"`{_md(c.name)}` {c.a}→{c.b}" for c in cpu.count_changes))
    groups = _chain_groups(doc)
    lines += ["", "### Dispatch chains (A ⇒ B)", ""]
    for rows, ca, cb in groups[:_MAX_CHAINS]:
        chain_a = " → ".join(map(op_key, ca)) or MISSING
        chain_b = " → ".join(map(op_key, cb)) or MISSING
        lines.append(f"- rows {_row_numbers(rows)}: `{_md(chain_a)}` ⇒ `{_md(chain_b)}`")
    if len(groups) > _MAX_CHAINS:
        lines.append(f"- … and {len(groups) - _MAX_CHAINS} more")
    if doc.overview is not None:
        lines += ["", "### Overview (all steps of each side)", ""] + [f"- {_md(x)}" for x in overview_lines(doc.overview)]
        lines += ["", "### Operators of the aligned steps", "", "```"] + operator_lines(doc.operators or []) + ["```"]
    lines += critical_path_markdown(doc.critical_path)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the profiler views of a diff

MARK = {"same": "=", "changed": "~", "added": "+", "removed": "-"}


def overview_lines(pair: OverviewPair) -> list[str]:
    """One line per side: scope, GPU util, SM efficiency, occupancy, Tensor-Core share, breakdown."""
    lines: list[str] = []
    for tag, o in (("A", pair.a), ("B", pair.b)):
        dur = o.duration_us or 1.0
        top = sorted(o.breakdown_us.items(), key=lambda kv: -kv[1])[:3]
        lines.append(f"{tag}: {o.scope} {duration(o.duration_us)}, GPU util {share(o.gpu_util)}, "
                     f"SM eff {share(o.sm_efficiency)}, occ {share(o.achieved_occupancy)}/"
                     f"{share(o.theoretical_occupancy)}, TC {share(o.tensor_core_share)}; "
                     + ", ".join(f"{k} {share(v / dur)}" for k, v in top if v > 0))
    return lines


def operator_lines(rows: list[OperatorDiffRow], top: int = 20, width: int = 40) -> list[str]:
    head = f"  {'':1} {'operator':<{width}} {'calls A':>7} {'calls B':>7} {'host A':>10} {'host B':>10} " \
           f"{'device A':>10} {'device B':>10}"
    lines = [head]
    for r in rows[:top]:
        a, b = r.a, r.b
        name = r.name if len(r.name) <= width else r.name[:width - 1] + "…"
        lines.append(f"  {MARK[r.status]} {name:<{width}} {MISSING if a is None else a.calls:>7} "
                     f"{MISSING if b is None else b.calls:>7} "
                     f"{duration(None if a is None else a.host_total_us):>10} "
                     f"{duration(None if b is None else b.host_total_us):>10} "
                     f"{duration(None if a is None else a.device_total_us):>10} "
                     f"{duration(None if b is None else b.device_total_us):>10}")
    if len(rows) > top:
        lines.append(f"  … {len(rows) - top} more operators (see --json)")
    return lines

