"""The regression gate of `mlptui diff A B --fail-if-slower PCT`: B fails when it is more than PCT % slower
than A on GPU busy time (the median over the active steps of the union of the GPU work each step
launched, the diff's `gpu_busy_us`), or on the runs' unprofiled median timings (`timed_us`, from their
manifests) when both sides have them. Equal or faster always passes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mlptui.base.errors import MlptuiError


@dataclass(frozen=True)
class GateCheck:
    what: str            # "GPU busy" or "unprofiled"
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


def gate(doc: dict[str, Any], pct: float) -> list[GateCheck]:
    """The checks a diff document (`TraceDiff.to_json()`) gives at a PCT % limit."""
    checks: list[GateCheck] = []
    for what, key in (("GPU busy", "gpu_busy_us"), ("unprofiled", "timed_us")):
        a, b = doc["a"].get(key), doc["b"].get(key)
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or a <= 0:
            continue
        slower = (b / a - 1.0) * 100.0
        checks.append(GateCheck(what, float(a), float(b), slower, slower > pct))
    return checks


def gate_lines(checks: list[GateCheck], pct: float) -> list[str]:
    """Markdown lines for the report: one per check, with its verdict."""
    lines = ["", f"#### Gate: fail if B is more than {pct:g}% slower than A", ""]
    if not checks:
        lines.append("- no GPU busy time or unprofiled timing on both sides: nothing to compare")
    for c in checks:
        verdict = "**FAIL**" if c.failed else "pass"
        how = f"{abs(c.slower_pct):.1f}% {'slower' if c.slower_pct > 0 else 'faster'}"
        lines.append(f"- {c.what}: A {c.a_us:.1f} µs, B {c.b_us:.1f} µs: B is {how}: {verdict}")
    return lines
