"""The scopes a key is likely to show next, worked out ahead.

A scope not shown before (a step, or every step) costs its key the walk of its ops, its kernels' figures,
its details text and the drawing of its rows. Right after a scope is painted, the next one in the direction
of travel is prepared, then the one behind it, one pane at a time, each a message of its own so that a key
pressed meanwhile waits for one piece at most: its dispatch-tree rows, its kernels' labels and figures for a
page of rows, its launch rows drawn, the details text of the op its cursor will start on, parsed and
wrapped. The scope shown then takes all of it from the panes' caches; nothing shown changes.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from mlptui.viewmodels.detail_text import op_details
from mlptui.viewmodels.facts import call_stats
from mlptui.viewmodels.kernel_labels import every_kernel_labels
from mlptui.viewmodels.scope import Scope
from mlptui.widgets.details import Details
from mlptui.widgets.kernels import KernelTable
from mlptui.widgets.launches import LaunchTable
from mlptui.widgets.op_tree import OpTree

if TYPE_CHECKING:
    from textual.screen import Screen

    from mlptui.viewmodels.facts import TraceFacts


LARGEST_STEP = 20_000       # kernels, or dispatch-tree roots, of a step prepared ahead
LARGEST_WALK = 50_000       # dispatch-tree roots of every step walked ahead (one piece between keys)


class StepAhead:
    def __init__(self, screen: Screen[Any], facts: TraceFacts) -> None:
        self.screen = screen
        self.facts = facts
        self.direction = 1
        self.last: Scope | None = None
        self.generation = 0
        self.pieces: list[Callable[[], Any]] = []

    def shown(self, scope: Scope) -> None:
        """`scope` was just set: plan its neighbour's pieces, to run after the next paint."""
        last, self.last = self.last, scope
        if last is not None and last.step is not None and scope.step is not None and scope.step != last.step:
            self.direction = 1 if scope.step > last.step else -1
        self.generation += 1
        # the step in the direction of travel first, then the one behind (a key back, or a first move)
        ahead, behind = scope.moved(self.direction), scope.moved(-self.direction)
        self.pieces = self._plan(ahead) + (self._plan(behind) if behind != ahead else [])
        if self.pieces:
            self.screen.call_after_refresh(self._run_next, self.generation)

    def _plan(self, scope: Scope) -> list[Callable[[], Any]]:
        if scope == self.last:
            return []
        screen = self.screen
        facts = self.facts
        trace = facts.trace
        tree, kernels = screen.query_one(OpTree), screen.query_one(KernelTable)
        launches, details = screen.query_one(LaunchTable), screen.query_one(Details)
        gpu_ids = facts.gpu_by_step.get(scope.step, [])
        if scope.step is None:      # every step: its tree and labels are kept once shown, but not before
            start = end = None
            focus = -1
            walk = tree.roots_in(None, None) <= LARGEST_WALK
            # the labels of every kernel are made in a worker when the trace opens; until then, not here
            labels = len(gpu_ids) <= LARGEST_STEP or trace.derived(every_kernel_labels)
        else:
            step = trace.steps[scope.step]
            start, end, focus = step.ts, step.ts + step.dur, step.op
            # a huge step's walk or labels would hold the keyboard past a key's repaint: left to its key
            walk = labels = len(gpu_ids) <= LARGEST_STEP and tree.roots_in(start, end) <= LARGEST_STEP
            if not walk:
                return []
        pieces: list[Callable[[], Any]] = []
        if walk:
            pieces.append(partial(tree.prepare_scope, start, end, focus))
        if labels:
            pieces.append(partial(kernels.prepare, gpu_ids, kernels.size.height))
        if facts.launches_by_step is not None:
            rows = facts.launches_by_step.get(scope.step, [])
            pieces.append(partial(launches.prepare, rows, launches.size.height))
            pieces.append(partial(call_stats, facts, scope.step))
        if walk:
            pieces.append(partial(self._details, tree, details, start, end, focus))
        return pieces

    def _details(self, tree: OpTree, details: Details, start: float | None, end: float | None, focus: int) -> None:
        op = tree.first_op(start, end, focus)
        if op >= 0:
            details.prepare(op_details(self.facts.trace, op))

    def _run_next(self, generation: int) -> None:
        if generation != self.generation or not self.pieces:    # a newer step was shown: its own plan runs
            return
        self.pieces.pop(0)()
        if self.pieces:
            self.screen.call_later(self._run_next, generation)
