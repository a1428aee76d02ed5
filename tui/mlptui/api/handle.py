"""`load(path) -> Trace`: one loaded trace and the figures of `mlptui summary --json` over it.

The whole-trace report is `summarize(trace)`, the function behind `summary --json` (a SummaryReport),
computed once; a step's sections are `profile_sections(trace, step)`, the function behind the report's
sections. Every method returns those or a slice of them, so the API, the CLI and the MCP tools give the
same values."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mlptui.api import compare, dispatch_tree, timeline
from mlptui.api.results import Check, Dispatch, Findings, Memory, Modules, Overview, Table
from mlptui.api.row_order import matching, sorted_by
from mlptui.api.rows import TimelineRow
from mlptui.base.errors import MlptuiError
from mlptui.trace import model
from mlptui.trace.reports.common import StepStats
from mlptui.trace.reports.profile import KernelStat, OperatorStat, ProfileSections
from mlptui.trace.reports.summary import SummaryReport

if TYPE_CHECKING:
    from mlptui.trace.reports.diff import DiffReport

NO_MEMORY = "n/a: no allocator events in the steps (record with profile_memory=True)"
NO_MODULES = "n/a: the trace has no nn.Module frames (record with with_stack=True)"


class Trace:
    """One loaded trace. `step` arguments are the N of ProfilerStep#N, as `mlptui diff --step-a` takes it;
    None is every step together (the whole trace when it has no steps)."""

    def __init__(self, trace: model.Trace) -> None:
        self.trace = trace
        self._report: SummaryReport | None = None
        self._computed: dict[int, ProfileSections] = {}

    @property
    def source(self) -> str:
        return self.trace.source

    def __repr__(self) -> str:
        return f"Trace({self.trace.source!r}, {len(self.trace.steps)} steps)"

    # ---------------------------------------------------------------- the report and its scopes

    def summary(self) -> SummaryReport:
        """`mlptui summary PATH --json`'s document, computed once."""
        if self._report is None:
            from mlptui.trace.analysis.report.summary import summarize

            self._report = summarize(self.trace)
        return self._report

    def _sections(self, index: int | None) -> ProfileSections:
        """The profiler views' sections over every step (None: the summary's own), or over one step, each
        computed once."""
        if index is None:
            return self.summary().profile()
        if index not in self._computed:
            from mlptui.trace.analysis.report.profile_sections import profile_sections

            self._computed[index] = profile_sections(self.trace, index)
        return self._computed[index]

    def _index(self, step: int | None) -> int | None:
        if step is None:
            return None
        from mlptui.trace.diff.trace_diff import step_by_number

        return step_by_number(self.trace, step, "step")

    def scope(self, step: int | None = None) -> str:
        """What a figure over `step` covers: "ProfilerStep#N", "steps" (every step) or "trace" (no steps)."""
        return self._scope(self._index(step))

    def _scope(self, index: int | None) -> str:
        if index is not None:
            return self.trace.steps[index].name
        return "steps" if self.trace.steps else "trace"

    # ---------------------------------------------------------------- the methods

    def step(self, step: int | None = None) -> StepStats:
        """One step's figures (ProfilerStep#`step`), or every step together for None."""
        index = self._index(step)
        r = self.summary()
        return r.total if index is None else next(s for s in r.steps if s.index == index)

    def steps(self) -> Table[StepStats]:
        return Table(self.summary().steps, self._scope(None))

    def overview(self, step: int | None = None) -> Overview:
        """The overview: its rows are the scope's steps (`OverviewRow`), `total` the scope as one."""
        index = self._index(step)
        ov = self._sections(index).overview
        return Overview(scope=self._scope(index), rows=ov.steps, total=ov.total, devices=ov.devices,
                        main_device=ov.main_device,
                        notes={"unlinked": ov.unlinked, "outside_operators": ov.outside_operators})

    def operators(self, step: int | None = None, sort: str | None = None,
                  filter: str | None = None) -> Table[OperatorStat]:
        index = self._index(step)
        rows = self._sections(index).operators
        return Table(sorted_by(matching(rows, filter, ("name",)), sort), self._scope(index))

    def kernels(self, step: int | None = None, sort: str | None = None,
                filter: str | None = None) -> Table[KernelStat]:
        """The kernels view: per raw name over the scope (the report's `kernel_stats`); `filter` matches the
        raw or the short name."""
        index = self._index(step)
        rows = self._sections(index).kernel_stats
        return Table(sorted_by(matching(rows, filter, ("name", "short")), sort), self._scope(index))

    def memory(self) -> Memory:
        mem = self._sections(None).memory
        if mem is None:
            return Memory(False, NO_MEMORY, [], [], [])
        return Memory(True, None, mem.ops, mem.devices, mem.unfreed)

    def modules(self) -> Modules:
        mods = self._sections(None).modules
        if mods is None:
            return Modules(False, NO_MODULES, [])
        return Modules(True, None, list(mods))

    def dispatch(self, op_or_path: str | list[str], depth: int | None = None) -> Dispatch:
        """The dispatch subtree below an op (or a path such as "aten::linear → aten::addmm") with the
        kernels each op launched, from the report's `dispatch` section."""
        want = dispatch_tree.parse_op(op_or_path)
        contexts, rows = dispatch_tree.subtree(self.summary().dispatch, want, depth)
        return Dispatch(op=want, contexts=contexts, rows=rows, cut_below=depth)

    def timeline(self, start_us: float, end_us: float, lanes: list[str] | None = None) -> Table[TimelineRow]:
        return Table(timeline.window(self.trace, start_us, end_us, lanes), f"{start_us}-{end_us} µs")

    def lanes(self) -> list[str]:
        """The lanes `timeline` can keep: "cpu PID/TID" per thread, "gpu DEVICE/STREAM" per stream."""
        return timeline.lane_names(self.trace)

    def diff(self, other: Trace, step: int | None = None, other_step: int | None = None) -> DiffReport:
        """`other` against this trace (`mlptui diff THIS OTHER --json`), aligned on ProfilerStep#`step` of
        this one and #`other_step` of the other (default: each one's median step)."""
        return compare.diff(self.trace, other.trace, step, other_step)

    def check(self, expectations: list[str] | str) -> Check:
        """Each expectation (docs/check.md) against this trace, as `mlptui check` judges it."""
        return compare.check(self.trace, compare.parse_all(expectations))

    def findings(self) -> Findings:
        r = self.summary()
        return Findings(lines=r.findings, recommendations=r.recommendations,
                        attention=r.attention)


def load(path: str | Path) -> Trace:
    """Load a trace as `mlptui summary` does: a file, a folder holding one trace, `host:path` over ssh, or
    `hf://`. A folder of several traces is not one trace: `load_run(folder)` reports a run's ranks."""
    from mlptui.gc_policy import bulk_allocation
    from mlptui.sources.dispatch import is_folder, list_traces
    from mlptui.sources.dispatch import open_trace as open_source

    spec = str(path)
    if is_folder(spec):
        found = list_traces(spec)
        if len(found) != 1:
            raise MlptuiError(f"{spec} is a folder of {len(found)} trace(s): load one of them, or load_run() "
                              "a folder of rank traces")
        spec = found[0]
    with bulk_allocation():
        return Trace(open_source(spec))
