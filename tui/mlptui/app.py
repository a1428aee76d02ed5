"""The explorer app and its one factory, `make_app`, used by the CLI and the tests alike."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, work
from textual.app import App
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from mlptui import worker_pause
from mlptui.base.errors import MlptuiError
from mlptui.base.settings import setting_problems
from mlptui.base.text import printable
from mlptui.gc_policy import IdleCollector
from mlptui.keys import APP_KEYS, parse_user_keys
from mlptui.screens.loading import LoadingScreen
from mlptui.screens.picker import PickerScreen
from mlptui.widgets.lit_pane import light_focused_pane
from mlptui.widgets.worker_errors import WorkerFailed

if TYPE_CHECKING:      # the trace and diff screens (and numpy under them) are imported after the first paint
    from mlptui.screens.diff_screen import DiffScreen
    from mlptui.screens.trace_screen import TraceScreen
    from mlptui.viewmodels.facts import TraceFacts


GIVE_WAY_TO = (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)


class MlptuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "mlptui"
    BINDINGS = [*APP_KEYS]
    ENABLE_COMMAND_PALETTE = False
    ALLOW_IN_MAXIMIZED_VIEW = "Footer, KeyBar"      # a zoomed pane keeps the key bar below it

    class Listed(Message):
        def __init__(self, folder: str, specs: list[str] | None, error: str | None,
                     ranks: list[tuple[int, Path]] | None = None, not_a_run: str | None = None,
                     folders: list[str] | None = None) -> None:
            self.folder = folder
            self.specs = specs
            self.error = error
            self.ranks = ranks          # the folder's traces are the ranks of one run
            self.not_a_run = not_a_run  # why traces that name ranks are not one run
            self.folders = folders or []    # folders below it that hold traces (its runs)
            super().__init__()

    def __init__(self, specs: list[str]) -> None:
        super().__init__()
        self.specs = list(specs)
        self.facts_cache: dict[str, TraceFacts] = {}
        self.user_keys, self.key_problems = parse_user_keys(os.environ.get("MLPTUI_KEYS", ""))
        if self.user_keys:
            self.set_keymap(self.user_keys)
        self.idle_collector = IdleCollector()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.InputEvent):
            self.idle_collector.input_seen()
            if isinstance(event, GIVE_WAY_TO):      # not mouse moves: workers pause while a key is handled
                self.set_timer(worker_pause.QUIET_S, partial(worker_pause.quiet, worker_pause.input_seen()))
        await super().on_event(event)

    def on_unmount(self) -> None:
        self.idle_collector.stop()

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Every notification is plain text, whatever the caller asks (a widget's `notify` asks for markup
        by default): they carry op names, paths, search texts and settings, which must show as written."""
        super().notify(printable(message), title=printable(title), severity=severity, timeout=timeout,
                       markup=False)

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        light_focused_pane(self.screen)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        light_focused_pane(self.screen)

    def on_mount(self) -> None:
        self.idle_collector.start()
        self.set_interval(0.5, self.idle_collector.tick)
        if self.key_problems:       # one line, on top of whatever opens first
            self.notify("MLPTUI_KEYS: " + "; ".join(self.key_problems), severity="warning", timeout=12)
        for problem in setting_problems():
            self.notify(problem, severity="warning", timeout=12)
        if not self.specs:
            from mlptui.samples import sample_trace_folders, sample_trace_paths

            paths = [str(p) for p in sample_trace_paths()]
            self.push_screen(PickerScreen(paths, "bundled sample traces (real GPU runs of the MLP ladder)",
                                          folders=[str(p) for p in sample_trace_folders()]))
        elif len(self.specs) == 1:
            self.list_or_open(self.specs[0])
        else:
            self.push_screen(LoadingScreen(self.specs))

    @work(thread=True, exclusive=True, exit_on_error=False)
    def list_or_open(self, spec: str) -> None:
        from mlptui.sources.dispatch import is_folder, list_traces

        try:
            folder = is_folder(spec)
            specs = list_traces(spec) if folder else None
        except MlptuiError as exc:
            self.post_message(self.Listed(spec, None, str(exc)))
            return
        folders = _trace_folders(spec) if folder else []
        self.post_message(self.Listed(spec, specs, None, *_rank_files(spec, specs), folders=folders))

    def on_mlptui_app_listed(self, message: Listed) -> None:
        if message.error:
            self.push_screen(LoadingScreen([message.folder]))
        elif message.specs is None:
            self.push_screen(LoadingScreen([message.folder]))
        elif message.ranks is not None:
            from mlptui.screens.run_loading import RunLoadingScreen

            self.push_screen(RunLoadingScreen(message.folder, message.ranks))
        else:
            title = message.folder + (f"  ·  not one run: {message.not_a_run}" if message.not_a_run else "")
            self.push_screen(PickerScreen(message.specs, title, folders=message.folders))

    # -- opening traces ------------------------------------------------------------------------
    def open_specs(self, specs: list[str]) -> None:
        """Open one trace (its screen) or two (the diff), from the cache when already loaded."""
        if all(s in self.facts_cache for s in specs):
            self._show([self.facts_cache[s] for s in specs], replace=False)
        else:
            self.push_screen(LoadingScreen(specs))

    def show_loaded(self, loading: Screen[Any], facts: list[TraceFacts]) -> None:
        for f in facts:
            self.facts_cache.setdefault(f.trace.source, f)
        self._show(facts, replace=self.screen is loading)

    def _show(self, facts: list[TraceFacts], *, replace: bool) -> None:
        from mlptui.screens.diff_screen import DiffScreen
        from mlptui.screens.trace_screen import TraceScreen

        screen: TraceScreen | DiffScreen
        if len(facts) == 1:
            screen = TraceScreen(facts[0])
        else:
            screen = DiffScreen(facts[0].trace, facts[1].trace)
        if replace:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def choose_diff_partner(self, facts: TraceFacts) -> None:
        """`d` on a trace: pick another trace of its folder; the diff opens with this one as A."""
        source = facts.trace.source
        folder = source.rsplit("/", 1)[0] if "/" in source else str(Path.cwd())

        def chosen(spec: str | None) -> None:
            if not spec:
                return
            if spec in self.facts_cache:
                self._show([facts, self.facts_cache[spec]], replace=False)
            else:
                self.push_screen(LoadingScreen([spec], with_facts=facts))

        from mlptui.screens.partner import PartnerScreen

        self.push_screen(PartnerScreen(folder, source), chosen)

    def action_help(self) -> None:
        from mlptui.screens.help_screen import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    # -- failures --------------------------------------------------------------------------------
    def on_worker_failed(self, message: WorkerFailed) -> None:
        """Every failed worker of every screen ends here: shown, logged, never silent."""
        self.log.error(message.text)
        self.notify(message.text, title="mlptui", severity="error", timeout=15)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is WorkerState.ERROR:      # the app's own workers (listing a folder)
            self.on_worker_failed(WorkerFailed(event.worker.name, event.worker.error))


def _rank_files(spec: str, specs: list[str] | None) -> tuple[list[tuple[int, Path]] | None, str | None]:
    """The traces of a local folder in rank order when they are the ranks of one run, else None and why
    not (None when no trace names a rank)."""
    from mlptui.sources.dispatch import source_kind
    from mlptui.trace.parse.rank_hint import rank_files_or_why

    if not specs or source_kind(spec) != "local":
        return None, None
    return rank_files_or_why([Path(s) for s in specs])


def _trace_folders(spec: str) -> list[str]:
    """The folders below a local folder that hold traces (a folder of run folders); none elsewhere."""
    from mlptui.sources.dispatch import source_kind
    from mlptui.sources.local import list_trace_folders

    return list_trace_folders(spec) if source_kind(spec) == "local" else []


def make_app(specs: list[str]) -> MlptuiApp:
    """The explorer for `specs`: none = the bundled samples, one folder = a list, one or two traces. Refuses,
    with one line, a Textual that lacks a private name mlptui uses (mlptui.textual_private)."""
    from mlptui.textual_private import require

    require()
    return MlptuiApp(specs)


__all__ = ["MlptuiApp", "make_app"]
