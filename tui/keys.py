"""Every key binding of the explorer, each with an id so users can remap it.

Remap with the environment variable MLPTUI_KEYS, e.g. `MLPTUI_KEYS="quit=ctrl+q,search=s"`: ids on
the left (see the `?` help screen), Textual key names on the right. Only plain keys, ctrl combos and
named keys are used, so everything arrives through tmux and ssh.
"""

from __future__ import annotations

import os

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
    Binding("o", "open_rank", "Open rank", id="open-rank", tooltip="every pane of the selected rank (also enter)"),
    Binding("tab", "app.focus_next", "Next pane", show=False, id="ranks-next-pane"),
    Binding("shift+tab", "app.focus_previous", "Previous pane", show=False, id="ranks-previous-pane"),
    Binding("z", "zoom_pane", "Zoom", show=False, id="ranks-zoom-pane"),
    Binding("escape", "back", "Back", show=False, id="ranks-back"),
]

PICKER_KEYS = [
    Binding("enter", "open", "Open", id="open"),
    Binding("m", "mark", "Mark for diff", id="mark"),
    Binding("d", "diff", "Diff marked", id="picker-diff"),
    Binding("escape", "back", "Back", show=False, id="picker-back"),
]


def user_keymap(env: str | None = None) -> dict[str, str]:
    """The remaps from MLPTUI_KEYS ("id=key,id=key"); malformed pairs are ignored."""
    text = os.environ.get("MLPTUI_KEYS", "") if env is None else env
    keymap: dict[str, str] = {}
    for pair in text.split(","):
        binding_id, sep, key = pair.partition("=")
        if sep and binding_id.strip() and key.strip():
            keymap[binding_id.strip()] = key.strip()
    return keymap
