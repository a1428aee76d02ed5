"""One rank of a run with every pane of a trace; `<` `>` switch to the previous / next rank in place,
`esc` returns to the ranks view."""

from __future__ import annotations

from mlptui.keys import RANK_SWITCH_KEYS
from mlptui.screens.trace_screen import TraceScreen
from mlptui.screens.when_composed import when_composed
from mlptui.viewmodels.run_view import RunView
from mlptui.widgets.literal import literal


class RankTraceScreen(TraceScreen):
    BINDINGS = [*RANK_SWITCH_KEYS]

    def __init__(self, run: RunView, position: int) -> None:
        super().__init__(run.ranks[position][1])
        self.run = run
        self.position = position
        self.header_label = f"{run.rank_label(position)} · "     # first on the header: which rank this is

    @when_composed
    def on_mount(self) -> None:
        super().on_mount()
        self.sub_title = self.run.rank_label(self.position)
        self.query_one("#steps-pane").border_subtitle = literal(f"{self.run.rank_label(self.position)} · < > switch rank")

    def action_rank(self, delta: int) -> None:
        if len(self.run.ranks) > 1:
            self.app.switch_screen(RankTraceScreen(self.run, (self.position + delta) % len(self.run.ranks)))
