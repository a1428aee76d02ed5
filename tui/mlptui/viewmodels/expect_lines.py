"""The expectations beside a trace as findings-pane lines: every mismatch first (what was expected, what
the trace shows), then how many held. Rich text built from plain strings (a name is never read as
markup); the marks read without colour."""

from __future__ import annotations

from rich.text import Text

from mlptui.base.text import printable
from mlptui.render.check_text import shows_text
from mlptui.viewmodels.facts import TraceFacts


def expectation_lines(facts: TraceFacts, *, held: bool = True) -> list[Text]:
    """The lines, with the count of expectations that held last unless `held` is False."""
    if facts.expect_problem:
        return [Text.assemble(("expect.toml:", "bold"), " " + printable(facts.expect_problem))]
    outcomes = facts.expectations
    if not outcomes:
        return []
    lines = [Text.assemble(("✗ MISMATCH", "bold red"),
                           f" expected {printable(repr(o.expectation))}; the trace shows {printable(shows_text(o.shown))}")
             for o in outcomes if not o.ok]
    if held:
        lines.append(Text.assemble(("✓", "green"), f" {sum(o.ok for o in outcomes)} of {len(outcomes)} "
                                   "expectations of expect.toml hold"))
    return lines
