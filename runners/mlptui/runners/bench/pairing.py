"""The sweep's arithmetic that needs no GPU: the call orders that interleave modes fairly, and the paired
ratio a cell's verdict reads. Kept apart from sweep.py (which needs torch) so it is tested anywhere."""

from __future__ import annotations

import math

EAGER_AGAIN = "eager-again"  # a second eager module (own weights) timed as its own mode: the cell's noise


def balanced_orders(n: int) -> list[list[int]]:
    """Orders of n modes, one per round, in which every mode runs right after every other mode equally
    often (a Williams design: n rounds for even n, 2n for odd n) and in every position equally often.

    Why: in host-bound cells a call runs faster right after a call of the same code (warm instruction and
    data caches). Rotating one fixed order put each mode after the same neighbour every round: eager after
    the Hub kernel, its twin after eager, so the twin read faster than eager, and so did any mode that
    ran after the twin (benchmarks/results/fused-mlp.md, "Call order")."""
    first = [0]
    lo, hi = 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(m + r) % n for m in first] for r in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def medians_us(times: dict[str, list[float]]) -> dict[str, float]:
    """Median µs of one call per mode, from seconds per call."""
    return {m: sorted(ts)[len(ts) // 2] * 1e6 for m, ts in times.items()}


def paired_ratio(times: dict[str, list[float]], mode: str, base: str = "eager") -> tuple[float, float, float]:
    """`mode` against `base` from one cell's interleaved calls: the median over rounds of each round's
    ratio (call k of both modes ran in the same round, seconds apart, so a drift of the host's or the
    GPU's speed between rounds cancels), with a distribution-free ~95 % interval for that median (order
    statistics of the sorted ratios, n/2 ± 0.98·√n)."""
    ratios = sorted(a / b for a, b in zip(times[mode], times[base], strict=True))
    n = len(ratios)
    if not n:
        raise ValueError("no calls timed")
    half = 0.98 * math.sqrt(n)
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    mid = ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
    return mid, ratios[lo], ratios[hi]


def noise(paired: dict[str, list[float]]) -> float | None:
    """The cell's timing spread: eager timed twice as two modes, |paired ratio − 1| (None without the
    repeat)."""
    again = paired.get(EAGER_AGAIN)
    return round(abs(again[0] - 1.0), 4) if again else None
