"""`d` on a trace: choose the other side of a diff among the traces of the same folder."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from mlptui.base.errors import MlptuiError
from mlptui.base.text import printable
from mlptui.screens.host import as_explorer
from mlptui.screens.when_composed import when_composed
from mlptui.widgets.lines import LineList
from mlptui.widgets.literal import literal
from mlptui.widgets.trace_list import TraceList, ladder_key
from mlptui.widgets.worker_errors import ReportsWorkerErrors


class PartnerScreen(ReportsWorkerErrors, ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="partner-cancel")]

    class Listed(Message):
        def __init__(self, specs: list[str], error: str | None) -> None:
            self.specs = specs
            self.error = error
            super().__init__()

    def __init__(self, folder: str, current: str) -> None:
        super().__init__()
        self.folder = folder
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="partner-box", classes="pane"):
            yield Static(Text.assemble("diff ", (printable(self.current.rsplit("/", 1)[-1]), "bold"),
                                       " (A) with… enter: choose, esc: cancel"), id="partner-title")
            yield TraceList([], id="partner-list")

    @when_composed
    def on_mount(self) -> None:
        self.query_one("#partner-box").border_title = literal(f"traces in {self.folder}")
        self.query_one(TraceList).facts.update(as_explorer(self.app).facts_cache)
        self.query_one(TraceList).focus()
        self.list_folder()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def list_folder(self) -> None:
        from mlptui.sources.dispatch import list_traces

        try:
            specs = [s for s in list_traces(self.folder) if s != self.current]
        except MlptuiError as exc:
            self.post_message(self.Listed([], str(exc)))
            return
        self.post_message(self.Listed(sorted(specs, key=ladder_key), None))

    def on_partner_screen_listed(self, message: Listed) -> None:
        if message.error or not message.specs:
            self.query_one("#partner-title", Static).update(
                literal((message.error or f"no other trace in {self.folder}") + "   esc: back"))
            return
        table = self.query_one(TraceList)
        table.specs = message.specs
        table.reset_rows(0)

    def on_line_list_chosen(self, message: LineList.Chosen) -> None:
        message.stop()
        table = self.query_one(TraceList)
        self.dismiss(table.specs[message.index])

    def action_cancel(self) -> None:
        self.dismiss(None)
