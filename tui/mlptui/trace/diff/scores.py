"""The score of pairing an item of A with an item of B, as the aligner's dynamic program reads it: one row
of scores at a time (`row`), or one pair (`at`). Items are class codes shared by both sides.

    Scores(same_as, weight, role_a, role_b, role_table)

Score of (p, q) = weight[p] when same_as[p] == same_as[q] (an exact match), else
role_table[role_a[p], role_b[q]] (a same-role pair; 0 without a role table). Memory is linear in the
classes plus the role table, which the caller keeps small: a full class-by-class matrix would grow with the
square of the distinct kernel names (30,000 names: 3.35 GiB). Small problems still get that matrix
(`dense`), as each row is then one lookup.
"""

from __future__ import annotations

import numpy as np

# A class-by-class matrix up to this many cells (int32: 16 MB) is built for speed; above it rows are computed.
DENSE_MAX_CELLS = 4_000_000


class Scores:
    def __init__(self, same_as: np.ndarray, weight: np.ndarray, role_a: np.ndarray | None = None,
                 role_b: np.ndarray | None = None, role_table: np.ndarray | None = None) -> None:
        self.same_as = same_as.astype(np.int64)
        self.weight = weight.astype(np.int32)
        if role_table is None or role_table.size == 0:
            role_a = role_b = role_table = None
        self.role_a, self.role_b, self.role_table = role_a, role_b, role_table
        n = len(same_as)
        self.dense = self._dense() if n * n <= DENSE_MAX_CELLS else None

    def _dense(self) -> np.ndarray:
        n = len(self.same_as)
        table = np.zeros((n, n), np.int32)
        if self.role_table is not None and self.role_a is not None and self.role_b is not None:
            ps, qs = np.flatnonzero(self.role_a >= 0), np.flatnonzero(self.role_b >= 0)
            table[np.ix_(ps, qs)] = self.role_table[np.ix_(self.role_a[ps], self.role_b[qs])]
        every = np.arange(n)
        table[every, every] = self.weight          # a class matches itself; most are alone in their group
        order = np.argsort(self.same_as, kind="stable")
        cuts = np.flatnonzero(np.diff(self.same_as[order])) + 1
        sizes = np.diff(np.concatenate(([0], cuts, [n])))
        for group in np.split(order, cuts) if (sizes > 1).any() else ():
            if len(group) > 1:
                table[np.ix_(group, group)] = self.weight[group][:, None]
        return table

    def any_between(self, ca: np.ndarray, cb: np.ndarray) -> bool:
        """Whether some item of `ca` may score with some item of `cb` (False: nothing to align)."""
        # sorted and searched, not np.intersect1d: that imports numpy.ma on its first call
        sa = np.sort(self.same_as[ca])
        sb = self.same_as[cb]
        at = np.minimum(np.searchsorted(sa, sb), len(sa) - 1)
        if (sa[at] == sb).any():
            return True
        if self.role_table is None or self.role_a is None or self.role_b is None:
            return False
        in_a = np.zeros(self.role_table.shape[0], bool)
        in_b = np.zeros(self.role_table.shape[1], bool)
        ra, rb = self.role_a[ca], self.role_b[cb]
        in_a[ra[ra >= 0]] = True
        in_b[rb[rb >= 0]] = True
        return bool(self.role_table[in_a][:, in_b].any())

    def rows_for(self, cb: np.ndarray) -> RowScorer:
        """Scores against the fixed B codes `cb`, one A code at a time."""
        return RowScorer(self, cb)

    def at(self, p: int, q: int) -> int:
        if self.dense is not None:
            return int(self.dense[p, q])
        if self.same_as[p] == self.same_as[q]:
            return int(self.weight[p])
        if self.role_table is None or self.role_a is None or self.role_b is None:
            return 0
        u, v = self.role_a[p], self.role_b[q]
        return int(self.role_table[u, v]) if u >= 0 and v >= 0 else 0


class RowScorer:
    """Rows of scores against one slice of B codes; what B contributes is looked up once."""

    def __init__(self, scores: Scores, cb: np.ndarray) -> None:
        self.s = scores
        self.cb = cb
        self.same_b = scores.same_as[cb]
        self.role_b = None
        if scores.role_table is not None and scores.role_b is not None:
            self.role_b = scores.role_b[cb]

    def row(self, p: int) -> np.ndarray:
        s = self.s
        if s.dense is not None:
            dense_row: np.ndarray = s.dense[p, self.cb]
            return dense_row
        if self.role_b is not None and s.role_table is not None and s.role_a is not None and s.role_a[p] >= 0:
            roles = np.where(self.role_b >= 0, s.role_table[s.role_a[p], np.maximum(self.role_b, 0)], 0)
        else:
            roles = np.zeros(len(self.cb), np.int32)
        return np.where(self.same_b == s.same_as[p], s.weight[p], roles).astype(np.int32)
