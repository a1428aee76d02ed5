"""`?`: every key, grouped by where it works, as currently mapped (remaps included)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from mlptui import keys
from mlptui.screens.host import host

GROUPS = [
    ("Everywhere", keys.APP_KEYS),
    ("Trace screen", keys.TRACE_KEYS),
    ("Lists (steps, tree, kernels, launches)", keys.LIST_KEYS),
    ("CPU dispatch tree", keys.TREE_KEYS),
    ("Kernels & launches tables", keys.TABLE_KEYS),
    ("Timeline", keys.TIMELINE_KEYS),
    ("Profiler views (o p K M u)", keys.PROFILE_KEYS),
    ("Trace list", keys.PICKER_KEYS),
    ("Run of several ranks (ranks view; < > on a rank)", keys.RANKS_KEYS),
]

LEGEND = """[b]Reading the panes[/b]
  no GPU      in the GPU column of the CPU tree: the op launches nothing on the GPU (aten::t is metadata only)
  >  *        the cursor row; rows linked to the selection (kernels of the selected op)
  ░▒▓█  ·     timeline: busy fraction of each time slice; · is an idle GPU
  occ.th      theoretical occupancy from registers, shared memory and block size (occ.rep: the profiler's)
"""


def key_text(binding: Binding, keymap: dict[str, str]) -> str:
    if binding.id and binding.id in keymap:
        return keymap[binding.id]
    if binding.key_display:
        return binding.key_display
    return " ".join(k.replace("_", " ") for k in binding.key.split(","))


def help_text(keymap: dict[str, str]) -> Text:
    text = Text()
    text.append("mlptui keys", "bold")
    text.append('   (remap with MLPTUI_KEYS="id=key,..."; esc or ? closes)\n\n')
    for title, bindings in GROUPS:
        text.append(title + "\n", "bold")
        for b in bindings:
            text.append(f"  {key_text(b, keymap):<18} {(b.tooltip or b.description):<56} ")
            text.append(f"{b.id}\n", "dim")
        text.append("\n")
    text.append_text(Text.from_markup(LEGEND))
    return text


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,question_mark,q", "dismiss", "Close", id="help-close"),
        Binding("down,j", "scroll('down')", "Down", show=False, id="help-down"),
        Binding("up,k", "scroll('up')", "Up", show=False, id="help-up"),
    ]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body"):
            yield Static(help_text(host(self.app).user_keys), id="help-text")

    def action_scroll(self, direction: str) -> None:
        body = self.query_one("#help-body", VerticalScroll)
        body.scroll_relative(y=1 if direction == "down" else -1, animate=False)
