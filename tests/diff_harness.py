"""A minimal app hosting DiffScreen, for tests (and `python tests/diff_harness.py A B` in tmux)."""

from __future__ import annotations

import sys

from textual.app import App

from mlptui.screens.diff_screen import DiffScreen
from mlptui.trace.model import Trace


class DiffHarness(App[None]):
    BINDINGS = [("q", "quit", "Quit")]

    def __init__(self, a: Trace, b: Trace) -> None:
        super().__init__()
        self.a, self.b = a, b
        self.user_keys: dict[str, str] = {}     # what the help screens read from their host

    def on_mount(self) -> None:
        self.push_screen(DiffScreen(self.a, self.b))


if __name__ == "__main__":
    from mlptui.sources.dispatch import open_trace

    DiffHarness(open_trace(sys.argv[1]), open_trace(sys.argv[2])).run()
