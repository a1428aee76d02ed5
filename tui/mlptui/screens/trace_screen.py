"""One trace: header with findings, steps, CPU dispatch tree, GPU kernels, launches, details, timeline.

Choosing a step scopes every pane. Moving a cursor selects an op or a kernel; the details pane, the
timeline highlight and the linked rows follow. Everything here reacts to one key press with work
proportional to the screen, not to the trace (the lists were computed by `facts.build_facts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.reactive import Reactive, reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Input, Static

from mlptui.base.text import printable
from mlptui.gc_policy import bulk_allocation
from mlptui.keys import TRACE_KEYS
from mlptui.screens.hidden_draw import HiddenDraw
from mlptui.screens.host import as_explorer
from mlptui.screens.path_lit import PathLit
from mlptui.screens.step_ahead import StepAhead
from mlptui.screens.when_composed import when_composed
from mlptui.trace.analysis.events.device_arch import device_arch
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.model import LAUNCH_CATS
from mlptui.viewmodels import fmt
from mlptui.viewmodels.detail_text import gpu_details, op_details
from mlptui.viewmodels.expect_lines import expectation_lines
from mlptui.viewmodels.facts import TraceFacts, add_launches, call_stats
from mlptui.viewmodels.kernel_labels import every_kernel_labels
from mlptui.viewmodels.lanes import CounterLane, Lane
from mlptui.viewmodels.scope import Scope
from mlptui.viewmodels.table_export import trace_stem
from mlptui.widgets.details import Details
from mlptui.widgets.footer import KeyBar
from mlptui.widgets.kernels import KernelTable
from mlptui.widgets.launches import LaunchTable, summary_line
from mlptui.widgets.lines import LineList
from mlptui.widgets.literal import literal
from mlptui.widgets.op_tree import OpTree
from mlptui.widgets.profile_tables import SegmentTable
from mlptui.widgets.steps import StepList
from mlptui.widgets.table_csv import export_table
from mlptui.widgets.timeline import Timeline
from mlptui.widgets.worker_errors import ReportsWorkerErrors
from mlptui.worker_pause import pausing_for_input

if TYPE_CHECKING:
    from mlptui.screens.profile_screen import ProfileScreen

MARKED_KERNELS_CAP = 2000
VIEWS_AHEAD_AFTER_S = 0.3       # a views screen is composed this long after the last one closed
PANES = {"steps": "#steps", "tree": "#tree", "kernels": "#kernels", "launches": "#launches",
         "timeline": "#timeline", "details": "#details"}


class Pane(Vertical):
    """A titled box around one pane; `z` maximizes it with its title."""

    ALLOW_MAXIMIZE = True


def device_line(facts: TraceFacts) -> str:
    trace = facts.trace
    parts = [facts.label]
    device = trace.device or {}
    if device:
        info = device_arch(device, trace.meta)
        units = f", {info.count} {info.units}" if info.count else ""
        parts.append(f"{str(device.get('name') or '').strip() or 'unnamed device'} ({info.word}{units})")
    versions = (trace.manifest or {}).get("versions") or {}
    if versions.get("torch"):
        parts.append(f"torch {versions['torch']}")
    cuda = trace.meta.get("cuda_runtime_version")
    if isinstance(cuda, int) and cuda:
        parts.append(f"CUDA {cuda // 1000}.{cuda % 1000 // 10}")
    return "  ·  ".join(parts)


@dataclass
class JumpWalk:
    """`g`'s walk from an op: its (launch call, GPU op) pairs, where the walk stands, and whether it stands
    on the call (next: its kernel) or on the kernel (next: the next call)."""

    origin: int
    steps: list[tuple[int, int]]
    position: int = -1
    on_call: bool = False

    def at(self, kind: str, ident: int) -> bool:
        """Whether the selection is still where the walk left it (any other move ends the walk)."""
        if self.position < 0:
            return kind == "op" and ident == self.origin
        call, gid = self.steps[self.position]
        return (kind, ident) == (("op", call) if self.on_call else ("gpu", gid))


class TraceScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS = [*TRACE_KEYS]

    class LaunchesReady(Message):
        """The launch lists of a big trace are ready (computed after the screen showed)."""

    class ViewsImportable(Message):
        """The profiler views' module is imported: a views screen can be composed ahead of its key."""
    VERTICAL_BREAKPOINTS = [(0, "-short"), (34, "-tall")]

    # The step every pane shows; set once in on_mount, then by the step list, `[` `]`, a jump to work
    # in another step, or the profiler views. The step list follows it by data binding, the other panes
    # through watch_scope. always_update: the first value may equal the default (a trace without steps).
    # No repaint of the whole screen: each pane repaints what the scope changed in it.
    scope: reactive[Scope] = reactive(Scope.every(0), always_update=True, init=False, repaint=False)
    # A focus move repaints the panes whose focus styles change, not the whole screen.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    def __init__(self, facts: TraceFacts) -> None:
        super().__init__()
        self.facts = facts
        self.selected: tuple[str, int] = ("none", -1)
        self.matches: list[tuple[str, int]] = []
        self.match_index = -1
        self._walk: JumpWalk | None = None      # where `g` is in its walk from an op through its kernels
        self._views_ahead: ProfileScreen | None = None     # the next views screen, composed ahead
        self.header_label = ""          # what comes before the device line (a rank's screen: which rank)
        self._ahead = StepAhead(self, facts)    # the steps next to the one shown, prepared after it is
        self._hidden_draw = HiddenDraw(self)    # drawn under the views when they change its scope
        self._path = PathLit(self, facts, lambda: self.scope, self.show_event)   # `C`: the path on the timeline

    def compose(self) -> ComposeResult:
        # the trust banner first: a trace that cannot be read as is says so before any figure
        header = [Text(printable(self.facts.trust), "bold red")] if self.facts.trust else []
        header.append(Text(printable(self.header_label + device_line(self.facts)), "bold"))
        # expect.toml's mismatches come first (the held ones only count in the picker)
        header += [Text("  ") + line for line in expectation_lines(self.facts, held=False)]
        header += [Text("  " + printable(line)) for line in self.facts.findings]
        # the file's name, not its folder: the header reads the same wherever the trace lives
        header.append(Text(printable(self.facts.trace.source.rstrip("/").rsplit("/", 1)[-1]), "dim"))
        yield Static(Text("\n").join(header), id="trace-header")
        with Pane(id="steps-pane", classes="pane"):
            yield StepList(id="steps").data_bind(TraceScreen.scope)
        with Horizontal(id="middle"):
            with Pane(id="tree-pane", classes="pane"):
                yield OpTree(id="tree")
            with Pane(id="kernels-pane", classes="pane"):
                yield KernelTable(id="kernels")
        with Horizontal(id="lower"):
            with Pane(id="launches-pane", classes="pane"):
                yield Static("", id="launch-summary")
                yield LaunchTable(id="launches")
            with Pane(id="path-pane", classes="pane"):
                yield Static("", id="path-summary")
                yield SegmentTable(id="path-segments")
            with Pane(id="details-pane", classes="pane"):
                yield Details(id="details")
        with Pane(id="timeline-pane", classes="pane"):
            yield Timeline(id="timeline")
        yield Input(placeholder="search op, call and kernel names (enter: go, esc: cancel)", id="search")
        yield KeyBar()

    @when_composed
    def on_mount(self) -> None:
        titles = {"tree-pane": "2 CPU dispatch", "kernels-pane": "3 GPU kernels",
                  "launches-pane": "4 launches & occupancy queries", "details-pane": "6 details",
                  "timeline-pane": "5 timeline"}
        for pane_id, title in titles.items():
            self.query_one(f"#{pane_id}").border_title = title
        trace = self.facts.trace
        self.query_one(OpTree).set_trace(trace)
        self.query_one(KernelTable).set_trace(trace)
        self.query_one(LaunchTable).set_trace(trace)
        self.query_one(Timeline).set_lanes(self.facts.lanes, self._lane_name)
        start = Scope.last(len(trace.steps))
        self.query_one(StepList).show(self.facts.stats, start.row)
        self.scope = start
        self.query_one(OpTree).focus()
        if self.facts.launches_by_step is None:
            self.link_launches()
        self.prepare_views()

    @work(thread=True, exit_on_error=False, group="prepare-views")
    def prepare_views(self) -> None:
        """Import the profiler views ahead of their keys: the first `o` is then a paint, not an import; and
        the all-steps kernel labels ahead of the first `[` `]` there."""
        import mlptui.screens.profile_screen  # noqa: F401

        with pausing_for_input():
            self.facts.trace.derive(every_kernel_labels)
        self.post_message(self.ViewsImportable())

    # -- scope -------------------------------------------------------------------------------
    def set_scope(self, step: int | None) -> None:
        """Scope the panes to `step`: an index into trace.steps, an op's or kernel's step field (-1:
        outside every step), or None for every step."""
        self.scope = Scope.of_step(step, len(self.facts.trace.steps))

    def watch_scope(self, scope: Scope) -> None:
        trace = self.facts.trace
        step = scope.step
        span: tuple[float, float] | None = None
        focus = -1
        if step is not None:
            s = trace.steps[step]
            span = (s.ts, s.ts + s.dur)
            focus = s.op
        op_start, op_end = span if span is not None else (None, None)
        self.query_one(OpTree).show_scope(op_start, op_end, focus)
        self.query_one(KernelTable).show(self.facts.gpu_by_step.get(step, []))
        self._show_launches()
        timeline = self.query_one(Timeline)
        if span is None:
            timeline.show_scope(*self._extent())
        else:
            start, end = span
            kernels = self.facts.gpu_by_step.get(step, [])
            gpu_end = max((trace.gpu[g].end for g in kernels[-64:]), default=end)
            timeline.show_scope(start, max(end, gpu_end))
        scope_name = "all steps" if step is None else trace.steps[step].name
        pane = self.query_one("#steps-pane")
        title = literal(f"1 steps · scope: {scope_name} ([ ] to change)")
        if pane.border_title != title.markup:
            pane.border_title = title
        self._select_from(self.query_one(OpTree))
        self._ahead.shown(scope)
        self._path.scope_changed(scope)

    def _show_launches(self) -> None:
        summary = self.query_one("#launch-summary", Static)
        if self.facts.launches_by_step is None:
            summary.update("linking launch calls to their ops…", layout=False)
            self.query_one(LaunchTable).show([])
            return
        self.query_one(LaunchTable).show(self.facts.launches_by_step.get(self.scope.step, []))
        calls = call_stats(self.facts, self.scope.step)
        summary.update(literal(summary_line(calls)) if calls else "no launch calls in this scope", layout=False)

    @work(thread=True, exclusive=True, exit_on_error=False, group="launches")
    def link_launches(self) -> None:
        with bulk_allocation(), pausing_for_input():
            add_launches(self.facts)
        self.post_message(self.LaunchesReady())

    def on_trace_screen_launches_ready(self, message: LaunchesReady) -> None:
        self._show_launches()

    def _extent(self) -> tuple[float, float]:
        trace = self.facts.trace
        starts = [trace.ops[r].ts for th in trace.threads for r in th.roots[:1]]
        ends = [trace.ops[th.roots[-1]].end for th in trace.threads if th.roots]
        if trace.gpu:
            starts.append(trace.gpu[0].ts)
            ends.append(trace.gpu[-1].end)
        return (min(starts, default=0.0), max(ends, default=1.0))

    def action_step(self, delta: int) -> None:
        if self.facts.trace.steps:
            self.scope = self.scope.moved(delta)

    def _lane_name(self, lane: Lane, i: int) -> str:
        """What a timeline slice is called: its op's name, or its kernel's decoded short name."""
        ident = int(lane.ids[i])
        if lane.kind == "gpu":
            return kernel_name(self.facts.trace, self.facts.trace.gpu[ident].name).short
        if isinstance(lane, CounterLane):
            return f"{float(lane.values[i]):g}"         # the sample's value, measured
        if ident < 0:
            return "sync"           # a synchronisation no recorded call is linked to
        return self.facts.trace.ops[ident].name

    def on_timeline_event_chosen(self, message: Timeline.EventChosen) -> None:
        self._select(message.kind, message.ident)

    # -- selection ---------------------------------------------------------------------------
    def on_line_list_cursor_moved(self, message: LineList.CursorMoved) -> None:
        if isinstance(message.pane, StepList):
            scope = Scope.of_row(message.index, len(self.facts.trace.steps))
            if scope != self.scope:
                self.scope = scope
            return
        self._select_from(message.pane)

    def on_line_list_chosen(self, message: LineList.Chosen) -> None:
        if isinstance(message.pane, SegmentTable):
            self._path.chosen(message.index)
        elif isinstance(message.pane, KernelTable | LaunchTable):
            self._select_from(message.pane)

    def _select_from(self, pane: LineList) -> None:
        if isinstance(pane, OpTree):
            op = pane.current_op()
            self._select("op", op)
        elif isinstance(pane, KernelTable):
            self._select("gpu", pane.current())
        elif isinstance(pane, LaunchTable):
            row = pane.current()
            if row is not None:
                self._select("op", row.op if row.op >= 0 else (row.calls[0] if row.calls else -1))

    def action_critical_path(self) -> None:
        self._path.toggle()

    def show_event(self, kind: str, ident: int) -> None:
        """The details pane and the timeline's highlight on an op ("op") or a GPU op ("gpu")."""
        self._select(kind, ident)

    def _select(self, kind: str, ident: int) -> None:
        self.selected = (kind, ident)
        trace = self.facts.trace
        details = self.query_one(Details)
        kernels = self.query_one(KernelTable)
        timeline = self.query_one(Timeline)
        if ident < 0:
            details.show_text("")
            timeline.set_marks([], [])
            kernels.set_marked([])
            return
        if kind == "op":
            op = trace.ops[ident]
            details.show_text(op_details(trace, ident))
            linked = self._kernels_below(ident)
            kernels.set_marked(linked)
            self.query_one(LaunchTable).set_marked_op(ident)
            gpu_us = sum(trace.gpu[g].dur for g in linked)
            caption = f"{op.name} {fmt.us(op.dur)} on CPU" + (
                f" → {len(linked)} GPU op{'s' if len(linked) != 1 else ''}, {fmt.us(gpu_us)}" if linked else
                ", nothing on the GPU")
            if op.cat in LAUNCH_CATS and len(linked) == 1:     # the launch → kernel link, with its delay
                k = trace.gpu[linked[0]]
                caption = (f"{op.name} at {fmt.us(op.ts)} → {kernel_name(self.facts.trace, k.name).short} on stream {k.stream}, "
                           f"starts {fmt.us(k.ts - op.ts)} after the call, runs {fmt.us(k.dur)}")
            timeline.set_marks([((op.pid, op.tid), op.ts, op.end)],
                               [((trace.gpu[g].device, trace.gpu[g].stream), trace.gpu[g].ts, trace.gpu[g].end)
                                for g in linked[:64]], caption)
        else:
            g = trace.gpu[ident]
            details.show_text(gpu_details(trace, ident))
            cpu = []
            if g.launch >= 0:
                call = trace.ops[g.launch]
                cpu.append(((call.pid, call.tid), call.ts, call.end))
            kernels.set_marked([])
            launched = ""
            if g.launch >= 0:       # the launch → kernel link, with its delay
                call = trace.ops[g.launch]
                launched = f" ← {call.name} at {fmt.us(call.ts)}, {fmt.us(g.ts - call.ts)} before it started"
            timeline.set_marks(cpu, [((g.device, g.stream), g.ts, g.end)],
                               f"{kernel_name(self.facts.trace, g.name).short} {fmt.us(g.dur)} on stream {g.stream}{launched}")

    def _kernels_below(self, op_id: int) -> list[int]:
        """GPU work launched by an op or anything beneath it (capped: a root may hold a whole run)."""
        ops = self.facts.trace.ops
        found: list[int] = []
        stack = [op_id]
        while stack and len(found) < MARKED_KERNELS_CAP:
            node = stack.pop()
            found.extend(ops[node].gpu)
            stack.extend(ops[node].children)
        return sorted(set(found))

    # -- jump: op → launch call → kernel → next launch call → … → op ------------------------------
    def action_jump(self) -> None:
        """From an op, walk every GPU op it launched, each after its launch call, then back to the op (on
        Hopper a GEMM's op launches a memset before the GEMM); from a kernel reached otherwise, its op."""
        trace = self.facts.trace
        kind, ident = self.selected
        if ident < 0:
            self.notify("nothing selected", timeout=1.5)
            return
        walk = self._walk
        if walk is not None and walk.at(kind, ident):
            self._walk_next(walk)
            return
        self._walk = None
        if kind == "gpu":
            target = trace.gpu[ident].op if trace.gpu[ident].op >= 0 else trace.gpu[ident].launch
            if target >= 0 and self._reveal_op(target):
                return
            self.notify("this kernel has no CPU op in the trace", timeout=2)
            return
        op = trace.ops[ident]
        if op.cat in LAUNCH_CATS and not op.gpu:
            self.notify(f"{op.name} launched no GPU work", timeout=2)
            return
        steps = self._launched_below(ident)
        if not steps:
            self.notify(f"{op.name} launches nothing on the GPU", timeout=2)
            return
        self._walk = walk = JumpWalk(ident, steps)
        if op.cat in LAUNCH_CATS:       # a launch call: straight to its (first) kernel
            walk.position, walk.on_call = 0, True
        self._walk_next(walk)

    def _walk_next(self, walk: JumpWalk) -> None:
        trace = self.facts.trace
        if walk.on_call:                    # launch call → its kernel
            walk.on_call = False
            gid = walk.steps[walk.position][1]
            self._show_gpu(gid)
            count = len(walk.steps)
            if count > 1:
                self.notify(f"GPU op {walk.position + 1} of {count} launched by {trace.ops[walk.origin].name}",
                            timeout=1.5)
            return
        walk.position += 1
        if walk.position >= len(walk.steps):     # the last kernel → back to the op
            self._walk = None
            self._reveal_op(walk.origin)
            return
        call, gid = walk.steps[walk.position]
        if walk.position > 0 and walk.steps[walk.position - 1][0] == call:
            walk.on_call = True             # the same call launched this one too: no stop on the call
            self._walk_next(walk)
            return
        walk.on_call = True
        self._reveal_op(call)

    def _show_gpu(self, gid: int) -> None:
        trace = self.facts.trace
        kernels = self.query_one(KernelTable)
        if not kernels.select_gpu(gid):
            self.set_scope(trace.gpu[gid].step if trace.gpu[gid].step >= 0 else None)
            if not kernels.select_gpu(gid):
                self.set_scope(None)
                kernels.select_gpu(gid)
        kernels.focus()
        self._select("gpu", gid)

    def _launched_below(self, op_id: int) -> list[tuple[int, int]]:
        """(launch call, GPU op) for every GPU op launched by `op_id` or beneath it, in launch order."""
        ops = self.facts.trace.ops
        found: list[tuple[int, int]] = []
        stack = [op_id]
        visited = 0
        while stack and visited < 100_000 and len(found) < MARKED_KERNELS_CAP:
            node = stack.pop()
            visited += 1
            if ops[node].cat in LAUNCH_CATS:
                found.extend((node, g) for g in ops[node].gpu)
            stack.extend(reversed(ops[node].children))
        return found

    def _reveal_op(self, op_id: int) -> bool:
        tree = self.query_one(OpTree)
        if not tree.reveal(op_id):
            step = self.facts.trace.ops[op_id].step
            self.set_scope(step)
            if not tree.reveal(op_id):
                self.set_scope(None)
                if not tree.reveal(op_id):
                    return False
        tree.focus()
        self._select("op", tree.current_op())     # the op itself, or with frames hidden a frame's nearest op
        return True

    # -- search ------------------------------------------------------------------------------
    def action_search(self) -> None:
        search = self.query_one("#search", Input)
        search.display = True
        search.value = ""
        search.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        needle = event.value.strip()
        event.input.display = False
        if not needle:
            return
        self.matches = self._find(needle)
        self.match_index = -1
        if not self.matches:
            self.notify(f"no name contains {needle!r}", timeout=2)
            self.query_one(OpTree).focus()
            return
        self.action_search_next(1)

    def _find(self, needle: str) -> list[tuple[str, int]]:
        tree = self.query_one(OpTree)
        found: list[tuple[str, int]] = []
        for n, op in enumerate(tree.search_ops(needle)):
            if n >= 10_000:
                break
            found.append(("tree", op))
        found += [("kernels", i) for i in self.query_one(KernelTable).search_rows(needle)]
        found += [("launches", i) for i in self.query_one(LaunchTable).search_rows(needle)]
        return found

    def action_search_next(self, delta: int) -> None:
        if not self.matches:
            self.notify("no search yet: press / to search", timeout=1.5)
            return
        self.match_index = (self.match_index + delta) % len(self.matches)
        pane, ident = self.matches[self.match_index]
        if pane == "tree":
            self._reveal_op(ident)
        else:
            table = self.query_one(KernelTable if pane == "kernels" else LaunchTable)
            table.focus()
            table.move_cursor(ident, center=True)
            self._select_from(table)
        self.notify(f"match {self.match_index + 1} of {len(self.matches)} ({pane})", timeout=1.5)

    # -- other keys ---------------------------------------------------------------------------
    def action_toggle_raw(self) -> None:
        self.query_one(KernelTable).toggle_raw()
        self.query_one(LaunchTable).toggle_raw()

    def action_export_csv(self) -> None:
        focused = self.focused
        if not isinstance(focused, LineList):
            self.notify("focus a table (steps, CPU dispatch, kernels, launches) to export it", timeout=2)
            return
        pane = {StepList: "steps", OpTree: "dispatch", KernelTable: "kernels", LaunchTable: "launches"}.get(
            type(focused), "table")
        trace = self.facts.trace
        scope = "all-steps" if self.scope.step is None else trace.steps[self.scope.step].name
        export_table(self, focused, f"{trace_stem(trace.source)}-{pane}-{scope}")

    def action_zoom_pane(self) -> None:
        if self.maximized is not None:
            self.minimize()
        elif self.focused is not None:
            pane = next((a for a in self.focused.ancestors_with_self if isinstance(a, Pane)), self.focused)
            self.maximize(pane, container=False)

    def action_focus_pane(self, name: str) -> None:
        self.query_one(PANES[name]).focus()

    def action_back(self) -> None:
        search = self.query_one("#search", Input)
        if search.display:
            search.display = False
            self.query_one(OpTree).focus()
        elif self.maximized is not None:
            self.minimize()
        elif len(self.app.screen_stack) > 2:
            self.app.pop_screen()

    def action_diff(self) -> None:
        as_explorer(self.app).choose_diff_partner(self.facts)

    def action_profile_view(self, view: str) -> None:
        from mlptui.screens.profile_screen import ProfileScreen

        views, self._views_ahead = self._views_ahead, None
        if views is not None and views.mounted:
            views.aim(view, self.scope)
            views.follow = self.follow_views
            self.app.push_screen(views, self._scope_from_views)
            views.open_views()      # on the screen now: its figures wait for its first paint
            return
        if views is not None:       # still composing: it goes, a new one opens
            views.remove()
        views = ProfileScreen(self.facts, view, self.scope)
        views.follow = self.follow_views
        self.app.push_screen(views, self._scope_from_views)

    def follow_views(self, scope: Scope) -> None:
        """The views on top moved to `scope`: after their repaint, this screen takes it, hidden, and is drawn
        for it between keys, so that `esc` shows it at once."""
        self.call_after_refresh(self._follow, scope)

    def _follow(self, scope: Scope) -> None:
        if self.app.screen is self or not self.is_attached:     # back on top already: `esc` set the scope
            return
        if scope != self.scope:
            self.scope = scope
        self._hidden_draw.start()

    def _scope_from_views(self, scope: Scope | None) -> None:
        """The views' scope (changed there with `[` `]`) becomes this screen's."""
        if scope is not None and scope != self.scope:
            self.scope = scope
        self.set_timer(VIEWS_AHEAD_AFTER_S, self._compose_views_ahead)

    def on_trace_screen_views_importable(self, message: ViewsImportable) -> None:
        self.set_timer(VIEWS_AHEAD_AFTER_S, self._compose_views_ahead)

    def _compose_views_ahead(self) -> None:
        if self._views_ahead is None and self.is_current:
            from mlptui.screens.profile_screen import compose_ahead

            self._views_ahead = compose_ahead(self, self.facts)

    def on_unmount(self) -> None:
        if self._views_ahead is not None:
            self._views_ahead.remove()
            self._views_ahead = None
