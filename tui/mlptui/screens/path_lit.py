"""`C` on the trace screen: the step's critical path lit on the timeline, its segments listed in the pane
that holds the launches (which come back with `C` again); `enter` on a segment puts the timeline's event
cursor on that event and shows it in the details pane.

The path is computed for the step in scope when it is first shown (a step's graph, linear in its events)
and kept per step; every-steps scope on a trace with steps asks for a step.
"""

from __future__ import annotations

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
    from mlptui.screens.trace_screen import TraceScreen

PATHS_KEPT = 32             # steps whose path stays computed


class PathLit:
    def __init__(self, screen: TraceScreen) -> None:
        self.screen = screen
        self.on = False
        self.paths: dict[int | None, CriticalPath] = {}
        self.shown: CriticalPath | None = None

    def toggle(self) -> None:
        self.on = not self.on
        screen = self.screen
        screen.query_one("#launches-pane").display = not self.on
        screen.query_one("#path-pane").display = self.on
        if self.on:
            self.scope_changed(screen.scope)
            screen.query_one(SegmentTable).focus()
        else:
            self.shown = None
            screen.query_one(Timeline).set_path({})
            screen.query_one("#launches-pane").query_one("LaunchTable").focus()

    def path_of(self, step: int | None) -> CriticalPath:
        path = self.paths.get(step)
        if path is None:
            if len(self.paths) >= PATHS_KEPT:
                self.paths.pop(next(iter(self.paths)))
            path = self.paths[step] = critical_path(self.screen.facts.trace, step)
        return path

    def scope_changed(self, scope: Scope) -> None:
        if not self.on:
            return
        screen = self.screen
        trace = screen.facts.trace
        table = screen.query_one(SegmentTable)
        summary = screen.query_one("#path-summary", Static)
        pane = screen.query_one("#path-pane")
        if scope.step is None and trace.steps:
            self.shown = None
            table.show([])
            screen.query_one(Timeline).set_path({})
            summary.update("every step in scope: pick a step with [ ] for its critical path", layout=False)
            pane.border_title = "4 critical path (C: launches)"
            return
        path = self.path_of(scope.step)
        self.shown = path
        table.show_path(path.segments, path.start_us)
        screen.query_one(Timeline).set_path(path_spans(trace, path))
        device = sum(path.breakdown_us[k] for k in DEVICE_WORK)
        share = device / path.length_us * 100 if path.length_us > 0 else 0.0
        summary.update(literal(f"{path.name}: {fmt.us(path.length_us)} on the path, device work {share:.0f}%, "
                               f"{len(path.columns)} segments"), layout=False)
        pane.border_title = "4 critical path (C: launches)"

    def chosen(self, index: int) -> None:
        """`enter` on row `index` of the segments: the timeline's cursor to its event, the details to it."""
        table = self.screen.query_one(SegmentTable)
        if not 0 <= index < len(table.rows):
            return
        row: Any = table.rows[index]
        target = segment_event(self.screen.facts.trace, row)
        if target is None:
            return
        kind, ident, lane_kind, key = target
        start = row.start_us + (self.shown.start_us if self.shown is not None else 0.0)
        self.screen.query_one(Timeline).point_at(lane_kind, key, ident, start + row.dur_us / 2)
        self.screen.show_event(kind, ident)
