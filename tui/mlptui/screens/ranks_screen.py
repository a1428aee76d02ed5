"""The ranks view of a multi-rank run: step time per rank per step with each step's straggler (the rank
that arrived last at its collectives, and the wait it caused), compute / communication / overlap /
waiting per rank, and the collectives with their bus bandwidth from the last arrival beside the link's
peak and the wait. `enter` (or `l` / →) opens the selected rank with every pane; `<` `>` choose it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static

from mlptui.base.text import printable
from mlptui.base.units import bandwidth
from mlptui.keys import RANKS_KEYS
from mlptui.screens.when_composed import when_composed
from mlptui.viewmodels.run_view import RunView
from mlptui.widgets.footer import KeyBar
from mlptui.widgets.lines import LineList
from mlptui.widgets.literal import literal
from mlptui.widgets.text_table import TextTable


class RanksPane(Vertical):
    ALLOW_MAXIMIZE = True


class RanksScreen(Screen[None]):
    BINDINGS = [*RANKS_KEYS]

    def __init__(self, run: RunView) -> None:
        super().__init__()
        self.run = run
        self.position = 0

    def compose(self) -> ComposeResult:
        header = Text(printable(self.run.title), "bold")
        if self.run.failed:
            header.append("\n" + printable(self.run.failures), "red")
        yield Static(header, id="ranks-header")
        with RanksPane(id="rank-steps-pane", classes="pane"):
            yield TextTable(id="rank-steps")
        with RanksPane(id="rank-list-pane", classes="pane"):
            yield TextTable(id="rank-list")
        with RanksPane(id="collectives-pane", classes="pane"):
            yield TextTable(id="collectives")
        yield KeyBar()

    @when_composed
    def on_mount(self) -> None:
        headers, rows = self.run.step_table()
        self.query_one("#rank-steps", TextTable).show(headers, rows, set(range(1, len(headers) - 1)))
        headers, rows = self.run.rank_table()
        self.query_one("#rank-list", TextTable).show(headers, rows, {1, 2, 3, 4, 5, 6})
        headers, rows = self.run.collective_table()
        self.query_one("#collectives", TextTable).show(headers, rows, set(range(3, 12)),
                                                      drop={9: 1, 6: 2, 4: 3})
        self.query_one("#rank-steps-pane").border_title = f"profiled step time per rank · {self.run.arrival}"
        self.query_one("#rank-list-pane").border_title = (
            "ranks · overlap: share of comm time with compute running · enter: open the rank")
        peak = f"{self.run.link.name} {bandwidth(self.run.link.peak_gbps)}" if self.run.link else "link unknown"
        self.query_one("#collectives-pane").border_title = literal(
            f"collectives · bus bandwidth over the transfer (from the last arrival) vs {peak}")
        self.query_one("#rank-list", TextTable).focus()

    def _select(self, position: int) -> None:
        self.position = position % len(self.run.ranks)
        table = self.query_one("#rank-list", TextTable)
        if table.cursor != self.position:
            table.move_cursor(self.position)

    def on_line_list_cursor_moved(self, message: LineList.CursorMoved) -> None:
        if message.pane.id == "rank-list":
            self.position = message.index

    def on_line_list_chosen(self, message: LineList.Chosen) -> None:
        if message.pane.id == "rank-list":
            self.position = message.index
            self.action_open_rank()

    def action_rank(self, delta: int) -> None:
        self._select(self.position + delta)

    def action_open_rank(self) -> None:
        from mlptui.screens.rank_trace_screen import RankTraceScreen

        self.app.push_screen(RankTraceScreen(self.run, self.position))

    def action_zoom_pane(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif self.focused is not None:
            pane = next((a for a in self.focused.ancestors_with_self if isinstance(a, RanksPane)), self.focused)
            self.maximize(pane, container=False)

    def action_back(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif len(self.app.screen_stack) > 2:
            self.app.pop_screen()
