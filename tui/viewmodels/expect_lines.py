"""The expectations beside a trace as findings-pane lines: every mismatch first (what was expected, what
the trace shows), then how many held. Rich markup, names escaped; the marks read without colour."""

from __future__ import annotations

from mlptui.base.text import markup_escape as escape
from mlptui.viewmodels.facts import TraceFacts


def expectation_lines(facts: TraceFacts) -> list[str]:
    if facts.expect_problem:
        return [f"[b]expect.toml:[/b] {escape(facts.expect_problem)}"]
    outcomes = facts.expectations
    if not outcomes:
        return []
    lines = [f"[b red]✗ MISMATCH[/] expected {escape(repr(o.expectation.text))}; the trace shows {escape(o.shows)}"
             for o in outcomes if not o.ok]
    held = sum(o.ok for o in outcomes)
    lines.append(f"[green]✓[/] {held} of {len(outcomes)} expectations of expect.toml hold")
    return lines
