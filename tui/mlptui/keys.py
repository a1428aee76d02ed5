"""Every key binding of the explorer, each with an id so users can remap it.

Remap with the environment variable MLPTUI_KEYS, e.g. `MLPTUI_KEYS="quit=ctrl+q,raw-names=x"`: ids on
the left (see the `?` help screen), keys on the right (Textual key names, or the character itself:
`help=?`). Only plain keys, ctrl combos and named keys are used, so everything arrives through tmux and ssh.

A remap is refused, with a reason, when its id is unknown, its pair is malformed, its key is no key a
terminal sends (`quit=foo`), or its key is already taken where the binding works: FOCUS_CHAINS lists
which groups of bindings are active together (the app's, a screen's, and the focused pane's), and a key
may mean one thing per chain. `search=s` is refused because `s` sorts the kernels and launches tables on
the same screen.
"""

from __future__ import annotations

import functools
import os
import re

from textual.binding import Binding

APP_KEYS = [
    Binding("q", "quit", "Quit", id="quit"),
    Binding("question_mark", "help", "Keys", id="help", key_display="?"),
]

# Movement inside any list pane (tree, tables, step list).
LIST_KEYS = [
    Binding("down,j", "cursor_down", "Down", show=False, id="down"),
    Binding("up,k", "cursor_up", "Up", show=False, id="up"),
    Binding("pagedown,ctrl+f", "page_down", "Page down", show=False, id="page-down"),
    Binding("pageup,ctrl+b", "page_up", "Page up", show=False, id="page-up"),
    Binding("home", "first", "First row", show=False, id="first"),
    Binding("end,G", "last", "Last row", show=False, id="last"),
    Binding("enter", "select", "Select", show=False, id="select"),
]

TREE_KEYS = [
    Binding("right,l", "expand", "Expand", show=False, id="expand"),
    Binding("left,h", "collapse", "Collapse / parent", show=False, id="collapse"),
    Binding("e", "expand_all", "Expand all", id="expand-all", tooltip="expand everything below the cursor"),
    Binding("f", "toggle_python", "Py frames", id="python-frames",
            tooltip="hide or show Python frames (with_stack): ops then hang under their nearest op"),
    Binding("L,shift+right", "slide_right", "Slide names left", show=False, id="names-right"),
    Binding("H,shift+left", "slide_left", "Slide names back", show=False, id="names-left"),
]

TABLE_KEYS = [
    Binding("s", "sort_next", "Sort", id="sort", tooltip="sort by the next column (S reverses)"),
    Binding("S", "sort_reverse", "Reverse sort", show=False, id="sort-reverse"),
    Binding("right,l", "scroll_right", "Scroll right", show=False, id="table-right"),
    Binding("left,h", "scroll_left", "Scroll left", show=False, id="table-left"),
]

KERNEL_KEYS = [
    Binding("a", "toggle_grouped", "Group", id="group-kernels",
            tooltip="group by kernel: one row per kernel name (count, total time) ⇄ one row per launch"),
]

TIMELINE_KEYS = [
    Binding("plus,equals_sign", "zoom_in", "Zoom in", id="zoom-in", key_display="+", tooltip="zoom the timeline in"),
    Binding("minus", "zoom_out", "Out", id="zoom-out", key_display="-", tooltip="zoom the timeline out"),
    Binding("right,l", "pan_right", "Pan right", show=False, id="pan-right"),
    Binding("left,h", "pan_left", "Pan left", show=False, id="pan-left"),
    Binding("0", "zoom_reset", "Fit step", show=False, id="zoom-reset"),
    Binding("full_stop", "event_next(1)", "Next event", id="event-next", key_display=".",
            tooltip="the event cursor: next event on its lane (the details follow)"),
    Binding("comma", "event_next(-1)", "Prev event", id="event-previous", key_display=",",
            tooltip="the event cursor: previous event on its lane"),
    Binding("down,j", "event_lane(1)", "Lane below", show=False, id="lanes-down",
            tooltip="the event cursor: the lane below, at the same time"),
    Binding("up,k", "event_lane(-1)", "Lane above", show=False, id="lanes-up",
            tooltip="the event cursor: the lane above, at the same time"),
]

TRACE_KEYS = [
    Binding("tab", "app.focus_next", "Next pane", show=False, id="next-pane"),
    Binding("shift+tab", "app.focus_previous", "Previous pane", show=False, id="previous-pane"),
    Binding("left_square_bracket", "step(-1)", "Prev step", id="prev-step", key_display="["),
    Binding("right_square_bracket", "step(1)", "Next step", id="next-step", key_display="]"),
    Binding("slash", "search", "Search", id="search", key_display="/"),
    Binding("n", "search_next(1)", "Next match", show=False, id="search-next"),
    Binding("N", "search_next(-1)", "Previous match", show=False, id="search-previous"),
    Binding("g", "jump", "Jump", id="jump", tooltip="jump op → its launch call → its kernel → the next call … → back to the op"),
    Binding("r", "toggle_raw", "Raw names", show=False, id="raw-names"),
    Binding("x", "export_csv", "CSV", show=False, id="export-csv",
            tooltip="write the focused table as CSV (to MLPTUI_EXPORT_DIR, else ./mlptui-exports/)"),
    Binding("C", "critical_path", "Path", show=False, id="path-lit",
            tooltip="the step's critical path lit on the timeline, its segments in pane 4 (enter: go to one; C: back)"),
    Binding("z", "zoom_pane", "Zoom", id="zoom-pane", tooltip="zoom the focused pane to the whole screen and back"),
    Binding("d", "diff", "Diff with…", show=False, id="diff"),
    Binding("escape", "back", "Back", show=False, id="back"),
    Binding("1", "focus_pane('steps')", "Steps pane", show=False, id="pane-steps"),
    Binding("2", "focus_pane('tree')", "CPU tree pane", show=False, id="pane-tree"),
    Binding("3", "focus_pane('kernels')", "Kernels pane", show=False, id="pane-kernels"),
    Binding("4", "focus_pane('launches')", "Launches pane", show=False, id="pane-launches"),
    Binding("5", "focus_pane('timeline')", "Timeline pane", show=False, id="pane-timeline"),
    Binding("6", "focus_pane('details')", "Details pane", show=False, id="pane-details"),
] + [
    Binding(key, f"profile_view('{view}')", title, id=f"view-{view}", tooltip=tip, show=show)
    for key, view, title, tip, show in (
        ("o", "overview", "Overview", "overview: GPU util, SM efficiency, occupancy, Tensor Cores, step breakdown", False),
        ("p", "operators", "Operators", "operators: calls, host/device self and total, Tensor-Core share", False),
        ("K", "kernels", "Kernel stats", "kernels, completed: Tensor Cores, calls, mean/min/max, blocks/SM", False),
        ("M", "memory", "Memory", "memory: curve per device, peak and its op, allocations per op", False),
        ("u", "modules", "Modules", "nn.Module tree with calls, host and device time", False),
        ("c", "critical", "Critical path", "critical path: the chain of dependent work the step waits on, "
         "by kind, what-if, and its segments", False),
    )
]

# The profiler views screen (o p K M u switch views; the list keys move).
PROFILE_KEYS = [
    Binding("escape", "back", "Back", id="profile-back"),
    Binding("a", "toggle_group", "Group", id="profile-group",
            tooltip="operators: by name ⇄ by name and input shapes; kernels: by kernel ⇄ by kernel and op"),
    Binding("s", "sort_next", "Sort", id="profile-sort", tooltip="sort by the next column (S reverses)"),
    Binding("S", "sort_reverse", "Reverse sort", show=False, id="profile-sort-reverse"),
    Binding("left_square_bracket", "step(-1)", "Prev step", id="profile-prev-step", key_display="[",
            tooltip="scope the views to the previous step (all steps come before the first)"),
    Binding("right_square_bracket", "step(1)", "Next step", id="profile-next-step", key_display="]",
            tooltip="scope the views to the next step (all steps come after the last)"),
    Binding("v", "next_device", "Device", id="profile-device",
            tooltip="memory: the curve of the next device with memory events"),
    Binding("slash", "filter", "Filter", id="profile-filter", key_display="/",
            tooltip="operators, kernels: only the rows whose name holds a text (empty: every row)"),
    Binding("r", "toggle_raw", "Raw names", show=False, id="profile-raw-names",
            tooltip="kernels: raw ⇄ decoded kernel names"),
    Binding("x", "export_csv", "CSV", id="profile-export",
            tooltip="write the table on screen as CSV (to MLPTUI_EXPORT_DIR, else ./mlptui-exports/)"),
]

# A run of several ranks: the ranks view, and `<` `>` between ranks on a rank's trace screen.
RANK_SWITCH_KEYS = [
    Binding("less_than_sign", "rank(-1)", "Prev rank", id="prev-rank", key_display="<"),
    Binding("greater_than_sign", "rank(1)", "Next rank", id="next-rank", key_display=">"),
]
RANKS_KEYS = [
    *RANK_SWITCH_KEYS,
    # `l`/→ go into the rank as they go into a node of the CPU tree; `o` means the overview everywhere
    Binding("right,l", "open_rank", "Open rank", id="open-rank", key_display="→/l",
            tooltip="every pane of the selected rank (also enter)"),
    Binding("tab", "app.focus_next", "Next pane", show=False, id="ranks-next-pane"),
    Binding("shift+tab", "app.focus_previous", "Previous pane", show=False, id="ranks-previous-pane"),
    Binding("z", "zoom_pane", "Zoom", show=False, id="ranks-zoom-pane"),
    Binding("escape", "back", "Back", show=False, id="ranks-back"),
]

PICKER_KEYS = [
    Binding("space", "findings_page", "More findings", id="findings-page",
            tooltip="the findings pane: the next page, back to the top after the last"),
    Binding("z", "findings_zoom", "Zoom findings", id="findings-zoom",
            tooltip="the findings pane takes the screen but the selected row, and back"),
    Binding("enter", "open", "Open", id="open"),
    Binding("m", "mark", "Mark for diff", id="mark"),
    Binding("d", "diff", "Diff marked", id="picker-diff"),
    Binding("escape", "back", "Back", show=False, id="picker-back"),
]

# The diff screen, and its side-by-side profiler view.
DIFF_KEYS = [
    Binding("n", "difference(1)", "Next diff", id="diff-next"),
    Binding("p", "difference(-1)", "Prev diff", id="diff-previous"),
    Binding("enter", "details", "Pair details", id="diff-details"),
    Binding("c", "cpu_side", "CPU side", id="diff-cpu",
            tooltip="jump to the CPU ops found on one side only, and back to the kernel rows"),
    Binding("x", "swap", "Swap A⇄B", id="diff-swap"),
    Binding("o", "profile", "Operators", id="diff-operators", show=False,
            tooltip="both sides' overview and the operator table of the aligned steps, side by side"),
    Binding("left_square_bracket", "step(-1)", "Prev step", id="prev-step", key_display="["),
    Binding("right_square_bracket", "step(1)", "Next step", id="next-step", key_display="]"),
    Binding("r", "toggle_raw", "Raw names", id="raw-names"),
    Binding("question_mark", "help", "Keys", id="help", key_display="?"),
    Binding("escape", "back", "Back", id="back"),
]

DIFF_PROFILE_KEYS = [
    Binding("escape", "back", "Back", id="diff-profile-back"),
    Binding("s", "sort_next", "Sort", id="diff-profile-sort", tooltip="sort by the next column (S reverses)"),
    Binding("S", "sort_reverse", "Reverse sort", show=False, id="diff-profile-sort-reverse"),
]


_VIEW_KEYS = [b for b in TRACE_KEYS if b.id and b.id.startswith("view-")]
_PROFILE_TABLE_KEYS = [b for b in TABLE_KEYS if b.id not in ("sort", "sort-reverse")]

# Which bindings are active at the same time, as focus chains: (where, groups). In each, the groups of
# the app, the screen and the focused pane; a key must mean one thing in every chain its binding is in.
FOCUS_CHAINS: list[tuple[str, list[list[Binding]]]] = [
    ("the trace screen's steps list", [APP_KEYS, TRACE_KEYS, RANK_SWITCH_KEYS, LIST_KEYS]),
    ("the CPU dispatch tree", [APP_KEYS, TRACE_KEYS, RANK_SWITCH_KEYS, LIST_KEYS, TREE_KEYS]),
    ("the kernels table", [APP_KEYS, TRACE_KEYS, RANK_SWITCH_KEYS, LIST_KEYS, TABLE_KEYS, KERNEL_KEYS]),
    ("the launches table", [APP_KEYS, TRACE_KEYS, RANK_SWITCH_KEYS, LIST_KEYS, TABLE_KEYS]),
    ("the timeline", [APP_KEYS, TRACE_KEYS, RANK_SWITCH_KEYS, TIMELINE_KEYS]),
    ("the profiler views", [APP_KEYS, _VIEW_KEYS, PROFILE_KEYS, LIST_KEYS, _PROFILE_TABLE_KEYS]),
    ("the trace list", [APP_KEYS, PICKER_KEYS, LIST_KEYS]),
    ("the ranks view", [APP_KEYS, RANKS_KEYS, LIST_KEYS]),
    ("the diff", [APP_KEYS, DIFF_KEYS, LIST_KEYS]),
    ("the side-by-side profiler views", [APP_KEYS, DIFF_PROFILE_KEYS, LIST_KEYS, _PROFILE_TABLE_KEYS]),
]
_KEY_NAME = re.compile(r"^((?:(?:ctrl|shift|alt)\+)*)([a-z0-9]+(?:_[a-z0-9]+)*|[A-Z])$")


def binding_groups() -> dict[str, list[Binding]]:
    """Every list of bindings this module defines, by name (a new group is known, and remappable, at once)."""
    return {name: value for name, value in globals().items()
            if isinstance(value, list) and value and all(isinstance(b, Binding) for b in value)}


def all_bindings() -> list[Binding]:
    return [b for group in binding_groups().values() for b in group]


def _key_name(text: str) -> str | None:
    """`text` as a Textual key name (`?` → question_mark, `ctrl+q` stays), or None when it is not one key
    a terminal can send: `foo` is well formed but no key, and a binding to it could never be pressed."""
    from mlptui.textual_private import character_key

    if len(text) == 1 and not text.isalnum():
        text = character_key(text)
    m = _KEY_NAME.match(text)
    return text if m and m.group(2) in _known_keys() else None


@functools.cache
def _known_keys() -> frozenset[str]:
    """Every key name Textual gives a key press, less its modifiers: letters and digits, the named keys
    (enter, f5, pageup, …) and the names of the printable ASCII characters (question_mark, slash, …)."""
    from textual.keys import Keys

    from mlptui.textual_private import character_key

    named = {k.value for k in Keys if k.value.isidentifier()}
    return frozenset(named | {character_key(chr(c)) for c in range(0x21, 0x7F)})


def _keys(binding: Binding, keymap: dict[str, str]) -> set[str]:
    mapped = keymap.get(binding.id or "")
    return {k.strip() for k in (mapped or binding.key).split(",")}


def _title(binding: Binding) -> str:
    return (binding.description or binding.action).lower()


def parse_user_keys(text: str) -> tuple[dict[str, str], list[str]]:
    """(the remaps to apply, one reason per remap refused) from an MLPTUI_KEYS value ("id=key,id=key")."""
    known = {b.id for b in all_bindings() if b.id}
    wanted: dict[str, str] = {}
    problems: list[str] = []
    for pair in text.split(","):
        if not pair.strip():
            continue
        binding_id, sep, key = (part.strip() for part in pair.partition("="))
        name = _key_name(key) if sep and key else None
        if not sep or not binding_id or not key:
            problems.append(f"{pair.strip()!r} is not id=key")
        elif binding_id not in known:
            problems.append(f"unknown id {binding_id!r} (? lists them)")
        elif name is None:
            problems.append(f"{binding_id}={key}: {key!r} is not a key name (e.g. x, ctrl+q, f5, question_mark)")
        else:
            wanted[binding_id] = name
    keymap = dict(wanted)
    for binding_id, key in wanted.items():       # a clash is checked against every other remap too
        clash = _clash(binding_id, key, keymap)
        if clash is not None:
            del keymap[binding_id]
            problems.append(f"{binding_id}={key} refused: {key} is already {clash}")
    return keymap, problems


def _clash(binding_id: str, key: str, keymap: dict[str, str]) -> str | None:
    for where, chain in FOCUS_CHAINS:
        bindings = [b for group in chain for b in group]
        if not any(b.id == binding_id for b in bindings):
            continue
        for other in bindings:
            if other.id != binding_id and key in _keys(other, keymap):
                return f"'{_title(other)}' ({other.id}) in {where}"
    return None


def user_keymap(env: str | None = None) -> dict[str, str]:
    """The remaps from MLPTUI_KEYS that can be applied (parse_user_keys says why others are not)."""
    text = os.environ.get("MLPTUI_KEYS", "") if env is None else env
    return parse_user_keys(text)[0]
