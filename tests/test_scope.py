"""The step scope's three readings (step index, step-list row, an op's step field) and its `[` `]` cycle."""

from __future__ import annotations

from mlptui.viewmodels.scope import Scope


def test_rows_and_steps_map_both_ways() -> None:
    assert Scope.every(3).row == 0 and Scope(2, 3).row == 3
    assert [Scope.of_row(r, 3).step for r in range(4)] == [None, 0, 1, 2]
    assert all(Scope.of_row(Scope(s, 3).row, 3) == Scope(s, 3) for s in (None, 0, 1, 2))


def test_work_outside_every_step_reads_as_every_step() -> None:
    assert Scope.of_step(-1, 3) == Scope.every(3)
    assert Scope.of_step(3, 3) == Scope.every(3) and Scope.of_step(1, 3) == Scope(1, 3)


def test_brackets_cycle_through_every_step_then_each_step() -> None:
    seen, scope = [], Scope.last(2)
    for _ in range(4):
        scope = scope.moved(+1)
        seen.append(scope.step)
    assert seen == [None, 0, 1, None]
    assert Scope.every(2).moved(-1) == Scope(1, 2)
    assert Scope.last(0) == Scope.every(0) and Scope.every(0).moved(1) == Scope.every(0)
