"""The trace list: every trace of a folder (or the bundled samples) with what it holds at a glance.

Traces small enough are opened in a worker as soon as the list shows, so each row gets its device,
kernels, launches and findings, and `enter` opens an already-loaded trace at once. Over ssh the same
holds: each file's size comes first in its answer, so a large one costs a header and its folder's
manifest (which still labels its row), not its bytes. Sources that cannot say a size first (the Hub)
are opened on `enter` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from mlptui.base.errors import MlptuiError
from mlptui.base.text import printable
from mlptui.gc_policy import bulk_allocation
from mlptui.keys import PICKER_KEYS
from mlptui.screens.host import as_explorer
from mlptui.screens.when_composed import when_composed
from mlptui.widgets.footer import KeyBar
from mlptui.widgets.lines import LineList
from mlptui.widgets.literal import literal
from mlptui.widgets.trace_list import TraceList, ladder_key
from mlptui.widgets.worker_errors import ReportsWorkerErrors

if TYPE_CHECKING:      # numpy and the analyses come with it: not before the first paint
    from mlptui.viewmodels.facts import TraceFacts

PRELOAD_BYTES = 20_000_000     # traces up to this size are summarised while the list shows


def _local_label(spec: str) -> str | None:
    """The row's label from the manifest beside a local trace, or None without one."""
    from mlptui.contract.manifest import manifest_for
    from mlptui.viewmodels.facts import run_label

    run = manifest_for(spec)
    return run_label(run, spec) if run is not None else None


def _manifest_label(data: bytes, spec: str) -> str | None:
    """The row's label from its folder's manifest (as it came over ssh), or None without one."""
    from mlptui.contract.manifest import ManifestError, parse_manifest
    from mlptui.viewmodels.facts import run_label

    if not data:
        return None
    try:
        run = parse_manifest(data, spec).run_for(spec.rstrip("/").rsplit("/", 1)[-1])
    except ManifestError:
        return None
    return run_label(run, spec) if run is not None else None


class PickerScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS = [
        *PICKER_KEYS,
        *(Binding(str(n), f"jump({n})", f"Trace {n}", show=False, id=f"trace-{n}") for n in range(1, 10)),
    ]

    class Summarised(Message):
        def __init__(self, spec: str, facts: TraceFacts | None, error: str | None, label: str | None = None) -> None:
            self.spec = spec
            self.facts = facts
            self.error = error
            self.label = label
            super().__init__()

    def __init__(self, specs: list[str], title: str, *, folders: list[str] | None = None) -> None:
        super().__init__()
        self.folders = sorted(folders or [], key=ladder_key)    # folders below that hold traces: after the files
        self.specs = sorted(specs, key=ladder_key) + self.folders
        self.title_text = title

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("mlptui", "bold"), f"  {printable(self.title_text)}  ·  1-9/j/k: pick  "
                                   "enter: open  m then d: diff two  ?: keys"), id="picker-title")
        with Vertical(id="picker-list-pane", classes="pane"):
            yield TraceList(self.specs, id="picker-list", folders=set(self.folders))
        with VerticalScroll(id="picker-findings-pane", classes="pane", can_focus=False):
            yield Static("", id="picker-findings")
        yield KeyBar()

    @when_composed
    def on_mount(self) -> None:
        files = len(self.specs) - len(self.folders)
        folders = f", {len(self.folders)} folder{'s' if len(self.folders) != 1 else ''}" if self.folders else ""
        self.query_one("#picker-list-pane").border_title = (
            f"{files} trace{'s' if files != 1 else ''}{folders} · per-step figures of the last profiled step")
        self.query_one("#picker-findings-pane").border_title = "findings"
        table = self.query_one(TraceList)
        table.facts.update(as_explorer(self.app).facts_cache)
        table.reset_rows(0)
        table.focus()
        self._show_findings()
        self.call_after_refresh(self.summarise)     # the first paint does not wait on numpy and the loads

    @work(thread=True, exclusive=True, exit_on_error=False)
    def summarise(self) -> None:
        from mlptui.sources import ssh
        from mlptui.sources.dispatch import open_trace, source_kind
        from mlptui.viewmodels.facts import build_facts  # numpy: after the first paint
        from mlptui.viewmodels.folder_rows import folder_row

        for spec in self.folders:       # names and manifests only: first, so every folder row says what it is
            try:
                row = folder_row(spec)
                self.post_message(self.Summarised(spec, None, row.what, row.label))
            except (MlptuiError, OSError) as exc:
                self.post_message(self.Summarised(spec, None, f"unreadable: {exc}"))
        for spec in self.specs[:len(self.specs) - len(self.folders)]:
            if spec in as_explorer(self.app).facts_cache:
                continue
            kind = source_kind(spec)
            try:
                if kind == "ssh":
                    with bulk_allocation():
                        facts = build_facts(ssh.open_trace(spec, limit=PRELOAD_BYTES))
                elif kind != "local":
                    self.post_message(self.Summarised(spec, None, "remote: enter opens"))
                    continue
                elif Path(spec).stat().st_size > PRELOAD_BYTES:
                    self.post_message(self.Summarised(spec, None, "large: enter opens", _local_label(spec)))
                    continue
                else:
                    with bulk_allocation():
                        facts = build_facts(open_trace(spec))
                self.post_message(self.Summarised(spec, facts, None))
            except ssh.TooLarge as exc:
                self.post_message(self.Summarised(spec, None, "large: enter opens", _manifest_label(exc.manifest, spec)))
            except (MlptuiError, OSError, ValueError) as exc:
                self.post_message(self.Summarised(spec, None, f"unreadable: {exc}"))
            except Exception as exc:   # one trace's failure is its row's text; the others still load
                self.post_message(self.Summarised(spec, None, f"unreadable: {type(exc).__name__}: {exc}"))

    def on_picker_screen_summarised(self, message: Summarised) -> None:
        table = self.query_one(TraceList)
        if message.facts is not None:
            as_explorer(self.app).facts_cache[message.spec] = message.facts
            table.facts[message.spec] = message.facts
        elif message.error:
            table.errors[message.spec] = message.error
        if message.label:
            table.labels[message.spec] = message.label
        table.refresh_text()
        if table.specs and table.specs[table.cursor] == message.spec:
            self._show_findings()

    @when_composed
    def on_screen_resume(self) -> None:
        """Back from a trace: what was loaded meanwhile (a large or remote one opened with enter) fills its row."""
        table = self.query_one(TraceList)
        loaded = {s: f for s, f in as_explorer(self.app).facts_cache.items() if s in table.specs and s not in table.facts}
        if loaded:
            table.facts.update(loaded)
            table.refresh_text()
            self._show_findings()

    def on_line_list_cursor_moved(self, message: LineList.CursorMoved) -> None:
        self._show_findings()

    def on_line_list_chosen(self, message: LineList.Chosen) -> None:
        self.action_open()

    def _current(self) -> str | None:
        table = self.query_one(TraceList)
        return table.specs[table.cursor] if table.specs else None

    def _show_findings(self) -> None:
        spec = self._current()
        self.query_one("#picker-findings-pane", VerticalScroll).scroll_home(animate=False, immediate=True)
        target = self.query_one("#picker-findings", Static)
        if spec is None:
            target.update("no traces here")
            return
        if spec in self.folders:
            table = self.query_one(TraceList)
            state = table.errors.get(spec, "reading…")
            target.update(Text.assemble((printable(table.labels.get(spec, spec)), "bold"), "  ",
                                        (printable(spec), "dim"), "\n", printable(state)))
            return
        facts = as_explorer(self.app).facts_cache.get(spec)
        if facts is None:
            table = self.query_one(TraceList)
            error = table.errors.get(spec)
            target.update(literal(error) if error else Text(printable(spec) + "\nreading…"))
            return
        from mlptui.screens.trace_screen import device_line
        from mlptui.viewmodels.expect_lines import expectation_lines

        lines = [Text(printable(device_line(facts)), "bold"),
                 Text(printable(self.query_one(TraceList).figures_line(facts))),
                 Text(printable(spec.rsplit("/", 1)[-1]), "dim")]
        lines += expectation_lines(facts)
        lines += [Text(printable(line)) for line in facts.findings]
        lines.append(Text("enter: open it · m, then d on another: diff the two", "dim"))
        target.update(Text("\n").join(lines))

    def action_findings_page(self) -> None:
        """A page down the findings; after the last, back to the top (one key reads them all at 80×24)."""
        pane = self.query_one("#picker-findings-pane", VerticalScroll)
        if pane.scroll_y >= pane.max_scroll_y:
            pane.scroll_home(animate=False, immediate=True)
        else:
            pane.scroll_to(y=pane.scroll_y + pane.scrollable_content_region.height, animate=False, immediate=True)

    def action_findings_zoom(self) -> None:
        self.toggle_class("findings-zoomed")     # the list, resized, keeps its cursor row in view

    def action_open(self) -> None:
        spec = self._current()
        if spec in self.folders:
            as_explorer(self.app).list_or_open(spec)       # its ranks, or a list of its traces
        elif spec is not None:
            as_explorer(self.app).open_specs([spec])

    def action_jump(self, n: int) -> None:
        table = self.query_one(TraceList)
        if n <= table.row_count():
            table.move_cursor(n - 1)

    def action_mark(self) -> None:
        table = self.query_one(TraceList)
        spec = self._current()
        if spec in self.folders:
            self.notify("a folder: enter lists its traces, then m marks one", timeout=3)
            return
        table.marked_spec = None if table.marked_spec == spec else spec
        table.refresh_text()
        if table.marked_spec:
            self.notify("marked as A: move to another trace and press d to diff", timeout=3)

    def action_diff(self) -> None:
        table = self.query_one(TraceList)
        spec = self._current()
        if table.marked_spec is None or spec is None or spec == table.marked_spec or spec in self.folders:
            self.notify("mark one trace with m, move to another, then press d", timeout=3)
            return
        marked = table.marked_spec
        table.marked_spec = None        # the mark is spent on this diff: back here, no [A] is left over
        table.refresh_text()
        as_explorer(self.app).open_specs([marked, spec])

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
