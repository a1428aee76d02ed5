"""Occupancy and roofline of one kernel, through tui.trace (one import point for the widgets)."""

from __future__ import annotations

from typing import Any

from tui.trace.model import Trace

try:
    from tui.trace.occupancy import kernel_occupancy as _occupancy
except ImportError:
    _occupancy = None
try:
    from tui.trace.roofline import kernel_roofline as _roofline
except ImportError:
    _roofline = None


def occupancy(trace: Trace, gid: int) -> Any:
    return _occupancy(trace, gid) if _occupancy is not None else None


def roofline(trace: Trace, gid: int) -> Any:
    return _roofline(trace, gid) if _roofline is not None else None
