"""`o` on the diff screen: both sides' overview figures and the operator table of the aligned steps
side by side (status marker, calls, host and device total time per op name). `s`/`S` sort, esc back."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from mlptui.base.text import printable
from mlptui.keys import DIFF_PROFILE_KEYS
from mlptui.render.diff_text import overview_lines
from mlptui.screens.when_composed import when_composed
from mlptui.trace.diff.trace_diff import TraceDiff
from mlptui.trace.reports.diff import ProfileDiff
from mlptui.widgets.footer import KeyBar
from mlptui.widgets.profile_tables import OperatorDiffTable


class DiffProfileScreen(Screen):
    BINDINGS = [*DIFF_PROFILE_KEYS]

    class Ready(Message):
        def __init__(self, doc: ProfileDiff | None) -> None:
            self.doc = doc
            super().__init__()

    def __init__(self, diff: TraceDiff) -> None:
        super().__init__()
        self.diff = diff

    def compose(self) -> ComposeResult:
        yield Static("computing both sides' overview and operators…", id="diff-profile-header", markup=False)
        yield OperatorDiffTable(id="diff-operators")
        yield KeyBar()

    @when_composed
    def on_mount(self) -> None:
        self.query_one(OperatorDiffTable).focus()
        self.compute()

    @work(thread=True, exclusive=True, exit_on_error=False, group="diff-profile")
    def compute(self) -> None:
        self.post_message(self.Ready(self.diff.profile()))

    def on_diff_profile_screen_ready(self, message: Ready) -> None:
        doc = message.doc
        if doc is None:
            return
        lines = overview_lines(doc.overview)
        lines.append(f"operators of the aligned steps: A {self.diff.a.step} ⇄ B {self.diff.b.step}  "
                     "(= same  ~ calls changed  + B only  - A only)")
        self.query_one("#diff-profile-header", Static).update("\n".join(printable(line) for line in lines))
        self.query_one(OperatorDiffTable).show(doc.operators)

    def action_sort_next(self) -> None:
        self.notify(f"sorted by {self.query_one(OperatorDiffTable).sort_next() or 'status'}", timeout=1.5)

    def action_sort_reverse(self) -> None:
        self.query_one(OperatorDiffTable).sort_next(reverse=True)

    def action_back(self) -> None:
        self.app.pop_screen()
