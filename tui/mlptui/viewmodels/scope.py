"""The step scope the trace screen and the profiler views share: one step, or every step.

It is one value with three readings, kept together here so no screen re-derives them: the step's index
in `trace.steps` (None for every step, the whole trace when it has none), the row of the step list that
shows it (row 0 is "all steps", row i + 1 is step i), and an op's or kernel's `step` field (-1 for
work outside every step). `[` `]` walk the rows in a cycle: every step, then each step in turn.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Scope:
    step: int | None     # index into trace.steps; None: every step
    count: int           # how many steps the trace has

    @classmethod
    def every(cls, count: int) -> Scope:
        return cls(None, count)

    @classmethod
    def last(cls, count: int) -> Scope:
        """Where a trace opens: its last step (a warm one), or the whole trace when it has none."""
        return cls(count - 1 if count else None, count)

    @classmethod
    def of_row(cls, row: int, count: int) -> Scope:
        return cls(None if row == 0 else row - 1, count)

    @classmethod
    def of_step(cls, step: int | None, count: int) -> Scope:
        """From a step index, an op's or kernel's `step` field (-1: outside every step) or None: a step
        that is not in the trace reads as every step."""
        return cls(step if step is not None and 0 <= step < count else None, count)

    @property
    def row(self) -> int:
        return 0 if self.step is None else self.step + 1

    def moved(self, delta: int) -> Scope:
        """`delta` rows on, wrapping: after the last step comes every step, then the first."""
        if not self.count:
            return self
        return Scope.of_row((self.row + delta) % (self.count + 1), self.count)
