"""The regression gate's verdict as Markdown lines, after the diff's report (mlptui.trace.diff.gate)."""

from __future__ import annotations

from mlptui.base.units import duration
from mlptui.trace.reports.diff import GateCheck


def gate_lines(checks: list[GateCheck], pct: float) -> list[str]:
    """The figure judged, with its verdict; times as every report writes them (mlptui.base.units)."""
    lines = ["", f"#### Gate: fail if B is more than {pct:g}% slower than A", ""]
    if not checks:
        lines.append("- the figure is not on both sides (no step and no GPU work): nothing to compare")
    for c in checks:
        verdict = "**FAIL**" if c.failed else "pass"
        how = f"{abs(c.slower_pct):.1f}% {'slower' if c.slower_pct > 0 else 'faster'}"
        lines.append(f"- judged on {c.what} (`--on {c.figure}`): A {duration(c.a_us)}, B {duration(c.b_us)}: "
                     f"B is {how}: {verdict}")
    return lines
