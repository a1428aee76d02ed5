"""`C` on the trace screen: the step's critical path lit on the timeline, its segments listed in the pane
that holds the launches (which come back with `C` again); `enter` on a segment puts the timeline's event
cursor on that event and shows it in the details pane.

The path is computed for the step in scope when it is first shown (a step's graph, linear in its events)
and kept per step; every-steps scope on a trace with steps asks for a step; a big trace without steps has
its whole path worked out in a worker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.widgets import Static

from mlptui.trace.analysis.critical_path.critical_path import DEVICE_WORK, CriticalPath, critical_path
from mlptui.viewmodels import fmt
from mlptui.viewmodels.path_marks import path_spans, segment_event
from mlptui.viewmodels.scope import Scope
from mlptui.widgets.literal import literal
from mlptui.widgets.profile_tables import SegmentTable
from mlptui.widgets.timeline import Timeline

if TYPE_CHECKING:
    from textual.screen import Screen

    from mlptui.viewmodels.facts import TraceFacts

PATHS_KEPT = 32             # steps whose path stays computed
AHEAD_OF_KEY = 50_000       # events above which a whole trace's path is worked out off the key's thread


class PathLit:
    """`screen` holds the panes; `scope()` is the step in scope; `show_event(kind, id)` shows an event."""

    def __init__(self, screen: Screen[Any], facts: TraceFacts, scope: Callable[[], Scope],
                 show_event: Callable[[str, int], None]) -> None:
        self.screen = screen
        self.facts = facts
        self.scope = scope
        self.show_event = show_event
        self.on = False
        self.paths: dict[int | None, CriticalPath] = {}
        self.shown: CriticalPath | None = None

    def toggle(self) -> None:
        self.on = not self.on
        screen = self.screen
        screen.query_one("#launches-pane").display = not self.on
        screen.query_one("#path-pane").display = self.on
        if self.on:
            self.scope_changed(self.scope())
            screen.query_one(SegmentTable).focus()
        else:
            self.shown = None
            screen.query_one(Timeline).set_path({})
            screen.query_one("#launches-pane").query_one("LaunchTable").focus()

    def scope_changed(self, scope: Scope) -> None:
        if not self.on:
            return
        screen = self.screen
        trace = self.facts.trace
        if scope.step is None and trace.steps:
            self._show(None, "every step in scope: pick a step with [ ] for its critical path")
            return
        path = self.paths.get(scope.step)
        if path is not None:
            self._show(path)
        elif scope.step is None and trace.columns.n_ops + trace.columns.n_gpu > AHEAD_OF_KEY:
            self._show(None, "working out the critical path of the whole trace…")
            screen.run_worker(lambda: self._compute(scope.step), thread=True, exclusive=True,
                              group="critical-path", exit_on_error=False)
        else:
            self._show(self._keep(scope.step, critical_path(trace, scope.step)))

    def _compute(self, step: int | None) -> None:
        """In a worker: a big trace's whole path, shown when done if its scope is still on screen."""
        path = critical_path(self.facts.trace, step)
        self.screen.app.call_from_thread(self._computed, step, path)

    def _computed(self, step: int | None, path: CriticalPath) -> None:
        self._keep(step, path)
        if self.on and self.scope().step == step:
            self._show(path)

    def _keep(self, step: int | None, path: CriticalPath) -> CriticalPath:
        if len(self.paths) >= PATHS_KEPT:
            self.paths.pop(next(iter(self.paths)))
        self.paths[step] = path
        return path

    def _show(self, path: CriticalPath | None, note: str = "") -> None:
        screen = self.screen
        table = screen.query_one(SegmentTable)
        summary = screen.query_one("#path-summary", Static)
        screen.query_one("#path-pane").border_title = "4 critical path (C: launches)"
        self.shown = path
        if path is None:
            table.show([])
            screen.query_one(Timeline).set_path({})
            summary.update(note, layout=False)
            return
        table.show_path(path.segments, path.start_us)
        screen.query_one(Timeline).set_path(path_spans(self.facts.trace, path))
        device = sum(path.breakdown_us[k] for k in DEVICE_WORK)
        share = device / path.length_us * 100 if path.length_us > 0 else 0.0
        summary.update(literal(f"{path.name}: {fmt.us(path.length_us)} on the path, device work {share:.0f}%, "
                               f"{len(path.columns)} segments"), layout=False)

    def chosen(self, index: int) -> None:
        """`enter` on row `index` of the segments: the timeline's cursor to its event, the details to it."""
        table = self.screen.query_one(SegmentTable)
        if not 0 <= index < len(table.rows):
            return
        row: Any = table.rows[index]
        target = segment_event(self.facts.trace, row)
        if target is None:
            return
        kind, ident, lane_kind, key = target
        start = row.start_us + (self.shown.start_us if self.shown is not None else 0.0)
        self.screen.query_one(Timeline).point_at(lane_kind, key, ident, start + row.dur_us / 2)
        self.show_event(kind, ident)
