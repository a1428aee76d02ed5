"""What the loading screens share: a title, a progress bar and an error line in the middle, and a
failure (from the worker, or any worker error the app's handler reports) shown in place."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Center, Middle
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ProgressBar, Static

from mlptui.base.text import printable
from mlptui.widgets.footer import KeyBar
from mlptui.widgets.literal import literal
from mlptui.widgets.worker_errors import ReportsWorkerErrors, WorkerFailed


class ProgressScreen(ReportsWorkerErrors, Screen[None]):
    class Failed(Message):
        def __init__(self, text: str) -> None:
            self.text = text
            super().__init__()

    def __init__(self, title: str) -> None:
        """`title`: plain text (names shown as written), shown while nothing is loaded yet."""
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Middle(), Center():
            yield Static(literal(self.title_text), id="loading-title")
            yield ProgressBar(total=None, show_eta=False, id="loading-bar")
            yield Static("", id="loading-error")
        yield KeyBar()

    def worker_failed(self, failed: WorkerFailed) -> None:
        self.post_message(self.Failed(failed.text))

    def on_progress_screen_failed(self, message: Failed) -> None:
        self.query_one(ProgressBar).display = False
        self.query_one("#loading-error", Static).update(
            Text.assemble((f"mlptui: {printable(message.text)}", "bold"), "\n\nesc: back   q: quit"))
