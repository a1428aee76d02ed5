"""Opens one or two traces in a worker thread with a progress bar; a bad file shows its message."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.widgets import ProgressBar, Static

from mlptui.base.errors import MlptuiError
from mlptui.gc_policy import bulk_allocation
from mlptui.screens.host import as_explorer
from mlptui.screens.progress import ProgressScreen
from mlptui.screens.when_composed import when_composed
from mlptui.widgets.literal import literal

if TYPE_CHECKING:      # numpy and the analyses come with it: not before the first paint
    from mlptui.viewmodels.facts import TraceFacts


class LoadingScreen(ProgressScreen):
    BINDINGS = [Binding("escape", "back", "Back", id="loading-back")]

    class Progress(Message):
        def __init__(self, done: int, total: int) -> None:
            self.done = done
            self.total = total
            super().__init__()

    class Loaded(Message):
        def __init__(self, facts: list[TraceFacts]) -> None:
            self.facts = facts
            super().__init__()

    def __init__(self, specs: list[str], *, with_facts: TraceFacts | None = None) -> None:
        super().__init__(f"opening {', '.join(specs)}")
        self.specs = specs
        self.with_facts = with_facts      # the trace already open on the other side of a diff

    @when_composed
    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load(self) -> None:
        from mlptui.sources.dispatch import open_trace

        last = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] > 0.05 or done >= total:
                last[0] = now
                self.post_message(self.Progress(done, total))

        facts: list[TraceFacts] = []
        try:
            with bulk_allocation():     # the traces and their facts live as long as the app
                for spec in self.specs:
                    from mlptui.viewmodels.facts import build_facts  # numpy: after the first paint

                    facts.append(build_facts(open_trace(spec, progress)))
        except MlptuiError as exc:
            self.post_message(self.Failed(str(exc)))
            return
        except (OSError, ValueError) as exc:
            self.post_message(self.Failed(f"cannot read {', '.join(self.specs)}: {exc}"))
            return
        self.post_message(self.Loaded(facts))

    def on_loading_screen_progress(self, message: Progress) -> None:
        bar = self.query_one(ProgressBar)
        bar.update(total=max(message.total, 1), progress=message.done)
        if message.done >= message.total:
            self.query_one("#loading-title", Static).update(
                literal(f"indexing {', '.join(self.specs)}: op tree, launches, steps…"))

    def on_loading_screen_loaded(self, message: Loaded) -> None:
        facts = message.facts
        if self.with_facts is not None:
            facts = [self.with_facts, *facts]
        as_explorer(self.app).show_loaded(self, facts)

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()
        else:
            self.app.exit()
