"""Loads the rank traces of a run in a worker thread, rank by rank with a progress bar, then shows
the ranks view. A rank that cannot be read is left out and named with its reason in the view's header;
only when no rank can be read does the screen show the failure."""

from __future__ import annotations

import time
from pathlib import Path

from textual import work
from textual.binding import Binding
from textual.message import Message
from textual.widgets import ProgressBar, Static

from mlptui.base.errors import MlptuiError
from mlptui.gc_policy import bulk_allocation
from mlptui.screens.progress import ProgressScreen
from mlptui.screens.when_composed import when_composed
from mlptui.viewmodels.facts import TraceFacts, build_facts
from mlptui.viewmodels.run_view import RunView, build_run_view
from mlptui.widgets.literal import literal


class RunLoadingScreen(ProgressScreen):
    BINDINGS = [Binding("escape", "back", "Back", id="run-loading-back")]

    class Progress(Message):
        def __init__(self, text: str, done: int, total: int) -> None:
            self.text, self.done, self.total = text, done, total
            super().__init__()

    class Loaded(Message):
        def __init__(self, run: RunView) -> None:
            self.run = run
            super().__init__()

    def __init__(self, folder: str, ranks: list[tuple[int, Path]]) -> None:
        super().__init__(f"opening the run {folder} ({len(ranks)} ranks)")
        self.folder = folder
        self.rank_paths = ranks

    @when_composed
    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load(self) -> None:
        from mlptui.trace.parse.load_many import load_many

        rank_of = {str(p): r for r, p in self.rank_paths}
        n = len(self.rank_paths)
        loaded: list[tuple[int, TraceFacts]] = []
        failed: list[str] = []
        last = [0.0]

        def progress(path: str, done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] > 0.05 or done >= total:
                last[0] = now
                frac = len(loaded) + len(failed) + (done / total if total else 1.0)
                self.post_message(self.Progress(f"rank {rank_of[path]}", int(frac * 1000), n * 1000))

        with bulk_allocation():      # the ranks and their facts live as long as the app
            for path, result in load_many([str(p) for _, p in self.rank_paths], on_progress=progress):
                if isinstance(result, MlptuiError):
                    text = str(result)
                    failed.append(text if text.startswith(path) else f"{path}: {text}")
                    continue
                loaded.append((rank_of[path], build_facts(result)))
        if not loaded:
            more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
            self.post_message(self.Failed(f"no rank of the run could be read: {failed[0]}{more}"))
            return
        loaded.sort(key=lambda p: p[0])
        failed.sort(key=lambda text: rank_of.get(text.split(": ", 1)[0], 0))
        self.post_message(self.Loaded(build_run_view(self.folder, loaded, failed)))

    def on_run_loading_screen_progress(self, message: Progress) -> None:
        self.query_one(ProgressBar).update(total=max(message.total, 1), progress=message.done)
        self.query_one("#loading-title", Static).update(
            literal(f"opening the run {self.folder}: {message.text} of {len(self.rank_paths)}"))

    def on_run_loading_screen_loaded(self, message: Loaded) -> None:
        from mlptui.screens.ranks_screen import RanksScreen

        self.app.switch_screen(RanksScreen(message.run))

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.exit()
