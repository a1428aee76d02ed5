"""Every view's view-model over one trace, and the diff of two, as the app and the CLI build them.

`open_every_view(trace)` builds what the profiler views show (overview, operators, kernels, memory,
modules) in every scope (all steps, then each step) and both groupings, their table cells and details
panes, and the trace screen's facts and launch lists; `open_the_diff(a, b)` builds the diff the diff
screen and `mlptui diff` show (text, Markdown, JSON, the CPU section and the pair details). Used by the
fuzz target and by the tests that open hostile or odd traces: any exception here is a view that fails
to open. Texts are encoded to UTF-8 the way the terminal gets them (no lone surrogate).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from mlptui.base.text import printable
from mlptui.render.diff_text import render_markdown, render_text
from mlptui.trace.analysis.steps.breakdown import scope_label
from mlptui.trace.diff.trace_diff import diff_traces
from mlptui.viewmodels.diff_cpu_section import cpu_section
from mlptui.viewmodels.diff_details import pair_details
from mlptui.viewmodels.facts import add_launches, build_facts, call_stats
from mlptui.viewmodels.profile_details import memory_peaks, module_detail, operator_detail
from mlptui.viewmodels.profile_views import ProfileViews, overview_text, regrouped
from mlptui.widgets.launches import summary_line
from mlptui.widgets.literal import literal
from mlptui.widgets.profile_tables import KernelStatsTable, MemoryOpTable, ModuleTable, OperatorTable

MAX_STEPS = 4          # scopes built per trace besides "all steps": the first, the last and two between
MAX_ROWS = 12          # table rows whose cells and details panes are built per view


def _spread(n: int, limit: int) -> list[int]:
    return list(range(0, n, max(1, -(-n // limit))))


def _encode(value: Any) -> None:
    text = value.plain if hasattr(value, "plain") else str(value)
    text.encode("utf-8")


def _shown_as_written(text: str) -> None:
    """A name or line as a pane, title or notification shows it: as written, control characters spelled
    out, whatever markup it looks like."""
    if literal(text).plain != printable(text):
        raise AssertionError(f"not shown as written: {text!r}")
    _encode(literal(text))


def open_every_view(trace: Any, width: int = 100) -> None:
    facts = build_facts(trace)
    add_launches(facts)
    views = ProfileViews(trace)
    scopes: list[int | None] = [None] + _spread(len(trace.steps), MAX_STEPS)
    if trace.steps and len(trace.steps) - 1 not in scopes:
        scopes.append(len(trace.steps) - 1)
    for line in facts.findings:
        _shown_as_written(line)
    for s in trace.steps[:MAX_ROWS]:
        _shown_as_written(s.name)
    for step in scopes:
        calls = call_stats(facts, step)
        if calls:
            _shown_as_written(summary_line(calls))
        _shown_as_written(scope_label(trace, step))
        data = views.build(step)
        _encode(overview_text(data, width))
        json.dumps(dataclasses.asdict(data.overview), allow_nan=False)      # no NaN or infinity in --json
        json.dumps([dataclasses.asdict(r) for r in data.recommendations], allow_nan=False)
        for kind, rows in ((OperatorTable, data.operators), (OperatorTable, regrouped(data, "operators-shapes")),
                           (KernelStatsTable, data.kernels), (KernelStatsTable, regrouped(data, "kernels-op")),
                           (ModuleTable, data.modules or []),
                           (MemoryOpTable, data.memory.ops if data.memory is not None else [])):
            table = kind()                  # the table's own cells and sort keys, with no app around it
            if isinstance(table, KernelStatsTable):
                table.set_trace(trace)
            table.rows = list(rows)
            for i in _spread(len(rows), MAX_ROWS):
                for cell in table.row_cells(i):
                    _encode(cell[0] if isinstance(cell, tuple) else cell)
                for key in table.KEYS:
                    key(rows[i])
        for i in _spread(len(data.operators), MAX_ROWS):
            _encode(operator_detail(trace, data.operators[i]))
        for i in _spread(len(data.modules or []), MAX_ROWS):
            _encode(module_detail((data.modules or [])[i]))
        if data.memory is not None:
            _encode(memory_peaks(data.memory))


def open_the_diff(a: Any, b: Any) -> None:
    pairs: list[tuple[int | None, int | None]] = [(None, None)]
    if a.steps and b.steps:
        pairs.append((len(a.steps) - 1, 0))
    for step_a, step_b in pairs:
        d = diff_traces(a, b, step_a, step_b)
        doc = d.report()
        json.dumps(dataclasses.asdict(doc), allow_nan=False)       # no NaN or infinity in --json
        for only_diff in (False, True):
            render_text(doc, width=100, only_diff=only_diff).encode("utf-8")
            render_markdown(doc, only_diff=only_diff).encode("utf-8")
        for line in cpu_section(d):
            _encode(line.a + line.a_value + line.b + line.b_value + line.delta_text + line.status)
        for i in _spread(len(d.rows), MAX_ROWS):
            for text in pair_details(d, d.rows[i]):
                _encode(text)
