"""Short, fixed-width number formats shared by the panes."""

from __future__ import annotations


def us(value: float | None) -> str:
    """A duration given in µs, in the unit that keeps it short: 2.69µs, 1.23ms, 4.56s."""
    if value is None:
        return "-"
    if value < 1000:
        return f"{value:.2f}µs" if value < 100 else f"{value:.1f}µs"
    if value < 1_000_000:
        return f"{value / 1000:.2f}ms"
    return f"{value / 1_000_000:.2f}s"


def count(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def size_bytes(value: float | None) -> str:
    if value is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{value:.1f}GiB"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def dims(value: object) -> str:
    """`Input Dims` as the article writes them: [64, 32] x [32, 64]."""
    if not isinstance(value, list):
        return ""
    parts = [str(list(d)) if isinstance(d, list) else str(d) for d in value if d not in ([], "", None)]
    return " x ".join(parts)
