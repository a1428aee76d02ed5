"""B against A (`mlptui diff --json`) and expectations against a trace (`mlptui check`), over loaded traces:
what `Trace.diff`/`Trace.check` and the functions `diff`/`check` of mlptui.api.runs return."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlptui.api.results import Check, CheckedOutcome
from mlptui.base.errors import MlptuiError
from mlptui.trace.model import Trace

if TYPE_CHECKING:
    from mlptui.trace.analysis.expectations.expectations import Expectation
    from mlptui.trace.reports.diff import DiffReport


def diff(ta: Trace, tb: Trace, step_a: int | None = None, step_b: int | None = None) -> DiffReport:
    """B against A, aligned on ProfilerStep#step_a of A and #step_b of B (default: each one's median step):
    the report `mlptui diff --json` writes."""
    from mlptui.trace.diff.trace_diff import diff_traces, step_by_number

    ia = None if step_a is None else step_by_number(ta, step_a, "A")
    ib = None if step_b is None else step_by_number(tb, step_b, "B")
    return diff_traces(ta, tb, ia, ib).report()


def parse_all(expectations: list[str] | str) -> list[Expectation]:
    """The expectations parsed (docs/check.md); a malformed one raises MlptuiError before any trace is read."""
    from mlptui.trace.analysis.expectations.expectations import parse

    texts = [expectations] if isinstance(expectations, str) else list(expectations)
    if not texts:
        raise MlptuiError("nothing to check: give one expectation or more (docs/check.md)")
    return [parse(t) for t in texts]


def check(trace: Trace, parsed: list[Expectation]) -> Check:
    """Each parsed expectation against the trace: whether it holds and what the trace shows."""
    from mlptui.render.check_text import shows_text
    from mlptui.trace.analysis.expectations.expectations import check as check_all

    rows = [CheckedOutcome(expectation=o.expectation, ok=o.ok, shown=o.shown, shows=shows_text(o.shown))
            for o in check_all(trace, parsed)]
    return Check(ok=all(r.ok for r in rows), rows=rows)
