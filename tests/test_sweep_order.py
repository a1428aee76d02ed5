"""The sweep's call orders (runners/mlptui/runners/bench/pairing.py::balanced_orders): every mode runs right after every other mode
equally often, and in every position equally often, so neither the warmth one call leaves for the next
nor a round's position favours a mode."""

from __future__ import annotations

from collections import Counter

import pytest

from mlptui.runners.bench.pairing import balanced_orders


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7])
def test_every_mode_follows_every_other_equally_often(n: int) -> None:
    rows = balanced_orders(n)
    assert len(rows) == (n if n % 2 == 0 else 2 * n)
    for row in rows:
        assert sorted(row) == list(range(n))          # each round runs every mode once
    follows = Counter((a, b) for row in rows for a, b in zip(row, row[1:], strict=False))
    if n > 1:
        assert set(follows) == {(a, b) for a in range(n) for b in range(n) if a != b}
        assert len(set(follows.values())) == 1        # and each ordered pair equally often
    positions = Counter((m, i) for row in rows for i, m in enumerate(row))
    assert len(set(positions.values())) == 1


def test_the_rotation_it_replaced_was_not_balanced() -> None:
    """The old order (one order, rotated each round) always put mode 0 after the last mode."""
    n = 5
    rotated = [list(range(n))[k:] + list(range(n))[:k] for k in range(n)]
    follows = Counter((a, b) for row in rotated for a, b in zip(row, row[1:], strict=False))
    assert follows[(n - 1, 0)] == n - 1 and follows[(1, 0)] == 0
