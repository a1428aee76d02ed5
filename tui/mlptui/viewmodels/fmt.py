"""The panes' number formats: `mlptui.base.units` (the one convention every surface writes in) for
numbers. Values often come straight from a trace's args, which may hold anything: what is not a number
is shown as it is (cut short), never raised on."""

from __future__ import annotations

from mlptui.base import units


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_is(value: object) -> str:
    text = str(value)
    return text if len(text) <= 12 else text[:11] + "…"


def us(value: float | None) -> str:
    """A duration given in µs: 2.69 µs, 1.23 ms, 4.56 s."""
    return units.duration(value) if value is None or _number(value) else _as_is(value)


def count(value: int | None) -> str:
    return units.MISSING if value is None else f"{value:,}" if _number(value) else _as_is(value)


def size_bytes(value: float | None) -> str:
    return units.size(value) if value is None or _number(value) else _as_is(value)


def pct(value: float | None) -> str:
    return units.share(value) if value is None or _number(value) else _as_is(value)


def dims(value: object) -> str:
    """`Input Dims` as the article writes them: [64, 32] x [32, 64]."""
    if not isinstance(value, list):
        return ""
    parts = [str(list(d)) if isinstance(d, list) else str(d) for d in value if d not in ([], "", None)]
    return " x ".join(parts)
