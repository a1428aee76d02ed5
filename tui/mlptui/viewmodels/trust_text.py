"""The trust banner: one line saying that a trace cannot be read as is, and why, from its integrity
(mlptui.trace.analysis.steps.integrity, as `summary --json` writes it). Shown first by the app's trace header
and by `mlptui summary`; nothing when the trace is sound.

    trust_banner(integrity) -> str | None
"""

from __future__ import annotations

from mlptui.trace.reports.common import Problem
from mlptui.trace.reports.summary import IntegrityReport

_WORDS = {
    "truncated": "the file is cut",
    "launches_without_device_work": "launch calls without their kernels",
    "device_work_without_launch": "device work without a launch call",
    "clock": "host and device times disagree",
    "steps_incomplete": "steps whose GPU work runs past the trace's end",
}


def _phrase(problem: Problem) -> str:
    words = _WORDS.get(problem.kind, problem.kind)
    return words if problem.kind == "truncated" or not problem.count else f"{words} ({problem.count:,})"


def trust_banner(integrity: IntegrityReport | None) -> str | None:
    """`⚠ not to be trusted as is: the file is cut; launch calls without their kernels (12)`, or None."""
    if integrity is None or integrity.ok:
        return None
    problems = integrity.problems
    unknown = f"; the verdicts resting on {'it' if len(problems) == 1 else 'them'} read unknown" if any(
        p.kind in ("truncated", "launches_without_device_work", "steps_incomplete") for p in problems) else ""
    return "⚠ not to be trusted as is: " + "; ".join(_phrase(p) for p in problems) + unknown
