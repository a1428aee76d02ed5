"""The regression gate of `mlptui diff A B --fail-if-slower PCT [--on FIGURE]`: B fails when it is more than
PCT % slower than A on one figure, named in the report:

- `unprofiled`: the runs' own unprofiled median timings (`timed_us`, from their manifests);
- `step`: the median step window (step start to the later of its end and the end of its GPU work);
- `gpu-busy`: the median over the active steps of the union of the GPU work each step launched.

The default is the headline's lead figure: `unprofiled` when both runs have manifests' timings, else
`step`. Equal or faster always passes. Its Markdown lines: mlptui.render.gate_text."""

from __future__ import annotations

import dataclasses

from mlptui.base.errors import MlptuiError
from mlptui.trace.diff.figures import FIGURES, figure_pairs
from mlptui.trace.reports.diff import DiffReport, GateCheck, GatedDiffReport

GATE_FIGURES = tuple(name for name, _label, _key in FIGURES)


def parse_pct(text: str) -> float:
    """`5%`, `5` or `2.5 %` -> 5.0 / 2.5; anything else is a one-line error."""
    raw = str(text).strip().removesuffix("%").strip()
    try:
        value = float(raw)
    except ValueError:
        raise MlptuiError(f"--fail-if-slower takes a percentage such as 5% (got {text!r})") from None
    if not 0 <= value < 1e6 or value != value:
        raise MlptuiError(f"--fail-if-slower must be a percentage ≥ 0 (got {text!r})")
    return value


def gate(doc: DiffReport, pct: float, on: str | None = None) -> list[GateCheck]:
    """The check a diff gives at a PCT % limit on figure `on` (None: the default above); a figure the two
    sides do not both have is a one-line error, when asked for by name."""
    pairs = {name: (label, a, b) for name, label, a, b in figure_pairs(doc.a, doc.b)}
    if on is None:
        on = "unprofiled" if "unprofiled" in pairs else "step"
    elif on not in GATE_FIGURES:
        raise MlptuiError(f"--on takes one of {', '.join(GATE_FIGURES)} (got {on!r})")
    if on not in pairs:
        if on == "unprofiled":
            raise MlptuiError("--on unprofiled needs both runs' manifests with a timing (mlptui run writes them)")
        return []
    label, a, b = pairs[on]
    slower = (b / a - 1.0) * 100.0
    return [GateCheck(what=label, figure=on, a_us=a, b_us=b, slower_pct=slower, failed=slower > pct)]


def with_gate(doc: DiffReport, checks: list[GateCheck]) -> GatedDiffReport:
    """The diff's document with the gate's verdict after it (`--json --fail-if-slower`)."""
    return GatedDiffReport(**{f.name: getattr(doc, f.name) for f in dataclasses.fields(doc)}, gate=checks)
