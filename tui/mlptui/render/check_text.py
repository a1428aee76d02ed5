"""`mlptui check`'s words: what the trace shows for each expectation, one line each
(mlptui.trace.reports.check), and the report of one trace's outcomes."""

from __future__ import annotations

from mlptui.base.text import printable
from mlptui.trace.reports.check import (
    AttentionShown,
    CountsShown,
    CriticalPathShown,
    IntegrityShown,
    MaskShown,
    Outcome,
    Shown,
    TensorCoresShown,
)


def _counts_text(counts: list[int]) -> str:
    if len(set(counts)) == 1:
        return f"{counts[0]} in each of {len(counts)} step{'s' if len(counts) != 1 else ''}"
    return "per step: " + ", ".join(str(c) for c in counts)


def shows_text(shown: Shown) -> str:
    """What the trace shows, in one line."""
    if isinstance(shown, CountsShown):
        return f"{shown.subject} {_counts_text(shown.counts)}"
    if isinstance(shown, CriticalPathShown):
        return f"critical path {shown.subject} share per step: {', '.join(f'{x:.2f}' for x in shown.shares)}"
    if isinstance(shown, AttentionShown):
        if not shown.kernels:
            return "no attention kernel in the step"
        return "attention kernel: " + "; ".join(f"{w} ({label})" for w, label in shown.kernels.items())
    if isinstance(shown, TensorCoresShown):
        if not shown.kernels:
            return "no GEMM or attention kernel in the step"
        text = f"{shown.on} of {shown.kernels} GEMM/attention kernels on Tensor Cores"
        return text + (f"; without: {', '.join(shown.without)}" if shown.without else "")
    if isinstance(shown, IntegrityShown):
        if not shown.problems:
            return "integrity ok"
        return "integrity problems: " + "; ".join(f"{p.kind} ({p.count:,})" for p in shown.problems)
    assert isinstance(shown, MaskShown)
    if not shown.rebuilt:
        return "no mask built inside the steps"
    return f"mask rebuilt in {shown.mask_steps} of {shown.steps} steps: {' → '.join(shown.chain)}"


def outcome_lines(name: str, outcomes: list[Outcome]) -> list[str]:
    """One trace's report: how many hold, then each expectation with what the trace shows; terminal-safe."""
    width = max(len(o.expectation) for o in outcomes)
    lines = [f"{printable(name)}: {sum(o.ok for o in outcomes)} of {len(outcomes)} expectations hold"]
    for o in outcomes:
        mark = "ok      " if o.ok else "MISMATCH"
        lines.append(f"  {mark}  {printable(o.expectation):<{width}}  the trace shows: {printable(shows_text(o.shown))}")
    return lines


def first_mismatch(outcomes: list[Outcome]) -> str | None:
    """The first expectation that does not hold, in one line (and how many more), or None."""
    missed = [o for o in outcomes if not o.ok]
    if not missed:
        return None
    more = f" (and {len(missed) - 1} more)" if len(missed) > 1 else ""
    return (f"expected {printable(missed[0].expectation)!r}, the trace shows "
            f"{printable(shows_text(missed[0].shown))}{more}")
