"""One path for a failed background worker: the node that ran it posts `WorkerFailed`, which bubbles to
the app; the app shows the error (a toast) and logs it, and the node may also say so in place (its
`worker_failed` hook), so no screen is left at "loading …" when a worker raised."""

from __future__ import annotations

from textual.message import Message
from textual.worker import Worker, WorkerState


def one_line(error: BaseException | None) -> str:
    """The error as one line: its message (or type), first line only."""
    if error is None:
        return "unknown error"
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


class WorkerFailed(Message):
    """A worker of some widget or screen raised; `what` names the worker, `error` is the exception."""

    def __init__(self, what: str, error: BaseException | None) -> None:
        self.what = what
        self.error = error
        super().__init__()

    @property
    def text(self) -> str:
        return f"{self.what or 'background work'} failed: {one_line(self.error)}"


class ReportsWorkerErrors:
    """Mixin for screens and widgets that start workers (`@work(..., exit_on_error=False)`)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:
            failed = WorkerFailed(event.worker.name, event.worker.error)
            self.worker_failed(failed)
            self.post_message(failed)   # type: ignore[attr-defined]  # mixed into a Textual node

    def worker_failed(self, failed: WorkerFailed) -> None:
        """Override to show the failure in place too (a status line, a row)."""
