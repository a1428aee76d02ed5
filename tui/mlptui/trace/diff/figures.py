"""The figures a diff's headline and its regression gate judge, B against A: the runs' unprofiled timings
(their manifests), the step time (median step window), GPU busy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

# (name for --on, label, attribute of each side)
FIGURES = (("unprofiled", "unprofiled", "timed_us"), ("step", "step time", "step_us"),
           ("gpu-busy", "GPU busy", "gpu_busy_us"))


class HasFigures(Protocol):
    @property
    def timed_us(self) -> float | None: ...
    @property
    def step_us(self) -> float | None: ...
    @property
    def gpu_busy_us(self) -> float | None: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SideFigures:
    """One side's three figures, where they come from elsewhere than a diff report (the aligned step)."""

    timed_us: float | None
    step_us: float | None
    gpu_busy_us: float | None


def figure_pairs(a: HasFigures, b: HasFigures) -> list[tuple[str, str, float, float]]:
    """(name, label, A µs, B µs) of each figure both sides have, in the headline's order."""
    out = []
    for name, label, key in FIGURES:
        x, y = getattr(a, key), getattr(b, key)
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x > 0 and y > 0:
            out.append((name, label, float(x), float(y)))
    return out
