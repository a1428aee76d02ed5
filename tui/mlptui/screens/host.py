"""What screens may ask of the explorer app, as one typed interface: screens never import the app module
(it imports them), and never reach into Textual's private state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from textual.app import App
from textual.screen import Screen

if TYPE_CHECKING:      # numpy and the analyses come with it: not before the first paint
    from mlptui.viewmodels.facts import TraceFacts


class ExplorerHost(Protocol):
    facts_cache: dict[str, TraceFacts]   # spec -> facts of every trace loaded so far
    user_keys: dict[str, str]            # binding id -> keys, the user's remaps (MLPTUI_KEYS)

    def open_specs(self, specs: list[str]) -> None:
        """Open one trace (its panes) or two (the diff)."""

    def list_or_open(self, spec: str) -> None:
        """Open a folder: the ranks of one run, or a list of its traces and trace folders."""

    def choose_diff_partner(self, facts: TraceFacts) -> None:
        """Ask for the trace to diff `facts` against."""

    def show_loaded(self, loading: Screen[Any], facts: list[TraceFacts]) -> None:
        """Replace the loading screen with the loaded traces' screen (one trace, or the diff of two)."""


def as_explorer(app: App[Any]) -> ExplorerHost:
    """The explorer behind `app` (the app class implements ExplorerHost)."""
    return cast(ExplorerHost, app)
