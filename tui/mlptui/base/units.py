"""How every surface writes a figure: the `summary` text and Markdown, the diff and ranks reports, the
panes and the views all print durations, sizes, rates and shares through these functions, so one value
reads the same wherever it appears.

The convention:
- a duration (given in µs, the trace's unit) in the largest of µs, ms, s that keeps it at 1 or more,
  two decimals, a space before the unit: `2.86 µs`, `10.85 ms`, `2.50 s`;
- a size in binary units, the ones memory tools print: `512 B`, `1.5 KiB`, `12.0 MiB`, `1.2 GiB`;
- a rate in decimal units, the ones datasheets and NCCL's tests print peaks in: `850.0 GB/s`,
  `12.3 TFLOP/s`;
- a share of a whole as a whole percent: `42%`;
- a missing value (not recorded, not known, does not apply) as `—`, one mark everywhere.
Negative durations and sizes keep a leading `-`.
"""

from __future__ import annotations

import math

MISSING = "—"

_DURATION_UNITS = (("µs", 1.0), ("ms", 1e3), ("s", 1e6))
_SIZE_UNITS = (("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40))


def duration(us: float | None) -> str:
    """A duration given in µs: `2.86 µs`, `10.85 ms`, `2.50 s`; None is MISSING."""
    if us is None:
        return MISSING
    if not math.isfinite(us):
        return f"{us} µs"
    size = abs(us)
    for unit, scale in _DURATION_UNITS:
        # the unit is picked on the rounded figure, so 999.996 µs is 1.00 ms, never 1000.00 µs
        if round(size / scale, 2) < 1000 or unit == "s":
            return f"{us / scale:.2f} {unit}"
    raise AssertionError("unreachable")


def size(nbytes: float | None) -> str:
    """A size in bytes: `512 B`, `1.5 KiB`, `12.0 MiB`; None is MISSING."""
    if nbytes is None:
        return MISSING
    if not math.isfinite(nbytes):
        return f"{nbytes} B"
    magnitude = abs(nbytes)
    if round(magnitude) < 1024:
        return f"{nbytes:.0f} B"
    for unit, scale in _SIZE_UNITS:
        if round(magnitude / scale, 1) < 1024 or unit == "TiB":
            return f"{nbytes / scale:.1f} {unit}"
    raise AssertionError("unreachable")


def bandwidth(gbps: float | None) -> str:
    """A rate in GB/s (10⁹ bytes a second): `850.0 GB/s`; None is MISSING."""
    return MISSING if gbps is None else f"{gbps:.1f} GB/s"


def throughput(tflops: float | None) -> str:
    """A rate in TFLOP/s (10¹² operations a second): `12.3 TFLOP/s`; None is MISSING."""
    return MISSING if tflops is None else f"{tflops:.1f} TFLOP/s"


def share(fraction: float | None) -> str:
    """A share of a whole, given as a fraction: `42%`; None is MISSING."""
    return MISSING if fraction is None else f"{fraction:.0%}"
