"""Two traces side by side: GPU work aligned row for row, then the CPU side (per-step CPU time,
launches, ops found on one side only), a header with the step totals and the speed-up, keys to walk
the differences, jump to the CPU side, open a pair, swap the sides and change the aligned step.

    app.push_screen(DiffScreen(trace_a, trace_b))

The diff itself is mlptui.trace.diff.trace_diff; this screen only lays it out. Re-aligning another step runs in
a worker thread; swapping sides mirrors the rows without aligning again.
"""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, LoadingIndicator, Static

from mlptui.base.errors import MlptuiError
from mlptui.base.text import printable
from mlptui.base.units import MISSING
from mlptui.keys import DIFF_KEYS
from mlptui.render.critical_diff_text import critical_path_header
from mlptui.render.diff_text import MARKERS, direction, fmt_speedup
from mlptui.screens.help_screen import HelpScreen, binding_lines, help_text
from mlptui.screens.host import as_explorer
from mlptui.screens.when_composed import when_composed
from mlptui.trace.diff.cpu import op_key
from mlptui.trace.diff.figures import SideFigures, figure_pairs
from mlptui.trace.diff.trace_diff import Side, TraceDiff, diff_traces
from mlptui.trace.model import Trace
from mlptui.viewmodels.diff_details import pair_details
from mlptui.viewmodels.fmt import us
from mlptui.widgets.diff_list import DiffList
from mlptui.widgets.worker_errors import ReportsWorkerErrors, WorkerFailed

# GPU ops (both sides together) above which the first alignment runs in a worker, not in the constructor.
SYNC_LIMIT = 20_000


def header_text(d: TraceDiff) -> str:
    """Three lines (a fourth: the critical path's length on both sides and the kinds of time that moved
    most), each with what a reader compares first, so that 80 columns keep it: the two sides with
    the aligned step's own counts and times, then the row counts per status and B against A (the runs'
    unprofiled timings, from their manifests, first when both have them; then the aligned steps' windows
    and GPU busy, each with its own direction)."""
    c = d.counts()
    counts = " ".join(f"{MARKERS[s]}{n}" for s, n in c.items())
    sa, sb = d.a.aligned, d.b.aligned
    a = SideFigures(timed_us=d.a.timed_us, step_us=sa.window_us if sa else d.a.step_us,
                    gpu_busy_us=sa.gpu_busy_us if sa else d.a.gpu_busy_us)
    b = SideFigures(timed_us=d.b.timed_us, step_us=sb.window_us if sb else d.b.step_us,
                    gpu_busy_us=sb.gpu_busy_us if sb else d.b.gpu_busy_us)
    # Short enough that every figure's direction fits 80 columns: none may be cut while another shows.
    parts = [f"{'step' if name == 'step' else label} {fmt_speedup(x / y)} {direction(x, y)}"
             for name, label, x, y in figure_pairs(a, b)]
    cp = d.critical_path()
    return "\n".join([
        *(printable(_side_line(tag, side)) for tag, side in (("A", d.a), ("B", d.b))),
        f"rows {counts} │ B vs A: {' · '.join(parts) or MISSING}",
        *([critical_path_header(cp)] if cp else []),
    ])


def _side_line(tag: str, side: Side) -> str:
    """The aligned step's own figures (the whole trace's when it has no steps): counts before times, the
    device last."""
    device = (side.device or MISSING).removeprefix("NVIDIA ")
    s = side.aligned
    kernels, launches, busy, window = ((side.kernels, side.launches, side.gpu_busy_us, side.step_us) if s is None
                                       else (s.kernels, s.launches, s.gpu_busy_us, s.window_us))
    return (f"{tag} {side.label} · {kernels} kernels · {launches} launches · GPU busy {us(busy)} · "
            f"{side.step} step {us(window)} · {device}")


class PairDetails(ModalScreen[None]):
    """Both kernels of one row: chains, configs, launch geometry, occupancy, roofline."""

    BINDINGS = [
        Binding("escape,enter,q", "dismiss", "Close", id="details-close"),
    ]

    def __init__(self, lines: list[str]) -> None:
        super().__init__()
        self.lines = lines

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="pair-details"):
            yield Static("\n".join(printable(line) for line in self.lines), markup=False)
        yield Footer()


class DiffHelp(HelpScreen):
    """The explorer's help with the diff screen's keys first (same box, same look, same remaps)."""

    def text(self, width: int | None) -> Text:
        keymap = as_explorer(self.app).user_keys
        text = Text()
        text.append("Diff screen\n", "bold")
        for b in DIFF_KEYS:
            binding_lines(text, b, keymap, width)
        text.append("  " + "  ".join(f"{m} {s}" for s, m in MARKERS.items()) + "   (row markers)\n\n")
        text.append_text(help_text(keymap, width))
        return text


class DiffScreen(ReportsWorkerErrors, Screen[None]):
    CSS_PATH = "../diff.tcss"
    BINDINGS = [*DIFF_KEYS]

    def __init__(self, a: Trace, b: Trace, *, step_a: int | None = None, step_b: int | None = None,
                 diff: TraceDiff | None = None) -> None:
        super().__init__()
        self._request = (a, b, step_a, step_b)
        self.diff: TraceDiff | None = diff
        if diff is None and len(a.gpu) + len(b.gpu) <= SYNC_LIMIT:
            self.diff = diff_traces(a, b, step_a, step_b)

    def compose(self) -> ComposeResult:
        if self.diff is None:
            a, b = self._request[:2]
            yield Static(printable(f"aligning {a.source} ⇄ {b.source} …"), id="diff-header", markup=False)
            yield LoadingIndicator(id="diff-loading")
        else:
            yield Static(header_text(self.diff), id="diff-header", markup=False)
            yield DiffList(self.diff, id="diff-rows")
        yield Static("", id="diff-status", markup=False)
        yield Footer()

    @when_composed
    def on_mount(self) -> None:
        if self.diff is None:
            self._first_alignment()
            return
        self.rows.focus()
        self._update_status()

    @work(thread=True, exclusive=True, exit_on_error=False, group="diff-realign")
    def _first_alignment(self) -> None:
        try:
            d = diff_traces(*self._request)
        except MlptuiError as exc:
            self.app.call_from_thread(self._set_status, printable(str(exc)))
            return
        # Textual types the callback as `Callable[..., T | Awaitable[T]]`, which mypy cannot solve for a coroutine
        self.app.call_from_thread(self._first_show, d)  # type: ignore[arg-type]

    async def _first_show(self, d: TraceDiff) -> None:
        self.diff = d
        await self.query_one("#diff-loading").remove()
        rows = DiffList(d, id="diff-rows")
        await self.mount(rows, before=self.query_one("#diff-status"))
        self.query_one("#diff-header", Static).update(header_text(d))
        rows.focus()
        self._update_status()

    @property
    def ready(self) -> bool:
        """The rows are on screen (the first alignment of big traces runs in a worker)."""
        return self._shown() is not None

    def _shown(self) -> TraceDiff | None:
        """The diff, once its rows are on screen; None before."""
        return self.diff if self.diff is not None and self.query(DiffList) else None

    @property
    def rows(self) -> DiffList:
        return self.query_one(DiffList)

    def _show(self, d: TraceDiff) -> None:
        self.diff = d
        self.query_one("#diff-header", Static).update(header_text(d))
        self.rows.set_diff(d)
        self._update_status()

    def _set_status(self, text: str) -> None:
        self.query_one("#diff-status", Static).update(text)

    def _update_status(self, note: str = "") -> None:
        diff = self._shown()
        if diff is None:
            return
        row = self.rows.current_row
        diffs = diff.differences()
        text = note
        cpu = self.rows.cpu_line(self.rows.cursor)
        if not text and cpu is not None:
            text = cpu.status
        elif not text and row is not None:
            k = self.rows.lines[self.rows.cursor][1]   # the kernel of the row this line shows
            a = " → ".join(map(op_key, row.a[min(k, len(row.a) - 1)].chain[-3:])) if row.a else "—"
            b = " → ".join(map(op_key, row.b[min(k, len(row.b) - 1)].chain[-3:])) if row.b else "—"
            names = self.rows.names_line(self.rows.cursor)
            text = (f"{names}   " if names else "") + f"A: {a}   ⇄   B: {b}"
        if not diffs and cpu is None:
            text = "no kernel differences: every row is the same kernel · " + text
        self._set_status(text)

    def on_line_list_cursor_moved(self, event: DiffList.CursorMoved) -> None:
        self._update_status()

    def on_line_list_chosen(self, event: DiffList.Chosen) -> None:
        self.action_details()

    # -- actions -----------------------------------------------------------------------------
    def action_difference(self, direction: int) -> None:
        if not self.ready:
            return
        if not self.rows.jump_difference(direction):
            self._update_status("no further difference " + ("below" if direction > 0 else "above"))

    def action_cpu_side(self) -> None:
        if self.ready:
            self.rows.jump_cpu()

    def action_details(self) -> None:
        diff = self._shown()
        if diff is None:
            return
        row = self.rows.current_row
        if row is not None:
            self.app.push_screen(PairDetails(pair_details(diff, row)))

    def action_swap(self) -> None:
        diff = self._shown()
        if diff is None:
            return
        cursor = self.rows.cursor
        self._show(diff.swapped())
        self.rows.move_cursor(cursor, center=True)

    def action_toggle_raw(self) -> None:
        if not self.ready:
            return
        self.rows.raw = not self.rows.raw
        self.rows.refresh_text()

    def action_step(self, delta: int) -> None:
        diff = self._shown()
        if diff is None:
            return
        ta, tb = diff.trace_a, diff.trace_b
        if ta is None or tb is None or not (ta.steps and tb.steps):
            self._update_status("these traces have no ProfilerStep to switch between")
            return
        # Both sides move together, each within its own steps.
        now = [max(diff.a.step_index, 0), max(diff.b.step_index, 0)]
        pos = [max(0, min(p + delta, len(t.steps) - 1)) for p, t in zip(now, (ta, tb), strict=True)]
        if pos == now:
            self._update_status("no " + ("later" if delta > 0 else "earlier") + " step on either side")
            return
        self._update_status(f"aligning {ta.steps[pos[0]].name} ⇄ {tb.steps[pos[1]].name}…")
        self._realign(ta, tb, pos[0], pos[1])

    @work(thread=True, exclusive=True, exit_on_error=False, group="diff-realign")
    def _realign(self, ta: Trace, tb: Trace, sa: int, sb: int) -> None:
        d = diff_traces(ta, tb, sa, sb)
        self.app.call_from_thread(self._show, d)

    def worker_failed(self, failed: WorkerFailed) -> None:
        self._set_status(failed.text)

    def action_profile(self) -> None:
        if self.diff is not None:
            from mlptui.screens.diff_profile_screen import DiffProfileScreen

            self.app.push_screen(DiffProfileScreen(self.diff))

    def action_help(self) -> None:
        if not isinstance(self.app.screen, HelpScreen):
            self.app.push_screen(DiffHelp())

    def action_back(self) -> None:
        # Back to the screen that opened the diff; a diff opened from the command line stays (q quits).
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self._update_status("q quits")

