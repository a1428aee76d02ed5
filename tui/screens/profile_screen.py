"""The profiler views of one trace: overview, operators, kernels (completed), memory and modules.

`o` `p` `K` `M` `u` open it from the trace screen on the view asked for and switch views here; `esc`
goes back. The figures are computed once per trace in a worker (mlptui.viewmodels.profile_views) and
kept on the trace's facts, so switching views or coming back costs a repaint, not a recomputation.
"""

from __future__ import annotations

from rich.markup import escape
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Static

from mlptui.gc_policy import bulk_allocation
from mlptui.keys import PROFILE_KEYS, TRACE_KEYS
from mlptui.trace.analysis.operators import call_sites, kernels_of
from mlptui.trace.names.kernel import decode_kernel
from mlptui.viewmodels import fmt
from mlptui.viewmodels.facts import TraceFacts
from mlptui.viewmodels.profile_views import ProfileData, build_profile, overview_text, regrouped
from mlptui.widgets.lines import LineList
from mlptui.widgets.memory_plot import MemoryPlot
from mlptui.widgets.profile_tables import (
    KernelStatsTable,
    MemoryOpTable,
    ModuleTable,
    OperatorTable,
    SortedTable,
)
from mlptui.widgets.worker_errors import ReportsWorkerErrors, WorkerFailed

VIEWS = ("overview", "operators", "kernels", "memory", "modules")
TITLES = {"overview": "o overview", "operators": "p operators", "kernels": "K kernels (completed)",
          "memory": "M memory", "modules": "u modules"}
VIEW_KEYS = [b for b in TRACE_KEYS if b.id and b.id.startswith("view-")]


class ProfileScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS = [*VIEW_KEYS, *PROFILE_KEYS]

    class Ready(Message):
        """The figures are computed."""

    def __init__(self, facts: TraceFacts, view: str = "overview") -> None:
        super().__init__()
        self.facts = facts
        self.view = view if view in VIEWS else "overview"
        self.grouped = {"operators": False, "kernels": False}
        self._filled: set[str] = set()     # views built so far: each is built when first shown

    @property
    def data(self) -> ProfileData | None:
        data = self.facts.profile
        return data if isinstance(data, ProfileData) else None

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
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._switch(self.view)
        if self.data is None:
            self.compute()
        else:
            self._fill()

    @work(thread=True, exclusive=True, exit_on_error=False, group="profile")
    def compute(self) -> None:
        # Many small objects over a big trace: full collections would hold the interpreter while keys wait.
        with bulk_allocation():
            self.facts.profile = build_profile(self.facts.trace)
        self.post_message(self.Ready())

    def on_profile_screen_ready(self, message: Ready) -> None:
        self._fill()

    def worker_failed(self, failed: WorkerFailed) -> None:
        self.query_one("#overview-body", Static).update(escape(failed.text))

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
         "memory": self._fill_memory, "modules": self._fill_modules}[self.view](data)
        self._header()

    def _fill_overview(self, data: ProfileData) -> None:
        self.query_one("#overview-body", Static).update(overview_text(data, max(40, self.size.width - 4)))

    def _fill_operators(self, data: ProfileData) -> None:
        self.query_one(OperatorTable).show(data.operators)
        self._operator_detail()

    def _fill_kernels(self, data: ProfileData) -> None:
        self.query_one(KernelStatsTable).show(data.kernels)

    def _fill_memory(self, data: ProfileData) -> None:
        peaks = self.query_one("#memory-peaks", Static)
        if data.memory is None:
            peaks.update("no memory events: record with profile_memory=True (mlptui run --profile-memory)")
            self.query_one(MemoryPlot).show(None)
        else:
            lines = []
            for d in data.memory.devices:
                reserved = "" if d.peak_reserved is None else f", reserved peak {fmt.size_bytes(d.peak_reserved)}"
                when = "-" if d.peak_ts is None else fmt.us(d.peak_ts)
                lines.append(f"{d.label}: peak {fmt.size_bytes(d.peak_allocated)} at {when} in {d.peak_op}{reserved}")
            unfreed = sum(n for _, n in data.memory.unfreed)
            lines.append(f"{data.memory.events} events; never freed in the trace: {fmt.size_bytes(unfreed)}"
                         + (f" (most from {data.memory.unfreed[0][0]})" if data.memory.unfreed else ""))
            peaks.update(escape("\n".join(lines)))
            self.query_one(MemoryPlot).show(data.memory.devices[0])
            self.query_one(MemoryOpTable).show(data.memory.ops)

    def _fill_modules(self, data: ProfileData) -> None:
        if data.modules is None:
            self.query_one("#modules-detail", Static).update(
                "no nn.Module frames: record with with_modules=True or with_stack=True (mlptui run --with-modules)")
        else:
            self.query_one(ModuleTable).show(data.modules)
            self._module_detail()

    def _header(self) -> None:
        tabs = "  ".join(f"[reverse]{TITLES[v]}[/reverse]" if v == self.view else TITLES[v] for v in VIEWS)
        data = self.data
        scope = ""
        if data is not None:
            scope = f"  ·  scope: {data.overview['total']['name']}"
        name = self.facts.trace.source.rstrip("/").rsplit("/", 1)[-1]
        self.query_one("#profile-header", Static).update(f"{tabs}\n[dim]{escape(name)}{escape(scope)}[/dim]")

    # -- keys --------------------------------------------------------------------------------
    def _switch(self, view: str) -> None:
        self.view = view
        self.query_one(ContentSwitcher).current = f"view-{view}"
        focus = {"overview": "#view-overview", "operators": "#operators", "kernels": "#kernel-stats",
                 "memory": "#memory-ops", "modules": "#modules"}[view]
        self.query_one(focus).focus()
        self._fill()

    def action_profile_view(self, view: str) -> None:
        self._switch(view)

    def action_back(self) -> None:
        self.app.pop_screen()

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
            with bulk_allocation():
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
            self.query_one(OperatorTable).show(data.grouped["operators-shapes"] if on else data.operators)
            self.notify("operators by name and input shapes" if on else "operators by name", timeout=1.5)
        else:
            self.query_one(KernelStatsTable).show(data.grouped["kernels-op"] if on else data.kernels)
            self.notify("kernels by kernel and launching op" if on else "kernels by kernel", timeout=1.5)

    # -- drill-down ----------------------------------------------------------------------------
    def on_line_list_cursor_moved(self, message: LineList.CursorMoved) -> None:
        if isinstance(message.pane, OperatorTable):
            self._operator_detail()
        elif isinstance(message.pane, ModuleTable):
            self._module_detail()

    def _operator_detail(self) -> None:
        row = self.query_one(OperatorTable).current()
        trace = self.facts.trace
        text = Text()
        if row is not None:
            text.append(f"{row.name}", "bold")
            text.append(f"  {row.calls} calls · called from:\n")
            for site, n in call_sites(trace, row.ops, top=4):
                text.append(f"  {n:>5}× {site}\n")
            kernels = kernels_of(trace, row.ops, top=4)
            if kernels:
                text.append("  launched:\n")
            for name, n, us in kernels:
                text.append(f"  {n:>5}× {decode_kernel(name).short}  {fmt.us(us)}\n")
        self.query_one("#operators-detail", Static).update(text)

    def _module_detail(self) -> None:
        row = self.query_one(ModuleTable).current()
        trace = self.facts.trace
        text = Text()
        if row is not None:
            totals: dict[str, list[float]] = {}
            stack = list(row.frames[:64])
            seen = 0
            while stack and seen < 50_000:
                op = trace.ops[stack.pop()]
                seen += 1
                if op.cat == "cpu_op":
                    entry = totals.setdefault(op.name, [0, 0.0])
                    entry[0] += 1
                    entry[1] += sum(trace.gpu[g].dur for g in op.gpu)
                stack.extend(op.children)
            text.append(" / ".join(row.path), "bold")
            text.append(f"  {row.calls} calls · its ops (most GPU time first):\n")
            for name, (n, us) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:4]:
                text.append(f"  {int(n):>5}× {name}  {fmt.us(us)} on the GPU\n")
        self.query_one("#modules-detail", Static).update(text)
