"""Text and Markdown reports of a diff, rendered from its JSON document (TraceDiff.to_json()), so a
saved `--json` file renders the same as a live diff.

Every status has a one-character marker as well as a word, so the report reads without colour.
"""

from __future__ import annotations

from typing import Any

from mlptui.base.units import MISSING, duration
from mlptui.trace.diff.cpu import op_key

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


def summary_rows(doc: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(label, A, B, A/B) lines of the per-step table; medians over each side's active steps."""
    a, b = doc["a"], doc["b"]
    out = []
    for key, label in (("step_us", "step"), ("cpu_us", "CPU time"), ("gpu_busy_us", "GPU busy"),
                       ("gpu_idle_us", "GPU idle")):
        out.append((label, duration(a.get(key)), duration(b.get(key)), _ratio(a.get(key), b.get(key))))
    for key in ("kernels", "launches"):
        out.append((key, str(a.get(key, MISSING)), str(b.get(key, MISSING)), ""))
    return out


def counts_line(doc: dict[str, Any]) -> str:
    c = doc.get("counts") or {}
    return ", ".join(f"{c.get(s, 0)} {s}" for s in MARKERS)


# The figures a headline (and the gate) can judge: (name, label, JSON key of each side).
FIGURES = (("unprofiled", "unprofiled", "timed_us"), ("step", "step time", "step_us"),
           ("gpu-busy", "GPU busy", "gpu_busy_us"))


def figure_pairs(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, float, float]]:
    """(name, label, A µs, B µs) of each figure both sides have, in the headline's order: the runs'
    unprofiled timings (their manifests), the step time (median step window), GPU busy."""
    out = []
    for name, label, key in FIGURES:
        x, y = a.get(key), b.get(key)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x > 0 and y > 0:
            out.append((name, label, float(x), float(y)))
    return out


def direction(a_us: float, b_us: float) -> str:
    """"faster", "slower" or "level" (B against A; a ratio that rounds to 1.00× is level)."""
    ratio = a_us / b_us
    return "level" if abs(ratio - 1.0) < 0.005 else "faster" if ratio > 1 else "slower"


def verdict_text(label: str, a_us: float, b_us: float) -> str:
    """`step time 1.47× (B faster), 189.10 ms → 128.50 ms`: the figure's name is never left out."""
    word = direction(a_us, b_us)
    said = "level" if word == "level" else f"B {word}"
    return f"{label} {fmt_speedup(a_us / b_us)} ({said}), {duration(a_us)} → {duration(b_us)}"


def headline(doc: dict[str, Any]) -> str:
    """One sentence that leads with the step time — the runs' unprofiled timings first when both
    manifests have them, then the median step window — with GPU busy beside it, each with its own
    direction; when the figures point different ways it says so, naming both."""
    pairs = figure_pairs(doc["a"], doc["b"])
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


def pair_table(items: list[dict[str, Any]], key: str) -> list[tuple[str, str, str, str]]:
    """(name, "n × time" on A, on B, B−A) for by_family / launch_calls entries."""
    out = []
    for p in items:
        delta = p["b_us"] - p["a_us"] if p["a_count"] and p["b_count"] else None
        out.append((p[key], f"{p['a_count']} × {duration(p['a_us'])}" if p["a_count"] else MISSING,
                    f"{p['b_count']} × {duration(p['b_us'])}" if p["b_count"] else MISSING, fmt_delta(delta)))
    return out


def empty_notes(doc: dict[str, Any]) -> list[str]:
    """Say so when a side ran nothing on the GPU in its aligned step (a CPU-only trace, a bad step)."""
    notes = []
    for side in ("a", "b"):
        if not any(row[side] for row in doc["kernels"]):
            notes.append(f"note: {side.upper()} has no GPU work in {doc[side]['step']}: every row is "
                         f"{'added' if side == 'a' else 'removed'}")
    return notes


def _names(row: dict[str, Any], side: str, raw: bool) -> list[str]:
    names = row[side] if raw else row.get(f"{side}_short") or row[side]
    return list(names)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _chain_groups(doc: dict[str, Any]) -> list[tuple[list[int], list[str], list[str]]]:
    groups: dict[tuple[tuple[str, ...], tuple[str, ...]], list[int]] = {}
    for n, row in enumerate(doc["kernels"], 1):
        key = (tuple(row.get("a_chain") or ()), tuple(row.get("b_chain") or ()))
        if key != ((), ()):
            groups.setdefault(key, []).append(n)
    return [(rows, list(ca), list(cb)) for (ca, cb), rows in groups.items()]


def _row_numbers(rows: list[int]) -> str:
    if len(rows) > 6:
        return ",".join(map(str, rows[:5])) + f",… ({len(rows)} rows)"
    return ",".join(map(str, rows))


def render_text(doc: dict[str, Any], *, raw: bool = False, width: int = 100, only_diff: bool = False) -> str:
    a, b = doc["a"], doc["b"]
    lines = [
        f"A  {a.get('label', '')}  {a.get('device') or 'unknown GPU'}  {a['source']}",
        f"B  {b.get('label', '')}  {b.get('device') or 'unknown GPU'}  {b['source']}",
        f"aligned steps: A {a['step']} ⇄ B {b['step']}   (medians over {a.get('steps', '?')} and "
        f"{b.get('steps', '?')} active steps below)",
        "",
        f"{'':<12} {'A':>11} {'B':>11} {'A/B':>8}",
    ]
    lines += [f"{label:<12} {va:>11} {vb:>11} {ratio:>8}" for label, va, vb, ratio in summary_rows(doc)]
    lines += [headline(doc), "", f"GPU work, row by row: {counts_line(doc)}"]
    name_w = max(16, (width - 43) // 2)
    lines.append(f"{'#':>4} {'':1} {'A':<{name_w}} {'time':>10}  {'B':<{name_w}} {'time':>10} {'Δ':>10}")
    for n, row in enumerate(doc["kernels"], 1):
        if only_diff and row["status"] == "same":
            continue
        na, nb = _names(row, "a", raw), _names(row, "b", raw)
        depth = max(len(na), len(nb))
        for k in range(depth):
            left = _cut(na[k], name_w) if k < len(na) else ""
            right = _cut(nb[k], name_w) if k < len(nb) else ""
            if k == 0:
                lines.append(f"{n:>4} {MARKERS[row['status']]} {left:<{name_w}} {duration(row['a_us']) if na else '':>10}"
                             f"  {right:<{name_w}} {duration(row['b_us']) if nb else '':>10} {fmt_delta(row['delta_us']):>10}")
            else:
                lines.append(f"{'':>4} {'│'} {left:<{name_w}} {'':>10}  {right:<{name_w}}")
    lines += empty_notes(doc)
    if doc.get("biggest"):
        lines += ["", "Largest changes in GPU time: " + ", ".join(
            f"row {n} ({MARKERS[doc['kernels'][n - 1]['status']]} {fmt_delta(_row_delta(doc['kernels'][n - 1]))})"
            for n in doc["biggest"])]
    for title, key, items in (("GPU time by kernel family", "family", doc.get("by_family") or []),
                              ("Launch calls (runtime/driver)", "name", doc.get("launch_calls") or [])):
        if items:
            lines += ["", f"{title}, aligned steps:", f"  {'':<34} {'A':>16} {'B':>16} {'Δ':>10}"]
            lines += [f"  {_cut(n, 34):<34} {va:>16} {vb:>16} {d:>10}" for n, va, vb, d in pair_table(items, key)]
    cpu = doc["cpu"]
    lines += ["", "CPU ops in one step only:",
              "  removed (A only): " + (", ".join(cpu["removed_ops"]) or "none"),
              "  added   (B only): " + (", ".join(cpu["added_ops"]) or "none")]
    if cpu.get("count_changes"):
        lines.append("  count changed: " + ", ".join(f"{c['name']} {c['a']}→{c['b']}" for c in cpu["count_changes"]))
    groups = _chain_groups(doc)
    lines += ["", f"Dispatch chains, A ⇒ B ({len(groups)} distinct):"]
    for rows, ca, cb in groups[:_MAX_CHAINS]:
        lines.append(f"  rows {_row_numbers(rows)}")
        lines.append("    A: " + (" → ".join(map(op_key, ca)) or "(nothing on A)"))
        lines.append("    B: " + (" → ".join(map(op_key, cb)) or "(nothing on B)"))
    if len(groups) > _MAX_CHAINS:
        lines.append(f"  … and {len(groups) - _MAX_CHAINS} more (see --json)")
    if doc.get("overview"):
        from mlptui.trace.diff.profile_diff import operator_lines, overview_lines

        lines += ["", "Overview (all steps of each side):"] + ["  " + x for x in overview_lines(doc)]
        lines += ["", "Operators of the aligned steps, side by side:"] + operator_lines(doc)
    from mlptui.trace.diff.critical_diff import critical_path_lines

    lines += critical_path_lines(doc)
    lines.append("")
    lines.append("markers: " + "  ".join(f"{m} {s}" for s, m in MARKERS.items()))
    return "\n".join(lines) + "\n"


def _row_delta(row: dict[str, Any]) -> float:
    return (row["b_us"] or 0.0) - (row["a_us"] or 0.0)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render_markdown(doc: dict[str, Any], *, raw: bool = False, only_diff: bool = False) -> str:
    a, b = doc["a"], doc["b"]
    lines = [
        "## Trace diff",
        "",
        f"- **A**: `{a['source']}` — {a.get('label', '')}, {a.get('device') or 'unknown GPU'}, step `{a['step']}`",
        f"- **B**: `{b['source']}` — {b.get('label', '')}, {b.get('device') or 'unknown GPU'}, step `{b['step']}`",
        f"- **{headline(doc)}**",
        "",
        "| per step (median) | A | B | A/B |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {label} | {va} | {vb} | {ratio} |" for label, va, vb, ratio in summary_rows(doc)]
    lines += ["", f"### GPU work ({counts_line(doc)})", "",
              "| # | | A | A time | B | B time | Δ |", "|---:|:-:|---|---:|---|---:|---:|"]
    for n, row in enumerate(doc["kernels"], 1):
        if only_diff and row["status"] == "same":
            continue
        na = "<br>".join(f"`{_md(x)}`" for x in _names(row, "a", raw))
        nb = "<br>".join(f"`{_md(x)}`" for x in _names(row, "b", raw))
        a_us = "" if row["a_us"] is None else duration(row["a_us"])
        b_us = "" if row["b_us"] is None else duration(row["b_us"])
        d_us = fmt_delta(row["delta_us"])
        lines.append(f"| {n} | {MARKERS[row['status']]} {row['status']} | {na} | {a_us} | {nb} | {b_us} | {d_us} |")
    lines += [""] + empty_notes(doc) if empty_notes(doc) else []
    for title, key, items in (("GPU time by kernel family", "family", doc.get("by_family") or []),
                              ("Launch calls", "name", doc.get("launch_calls") or [])):
        if items:
            lines += ["", f"### {title} (aligned steps)", "", f"| {key} | A | B | Δ |", "|---|---:|---:|---:|"]
            lines += [f"| `{_md(n)}` | {va} | {vb} | {d} |" for n, va, vb, d in pair_table(items, key)]
    cpu = doc["cpu"]
    lines += ["", "### CPU ops in one step only", "",
              "- removed (A only): " + (", ".join(f"`{_md(x)}`" for x in cpu["removed_ops"]) or "none"),
              "- added (B only): " + (", ".join(f"`{_md(x)}`" for x in cpu["added_ops"]) or "none")]
    if cpu.get("count_changes"):
        lines.append("- count changed: " + ", ".join(f"`{_md(c['name'])}` {c['a']}→{c['b']}" for c in cpu["count_changes"]))
    groups = _chain_groups(doc)
    lines += ["", "### Dispatch chains (A ⇒ B)", ""]
    for rows, ca, cb in groups[:_MAX_CHAINS]:
        chain_a = " → ".join(map(op_key, ca)) or MISSING
        chain_b = " → ".join(map(op_key, cb)) or MISSING
        lines.append(f"- rows {_row_numbers(rows)}: `{_md(chain_a)}` ⇒ `{_md(chain_b)}`")
    if len(groups) > _MAX_CHAINS:
        lines.append(f"- … and {len(groups) - _MAX_CHAINS} more")
    if doc.get("overview"):
        from mlptui.trace.diff.profile_diff import operator_lines, overview_lines

        lines += ["", "### Overview (all steps of each side)", ""] + [f"- {_md(x)}" for x in overview_lines(doc)]
        lines += ["", "### Operators of the aligned steps", "", "```"] + operator_lines(doc) + ["```"]
    from mlptui.trace.diff.critical_diff import critical_path_markdown

    lines += critical_path_markdown(doc)
    return "\n".join(lines) + "\n"
