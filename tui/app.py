"""The explorer app and its one factory, `make_app`, used by the CLI and the tests alike."""

from __future__ import annotations

from pathlib import Path

from textual import work
from textual.app import App
from textual.message import Message

from mlptui.contract.errors import MlptuiError
from mlptui.keys import APP_KEYS, user_keymap
from mlptui.screens.help_screen import HelpScreen
from mlptui.screens.loading import LoadingScreen
from mlptui.screens.partner import PartnerScreen
from mlptui.screens.picker import PickerScreen
from mlptui.screens.trace_screen import TraceScreen
from mlptui.viewmodels.facts import TraceFacts


class MlptuiApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "mlptui"
    BINDINGS = APP_KEYS
    ENABLE_COMMAND_PALETTE = False

    class Listed(Message):
        def __init__(self, folder: str, specs: list[str] | None, error: str | None) -> None:
            self.folder = folder
            self.specs = specs
            self.error = error
            super().__init__()

    def __init__(self, specs: list[str]) -> None:
        super().__init__()
        self.specs = list(specs)
        self.facts_cache: dict[str, TraceFacts] = {}
        keymap = user_keymap()
        if keymap:
            self.set_keymap(keymap)

    def on_mount(self) -> None:
        if not self.specs:
            from mlptui.samples import sample_trace_paths

            paths = [str(p) for p in sample_trace_paths()]
            self.push_screen(PickerScreen(paths, "bundled sample traces (real GPU runs of the MLP ladder)"))
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
        except Exception as exc:     # the worker's boundary: shown by the loading screen, never a hang
            self.post_message(self.Listed(spec, None, f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(self.Listed(spec, specs, None))

    def on_mlptui_app_listed(self, message: Listed) -> None:
        if message.error:
            self.push_screen(LoadingScreen([message.folder]))
        elif message.specs is None:
            self.push_screen(LoadingScreen([message.folder]))
        else:
            self.push_screen(PickerScreen(message.specs, message.folder))

    # -- opening traces ------------------------------------------------------------------------
    def open_specs(self, specs: list[str]) -> None:
        """Open one trace (its screen) or two (the diff), from the cache when already loaded."""
        if all(s in self.facts_cache for s in specs):
            self._show([self.facts_cache[s] for s in specs], replace=False)
        else:
            self.push_screen(LoadingScreen(specs))

    def show_loaded(self, loading: LoadingScreen, facts: list[TraceFacts]) -> None:
        for f in facts:
            self.facts_cache.setdefault(f.trace.source, f)
        self._show(facts, replace=self.screen is loading)

    def _show(self, facts: list[TraceFacts], *, replace: bool) -> None:
        if len(facts) == 1:
            screen = TraceScreen(facts[0])
        else:
            try:
                from mlptui.screens.diff_screen import DiffScreen
            except ImportError:
                self.notify("the diff screen is not available in this build", severity="error")
                if replace:
                    self.pop_screen()
                return
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

        self.push_screen(PartnerScreen(folder, source), chosen)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())


def make_app(specs: list[str]) -> MlptuiApp:
    """The explorer for `specs`: none = the bundled samples, one folder = a list, one or two traces."""
    return MlptuiApp(specs)


__all__ = ["MlptuiApp", "make_app"]
