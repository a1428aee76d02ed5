"""Short, fixed-width number formats shared by the panes. Values often come straight from a trace's
args, which may hold anything: what is not a number is shown as it is (cut short), never raised on."""

from __future__ import annotations


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _as_is(value: object) -> str:
    text = str(value)
    return text if len(text) <= 12 else text[:11] + "…"


def us(value: float | None) -> str:
    """A duration given in µs, in the unit that keeps it short: 2.69µs, 1.23ms, 4.56s."""
    if value is None:
        return "-"
    if not _number(value):
        return _as_is(value)
    if value < 1000:
        return f"{value:.2f}µs" if value < 100 else f"{value:.1f}µs"
    if value < 1_000_000:
        return f"{value / 1000:.2f}ms"
    return f"{value / 1_000_000:.2f}s"


def count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}" if _number(value) else _as_is(value)


def size_bytes(value: float | None) -> str:
    if value is None:
        return "-"
    if not _number(value):
        return _as_is(value)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}GiB"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%" if _number(value) else _as_is(value)


def dims(value: object) -> str:
    """`Input Dims` as the article writes them: [64, 32] x [32, 64]."""
    if not isinstance(value, list):
        return ""
    parts = [str(list(d)) if isinstance(d, list) else str(d) for d in value if d not in ([], "", None)]
    return " x ".join(parts)
