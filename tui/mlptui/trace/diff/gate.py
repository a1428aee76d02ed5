"""The regression gate of `mlptui diff A B --fail-if-slower PCT [--on FIGURE]`: B fails when it is more than
PCT % slower than A on one figure, named in the report:

- `unprofiled`: the runs' own unprofiled median timings (`timed_us`, from their manifests);
- `step`: the median step window (step start to the later of its end and the end of its GPU work);
- `gpu-busy`: the median over the active steps of the union of the GPU work each step launched.

The default is the headline's lead figure: `unprofiled` when both runs have manifests' timings, else
`step`. Equal or faster always passes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlptui.base.errors import MlptuiError
from mlptui.base.units import duration
from mlptui.trace.diff.render import FIGURES, figure_pairs

GATE_FIGURES = tuple(name for name, _label, _key in FIGURES)


@dataclass(frozen=True)
class GateCheck:
    what: str            # the figure's label: "unprofiled", "step time" or "GPU busy"
    figure: str          # its name for --on: "unprofiled", "step" or "gpu-busy"
    a_us: float
    b_us: float
    slower_pct: float    # how much slower B is than A, in % (negative: faster)
    failed: bool


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


def gate(doc: dict[str, Any], pct: float, on: str | None = None) -> list[GateCheck]:
    """The check a diff document (`TraceDiff.to_json()`) gives at a PCT % limit on figure `on` (None: the
    default above); a figure the two sides do not both have is a one-line error, when asked for by name."""
    pairs = {name: (label, a, b) for name, label, a, b in figure_pairs(doc["a"], doc["b"])}
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
    return [GateCheck(label, on, a, b, slower, slower > pct)]


def gate_lines(checks: list[GateCheck], pct: float) -> list[str]:
    """Markdown lines for the report: the figure judged, with its verdict; times as every report writes
    them (mlptui.base.units)."""
    lines = ["", f"#### Gate: fail if B is more than {pct:g}% slower than A", ""]
    if not checks:
        lines.append("- the figure is not on both sides (no step and no GPU work): nothing to compare")
    for c in checks:
        verdict = "**FAIL**" if c.failed else "pass"
        how = f"{abs(c.slower_pct):.1f}% {'slower' if c.slower_pct > 0 else 'faster'}"
        lines.append(f"- judged on {c.what} (`--on {c.figure}`): A {duration(c.a_us)}, B {duration(c.b_us)}: "
                     f"B is {how}: {verdict}")
    return lines

