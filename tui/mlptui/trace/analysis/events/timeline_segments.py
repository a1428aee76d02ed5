"""Interval arithmetic on integer nanoseconds, shared by the overview and the step-time breakdown.

Every interval set of interest (kernels of device 0, runtime calls, DataLoader ops, a step's window …)
is cut at all of their boundaries into elementary segments; each segment is then wholly inside or
outside every set, so "time covered by A and not by B within window W" becomes exact integer sums over
segments. Nothing is approximated and nothing is counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def to_ns(values: list[float] | np.ndarray) -> np.ndarray:
    return np.rint(np.asarray(values, dtype=np.float64) * 1000.0).astype(np.int64)


@dataclass
class Segments:
    bounds: np.ndarray          # sorted unique boundaries, int64 ns; segment k is [bounds[k], bounds[k+1])

    @classmethod
    def of(cls, *arrays: np.ndarray) -> Segments:
        parts = [a for a in arrays if len(a)]
        if not parts:
            return cls(np.zeros(1, dtype=np.int64))
        # Sorted, then duplicates dropped: np.unique's hash path is several times slower on these. The
        # parts are each (nearly) in time order: a merge sort (stable) merges their runs in about
        # one pass (same values: the sort only orders them).
        bounds = np.sort(np.concatenate(parts), kind="stable")
        return cls(bounds[np.concatenate(([True], bounds[1:] != bounds[:-1]))])

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.bounds)

    def positions(self, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each interval's start and end fall among the bounds, for several `depth` calls over
        subsets of one set of intervals (one search instead of one per call)."""
        return np.searchsorted(self.bounds, starts), np.searchsorted(self.bounds, ends)

    def depth(self, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray | None = None,
              at: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Per segment: how many intervals cover it (or the sum of their weights). `at`: the intervals'
        `positions`, when the caller has them."""
        n = len(self.bounds)
        keep = ends > starts
        if at is None:
            s = np.searchsorted(self.bounds, starts[keep])
            e = np.searchsorted(self.bounds, ends[keep])
        else:
            s, e = at[0][keep], at[1][keep]
        if weights is None:
            d = np.bincount(s, minlength=n) - np.bincount(e, minlength=n)
        else:
            # one bincount over the starts then the ends adds each weight in the order np.add.at would
            w = np.asarray(weights, dtype=np.float64)[keep]
            d = np.bincount(np.concatenate((s, e)), weights=np.concatenate((w, -w)), minlength=n)
        return np.cumsum(d)[:-1]

    def prefix(self, per_segment: np.ndarray) -> np.ndarray:
        """Prefix sums of a per-segment quantity, for window sums in O(log n)."""
        return np.concatenate(([0], np.cumsum(per_segment)))

    def window_sums(self, prefix: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> list[float]:
        """The sum of `prefix`'s segments inside each (start, end) window, in one search."""
        i = np.searchsorted(self.bounds, starts)
        j = np.searchsorted(self.bounds, ends)
        sums: list[float] = (prefix[j] - prefix[i]).astype(np.float64).tolist()
        return sums
