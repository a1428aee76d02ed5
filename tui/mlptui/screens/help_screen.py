"""`?`: every key, grouped by where it works, as currently mapped (remaps included)."""

from __future__ import annotations

import textwrap

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from mlptui import keys
from mlptui.screens.host import as_explorer

GROUPS = [
    ("Everywhere", keys.APP_KEYS),
    ("Trace screen", keys.TRACE_KEYS),
    ("Lists (steps, tree, kernels, launches)", keys.LIST_KEYS),
    ("CPU dispatch tree", keys.TREE_KEYS),
    ("Kernels & launches tables", keys.TABLE_KEYS),
    ("Kernels table", keys.KERNEL_KEYS),
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


_KEY_W, _DESC_W = 18, 56
_ID_W = max(len(b.id or "") for _, group in GROUPS for b in group)
WIDE = 2 + _KEY_W + 1 + _DESC_W + 1 + _ID_W      # one row per key from this many columns on


def binding_lines(text: Text, b: Binding, keymap: dict[str, str], width: int | None) -> None:
    """One key: `key  description  id` on one row when `width` holds it, else `key  id` with the
    description on the rows below it, wrapped to the width (an id never ends up on a row of its own)."""
    desc = b.tooltip or b.description
    key = key_text(b, keymap)
    if width is None or width >= WIDE:
        text.append(f"  {key:<{_KEY_W}} {desc:<{_DESC_W}} ")
        text.append(f"{b.id}\n", "dim")
        return
    room = width - 2 - _KEY_W - 1 - 1 - len(b.id or "")
    if len(desc) <= room:
        text.append(f"  {key:<{_KEY_W}} {desc:<{room}} ")
        text.append(f"{b.id}\n", "dim")
        return
    text.append(f"  {key:<{_KEY_W}} ")
    text.append(f"{b.id}\n", "dim")
    for line in textwrap.wrap(desc, max(20, width - 6)):
        text.append(f"      {line}\n")


def help_text(keymap: dict[str, str], width: int | None = None) -> Text:
    """Every group's keys; `width`: the columns the text may use (None: as wide as it needs)."""
    text = Text()
    text.append("mlptui keys", "bold")
    text.append('   (remap with MLPTUI_KEYS="id=key,..."; esc or ? closes)\n\n')
    for title, bindings in GROUPS:
        text.append(title + "\n", "bold")
        for b in bindings:
            binding_lines(text, b, keymap, width)
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
            yield Static(self.text(self.width()), id="help-text")

    def text(self, width: int | None) -> Text:
        return help_text(as_explorer(self.app).user_keys, width)

    def width(self) -> int:
        """Columns inside the box: at most its 110, less its border, padding and scrollbar."""
        return min(110, self.app.size.width) - 6

    def on_resize(self) -> None:
        self.query_one("#help-text", Static).update(self.text(self.width()))

    def action_scroll(self, direction: str) -> None:
        body = self.query_one("#help-body", VerticalScroll)
        body.scroll_relative(y=1 if direction == "down" else -1, animate=False)
