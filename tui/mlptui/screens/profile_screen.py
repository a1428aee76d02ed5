"""The profiler views of one trace: overview, operators, kernels (completed), memory and modules.

`o` `p` `K` `M` `u` open it from the trace screen on the view asked for and switch views here; `esc`
goes back. The views are scoped like the trace screen: one step, or every step (the whole trace when it
has none); they open on the trace screen's scope, `[` `]` change it here (and there, on the way back).
The figures are computed once per scope in a worker (mlptui.viewmodels.profile_views) and kept on the
trace's facts, so switching views or scopes, or coming back, costs a repaint, not a recomputation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Input, Static

from mlptui.base.text import printable
from mlptui.gc_policy import bulk_allocation
from mlptui.keys import PROFILE_KEYS, TRACE_KEYS
from mlptui.screens.when_composed import when_composed
from mlptui.trace.analysis.steps.breakdown import scope_label
from mlptui.viewmodels.facts import TraceFacts
from mlptui.viewmodels.profile_details import memory_peaks, module_detail, operator_detail
from mlptui.viewmodels.profile_views import (
    ProfileData,
    ProfileViews,
    critical_of,
    critical_text,
    overview_text,
    regrouped,
)
from mlptui.viewmodels.scope import Scope
from mlptui.viewmodels.table_export import trace_stem
from mlptui.widgets.footer import KeyBar
from mlptui.widgets.lines import LineList
from mlptui.widgets.literal import literal
from mlptui.widgets.memory_plot import MemoryPlot
from mlptui.widgets.profile_tables import (
    KernelStatsTable,
    MemoryOpTable,
    ModuleTable,
    OperatorTable,
    SegmentTable,
    SortedTable,
)
from mlptui.widgets.table_csv import export_table
from mlptui.widgets.worker_errors import ReportsWorkerErrors, WorkerFailed
from mlptui.worker_pause import pausing_for_input

VIEWS = ("overview", "operators", "kernels", "memory", "modules", "critical")
TITLES = {"overview": "o overview", "operators": "p operators", "kernels": "K kernels (completed)",
          "memory": "M memory", "modules": "u modules", "critical": "c path"}
VIEW_KEYS = [b for b in TRACE_KEYS if b.id and b.id.startswith("view-")]


def compose_ahead(host: Screen[Any], facts: TraceFacts) -> ProfileScreen | None:
    """A views screen composed and mounted now, while nothing else happens, without being shown: the
    next `o` `p` `K` `M` `u` pushes it instead of composing one (a new screen's compose and mount is
    most of what opening costs). It is used once, as a new one would be. None where this version of
    Textual starts screens otherwise."""
    register = getattr(host.app, "_register", None)
    if register is None:
        return None
    screen = ProfileScreen(facts, ahead=True)
    register(host.app, screen)
    return screen


class ProfileScreen(ReportsWorkerErrors, Screen[Scope]):
    """Dismissed with its scope, for the trace screen to follow."""

    BINDINGS = [*VIEW_KEYS, *PROFILE_KEYS]

    class Ready(Message):
        """The figures of a scope are computed."""

        def __init__(self, step: int | None) -> None:
            self.step = step
            super().__init__()

    # The step the views are computed over; `[` `]` move it, watch_scope recomputes or repaints.
    scope: reactive[Scope] = reactive(Scope.every(0), init=False)

    def __init__(self, facts: TraceFacts, view: str = "overview", scope: Scope | None = None, *,
                 ahead: bool = False) -> None:
        """`ahead`: made before it is asked for (composed in the background by `compose_ahead`); `aim`
        says which view and scope it opens on, just before it is pushed."""
        super().__init__()
        self.facts = facts
        self.ahead = ahead
        self.mounted = False
        self.aim(view, scope)
        self.grouped = {"operators": False, "kernels": False}
        self.device = 0                     # the memory curve shown: index into the scope's devices
        self._filled: set[str] = set()      # views built for this scope: each is built when first shown
        self._details: dict[tuple[str, int], Text] = {}   # drill-down texts of this scope, by table and row
        self.follow: Callable[[Scope], None] | None = None   # told each new scope (the screen beneath takes it)

    @property
    def views(self) -> ProfileViews:
        views = self.facts.profile
        if not isinstance(views, ProfileViews):
            views = self.facts.profile = ProfileViews(self.facts.trace)
        return views

    @property
    def step(self) -> int | None:
        return self.scope.step

    @property
    def data(self) -> ProfileData | None:
        return self.views.get(self.step)

    def compose(self) -> ComposeResult:
        yield Static("", id="profile-header")
        with ContentSwitcher(initial="view-overview", id="profile-views"):
            with VerticalScroll(id="view-overview", can_focus=True):
                yield Static("computing the profiler views…", id="overview-body")
            with Vertical(id="view-operators"):
                yield OperatorTable(id="operators")
                yield Static("", id="operators-detail", classes="profile-detail")
            with Vertical(id="view-kernels"):
                yield KernelStatsTable(id="kernel-stats")
            with Vertical(id="view-memory"):
                yield Static("", id="memory-peaks")
                yield MemoryPlot(id="memory-plot")
                yield MemoryOpTable(id="memory-ops")
            with Vertical(id="view-modules"):
                yield ModuleTable(id="modules")
                yield Static("", id="modules-detail", classes="profile-detail")
            with Vertical(id="view-critical"):
                yield Static("", id="critical-summary")
                yield SegmentTable(id="critical-segments")
        yield Input(placeholder="filter rows by name (enter: apply, empty: every row, esc: cancel)",
                    id="profile-filter")
        yield KeyBar()

    def aim(self, view: str, scope: Scope | None) -> None:
        """The view and scope to open on (before the screen is first shown)."""
        self.view = view if view in VIEWS else "overview"
        count = len(self.facts.trace.steps)
        self.set_reactive(ProfileScreen.scope, Scope.of_step(None if scope is None else scope.step, count))

    @when_composed
    def on_mount(self) -> None:
        self.query_one(KernelStatsTable).set_trace(self.facts.trace)
        self.mounted = True
        if not self.ahead:
            self.open_views()

    def open_views(self) -> None:
        """Show the view aimed at; its figures are computed after the first paint when not known yet."""
        self._switch(self.view)
        if self.data is None:
            self._start_compute()

    def _start_compute(self) -> None:
        painted = threading.Event()
        self.call_after_refresh(painted.set)
        self.compute(self.step, painted)

    @work(thread=True, exclusive=True, exit_on_error=False, group="profile")
    def compute(self, step: int | None, painted: threading.Event) -> None:
        # The key's repaint first: the computation holds the interpreter lock that painting needs.
        painted.wait(timeout=1.0)
        # Many small objects over a big trace: full collections would hold the interpreter while keys wait.
        with bulk_allocation(), pausing_for_input():
            self.views.build(step, groupings=False)
        self.post_message(self.Ready(step))
        # then the other groupings, ahead of `a` (shown as they are: a view never waits for them)
        with bulk_allocation(), pausing_for_input():
            self.views.build_groupings(step)

    def on_profile_screen_ready(self, message: Ready) -> None:
        if message.step == self.step:
            self._fill()

    def worker_failed(self, failed: WorkerFailed) -> None:
        self.query_one("#overview-body", Static).update(literal(failed.text))

    # -- filling the views -------------------------------------------------------------------
    def _fill(self) -> None:
        """Build the view on screen (the others wait until they are first shown, so opening is one view's
        work, not five)."""
        data = self.data
        if data is None or self.view in self._filled:
            self._header()
            return
        self._filled.add(self.view)
        {"overview": self._fill_overview, "operators": self._fill_operators, "kernels": self._fill_kernels,
         "memory": self._fill_memory, "modules": self._fill_modules,
         "critical": self._fill_critical}[self.view](data)
        self._header()
        self.refresh_bindings()      # the memory view's devices are known now

    def _fill_overview(self, data: ProfileData) -> None:
        self.query_one("#overview-body", Static).update(overview_text(data, max(40, self.size.width - 4)))

    def _fill_operators(self, data: ProfileData) -> None:
        self.query_one(OperatorTable).show(self._rows("operators", data))
        self._operator_detail()

    def _fill_kernels(self, data: ProfileData) -> None:
        self.query_one(KernelStatsTable).show(self._rows("kernels", data))

    def _rows(self, view: str, data: ProfileData) -> list[Any]:
        """The rows of the operators or kernels view in the grouping asked for (both come computed)."""
        which = "operators-shapes" if view == "operators" else "kernels-op"
        if self.grouped[view] and which in data.grouped:
            return data.grouped[which]
        return data.operators if view == "operators" else data.kernels

    def _clear(self) -> None:
        """While a scope is computed: no rows of another scope under its name."""
        self.query_one("#overview-body", Static).update(
            literal(f"computing the profiler views of {scope_label(self.facts.trace, self.step)}…"))
        for table in self.query(SortedTable):
            table.show([])
        self.query_one("#memory-peaks", Static).update("")
        self.query_one(MemoryPlot).show(None)
        for detail in ("#operators-detail", "#modules-detail", "#critical-summary"):
            self.query_one(detail, Static).update("")

    def _fill_memory(self, data: ProfileData) -> None:
        peaks = self.query_one("#memory-peaks", Static)
        if data.memory is None:
            peaks.update("no memory events in this scope: record with profile_memory=True "
                         "(mlptui run --profile-memory)")
            self.query_one(MemoryPlot).show(None)
            self.query_one(MemoryOpTable).show([])
        else:
            peaks.update(memory_peaks(data.memory))
            self._show_device(data)
            self.query_one(MemoryOpTable).show(data.memory.ops)

    def _show_device(self, data: ProfileData) -> None:
        devices = data.memory.devices if data.memory is not None else []
        if devices:
            self.device %= len(devices)
            self.query_one(MemoryPlot).show(devices[self.device], (self.device, len(devices)))

    def _devices(self) -> int:
        data = self.data
        return len(data.memory.devices) if data is not None and data.memory is not None else 0

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """`v` belongs to the memory view: hidden elsewhere, dimmed there while there is no other device.
        `a` groups the operators and kernels views only: hidden elsewhere."""
        if action == "next_device":
            if self.view != "memory":
                return False
            return True if self._devices() > 1 else None
        if action in ("toggle_group", "filter"):
            return self.view in self.grouped
        if action == "toggle_raw":
            return self.view == "kernels"
        if action == "export_csv":
            return self.view != "overview"
        return True

    def action_next_device(self) -> None:
        data = self.data
        if self.view == "memory" and data is not None and data.memory is not None:
            self.device += 1
            self._show_device(data)

    def _fill_critical(self, data: ProfileData) -> None:
        path = critical_of(data)
        self.query_one("#critical-summary", Static).update(critical_text(path))
        self.query_one(SegmentTable).show_path(path.segments, path.start_us)

    def _fill_modules(self, data: ProfileData) -> None:
        if data.modules is None:
            self.query_one(ModuleTable).show([])
            self.query_one("#modules-detail", Static).update(
                "no nn.Module frames in this scope: record with with_modules=True or with_stack=True "
                "(mlptui run --with-modules)")
        else:
            self.query_one(ModuleTable).show(data.modules)
            self._module_detail()

    def _header(self) -> None:
        tabs = Text("  ").join(Text(TITLES[v], "reverse" if v == self.view else "") for v in VIEWS)
        scope = scope_label(self.facts.trace, self.step)
        state = "" if self.data is not None else " (computing…)"
        change = "  ([ ] to change)" if self.facts.trace.steps else ""
        table = self._view_table()
        if table is not None and table.filter:
            change += f"  ·  filter: {table.filter} (/ to change)"
        name = self.facts.trace.source.rstrip("/").rsplit("/", 1)[-1]
        line = Text(printable(f"{name}  ·  scope: {scope}{state}{change}"), "dim")
        self.query_one("#profile-header", Static).update(Text("\n").join([tabs, line]))

    # -- keys --------------------------------------------------------------------------------
    def _switch(self, view: str) -> None:
        self.view = view
        self.query_one(ContentSwitcher).current = f"view-{view}"
        focus = {"overview": "#view-overview", "operators": "#operators", "kernels": "#kernel-stats",
                 "memory": "#memory-ops", "modules": "#modules", "critical": "#critical-segments"}[view]
        self.query_one(focus).focus()
        self.refresh_bindings()      # `v` shows on the memory view only
        self._fill()

    def action_profile_view(self, view: str) -> None:
        self._switch(view)

    def action_back(self) -> None:
        box = self.query_one("#profile-filter", Input)
        if box.display:
            box.display = False
            self._switch(self.view)
            return
        self.dismiss(self.scope)

    # -- filter, raw names, export -------------------------------------------------------------
    def _view_table(self) -> SortedTable | None:
        table = {"operators": "#operators", "kernels": "#kernel-stats", "memory": "#memory-ops",
                 "modules": "#modules", "critical": "#critical-segments"}.get(self.view)
        return None if table is None else self.query_one(table, SortedTable)

    def action_filter(self) -> None:
        table = self._view_table()
        if table is None or self.view not in self.grouped:
            return
        box = self.query_one("#profile-filter", Input)
        box.value = table.filter
        box.display = True
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.display = False
        table = self._view_table()
        if table is not None:
            table.set_filter(event.value)
            table.focus()
            self._detail_of_cursor()     # the rows changed while the box had focus: no cursor move was posted
            shown = len(table.rows)
            self.notify(f"{shown} row{'s' if shown != 1 else ''} hold {table.filter!r}" if table.filter
                        else "every row", timeout=1.5)
        self._header()

    def action_toggle_raw(self) -> None:
        if self.view == "kernels":
            self.query_one(KernelStatsTable).toggle_raw()

    def action_export_csv(self) -> None:
        table = self._view_table()
        if table is not None:
            name = trace_stem(self.facts.trace.source)
            export_table(self, table, f"{name}-{self.view}-{scope_label(self.facts.trace, self.step)}")

    def action_step(self, delta: int) -> None:
        """The previous or next scope in the trace screen's order: every step, then each step."""
        self.scope = self.scope.moved(delta)

    def watch_scope(self, scope: Scope) -> None:
        self._filled.clear()
        self._details.clear()
        if self.data is None:
            self._clear()
            self._header()
            self._start_compute()
        else:
            self._fill()
        if self.follow is not None:
            self.follow(scope)

    def _table(self) -> SortedTable | None:
        focused = self.focused
        return focused if isinstance(focused, SortedTable) else None

    def action_sort_next(self) -> None:
        table = self._table()
        if table is not None:
            self.notify(f"sorted by {table.sort_next()}", timeout=1.5)

    def action_sort_reverse(self) -> None:
        table = self._table()
        if table is not None:
            table.sort_next(reverse=True)

    def action_toggle_group(self) -> None:
        data = self.data
        if data is None or self.view not in self.grouped:
            return
        self.grouped[self.view] = not self.grouped[self.view]
        which = "operators-shapes" if self.view == "operators" else "kernels-op"
        if self.grouped[self.view] and which not in data.grouped:
            self.notify("grouping…", timeout=1.5)
            self.regroup(which)         # reads every op's or kernel's args: off the UI thread
        else:
            self._show_grouping(self.view)

    @work(thread=True, exclusive=True, exit_on_error=False, group="profile-regroup")
    def regroup(self, which: str) -> None:
        data = self.data
        if data is not None:
            with bulk_allocation(), pausing_for_input():
                regrouped(data, which)
            self.post_message(self.Regrouped("operators" if which == "operators-shapes" else "kernels"))

    class Regrouped(Message):
        def __init__(self, view: str) -> None:
            self.view = view
            super().__init__()

    def on_profile_screen_regrouped(self, message: Regrouped) -> None:
        self._show_grouping(message.view)

    def _show_grouping(self, view: str) -> None:
        data = self.data
        if data is None:
            return
        on = self.grouped[view]
        if view == "operators":
            self.query_one(OperatorTable).show(self._rows(view, data))
            self.notify("operators by name and input shapes" if on else "operators by name", timeout=1.5)
        else:
            self.query_one(KernelStatsTable).show(self._rows(view, data))
            self.notify("kernels by kernel and launching op" if on else "kernels by kernel", timeout=1.5)

    # -- drill-down ----------------------------------------------------------------------------
    def on_line_list_cursor_moved(self, message: LineList.CursorMoved) -> None:
        if isinstance(message.pane, OperatorTable):
            self._operator_detail()
        elif isinstance(message.pane, ModuleTable):
            self._module_detail()

    def _detail_of_cursor(self) -> None:
        if self.view == "operators":
            self._operator_detail()
        elif self.view == "modules":
            self._module_detail()

    def _operator_detail(self) -> None:
        row = self.query_one(OperatorTable).current()
        text = Text() if row is None else self._detail("operators", row, lambda: operator_detail(self.facts.trace, row))
        self.query_one("#operators-detail", Static).update(text)

    def _module_detail(self) -> None:
        row = self.query_one(ModuleTable).current()
        text = Text() if row is None else self._detail("modules", row, lambda: module_detail(row))
        self.query_one("#modules-detail", Static).update(text)

    def _detail(self, table: str, row: object, make: Callable[[], Text]) -> Text:
        """A row's drill-down text, made once per scope (coming back to a row costs nothing)."""
        key = (table, id(row))
        text = self._details.get(key)
        if text is None:
            text = self._details[key] = make()
        return text
