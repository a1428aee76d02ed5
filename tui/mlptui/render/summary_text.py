"""`mlptui summary` as text and Markdown: the summary report (mlptui.trace.reports.summary) read by attribute,
its critical path included. The caller makes its strings terminal-safe first (commands.output.safe_doc)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlptui.base.units import duration
from mlptui.render.profile_text import render_profile_markdown, render_profile_text
from mlptui.render.tables import md_escape, md_table, text_table
from mlptui.trace.analysis.critical_path.critical_graph import KINDS
from mlptui.trace.analysis.critical_path.critical_path_report import label
from mlptui.trace.names.distinct import distinct_labels
from mlptui.trace.names.kernel import decode_kernel
from mlptui.trace.reports.common import DeviceArch, StepStats
from mlptui.trace.reports.summary import CriticalPathStep, DeviceMarks, SummaryReport

Table = Callable[[list[str], list[list[str]], set[int]], list[str]]
MdTable = Callable[[list[str], list[list[str]]], list[str]]


def _device_line(dev: dict[str, Any] | None, arch: DeviceArch, gpu_ops: int) -> str:
    if not dev:
        if gpu_ops:
            return "device: not named in the trace (no deviceProperties)"
        return "device: none recorded (CPU-only trace or no deviceProperties)"
    name = str(dev.get("name") or "").strip()
    parts = [name] if name else [] if arch.arch else ["(unnamed device)"]   # unnamed: its architecture says it
    if arch.arch:
        parts.append(f"{arch.vendor} {arch.arch}" if arch.vendor == "AMD" else arch.arch)
    if arch.count:
        parts.append(f"{arch.count} {arch.units}")
    return "device: " + ", ".join(parts)


# "own": the step's own GPU work (by launch); "device": all work on the device in the step's window.
_STEP_HEAD = ["step", "CPU", "own GPU busy", "own GPU idle", "device busy", "device idle", "kernels", "launches",
              "launch ovh", "verdict"]
_STEP_RIGHT = {1, 2, 3, 4, 5, 6, 7, 8}


def _step_rows(r: SummaryReport, top: int) -> list[list[str]]:
    steps: list[StepStats | str] = list(r.steps)
    if len(steps) > top:      # first and last steps; --json has them all
        head = steps[: top // 2]
        tail = steps[len(steps) - (top - len(head)):]
        steps = [*head, f"… {len(steps) - len(head) - len(tail)} more", *tail]
    return [[s] + [""] * (len(_STEP_HEAD) - 1) if isinstance(s, str) else _step_row(s) for s in [*steps, r.total]]


def _step_row(s: StepStats) -> list[str]:
    return [s.name, duration(s.cpu_us), duration(s.gpu_busy_us), duration(s.gpu_idle_us),
            duration(s.device_busy_us), duration(s.device_idle_us), str(s.kernels),
            str(s.launches), duration(s.launch_overhead_us), s.verdict]


def _manifest_line(r: SummaryReport) -> str | None:
    m = r.manifest
    if not m:
        return None
    keys = [k for k in ("workload", "mode", "dtype") if m.get(k)]
    return "run: " + ", ".join(f"{k} {m[k]}" for k in keys) if keys else None


def _counts_line(r: SummaryReport) -> str:
    c = r.counts
    line = (f"{c.cpu_ops} CPU slices on {c.threads} thread(s), {c.gpu_ops} GPU ops on "
            f"{c.streams} stream(s), {c.steps} step(s)")
    return line + (f", {c.unlinked_gpu_ops} GPU op(s) with no launching call found" if c.unlinked_gpu_ops else "")


def _unknown_why(r: SummaryReport) -> str:
    problems = {p.kind: p for p in r.integrity.problems}
    for kind in ("truncated", "launches_without_device_work", "steps_incomplete"):
        if kind in problems:
            return problems[kind].detail
    return "the trace's integrity problems leave it open"


def _verdict_line(r: SummaryReport) -> str:
    t = r.total
    if t.verdict == "unknown":
        return f"verdict: unknown ({t.name}: {_unknown_why(r)})"
    if t.verdict == "cpu-only":
        return f"verdict: cpu-only ({t.name} put no work on the GPU)"
    if t.verdict == "gpu-not-recorded":
        return (f"verdict: unknown ({t.name} made {t.launches} launch call(s), but the trace holds no GPU "
                "activity: the device side was not recorded)")
    rel = ">" if t.verdict == "overhead-bound" else "<="
    line = (f"verdict: {t.verdict} ({t.name}: device idle {duration(t.device_idle_us)} {rel} "
            f"device busy {duration(t.device_busy_us)}")
    if abs(t.device_busy_us - t.gpu_busy_us) > 0.01 * max(t.device_busy_us, 1.0):
        line += f"; of that, work the step(s) launched: {duration(t.gpu_busy_us)}"
    return line + ")"


def kernel_labels(r: SummaryReport) -> dict[str, str]:
    """Each kernel of the summary by its short name as the report has it (dtype settled by the launching
    ops' inputs; the raw names are in --json), as the views show it: kernels whose short names are alike
    get the words of their raw names that differ (mlptui.trace.names.distinct), one label per raw name in
    every table of the summary."""
    rows = [(k.name, k.short) for k in r.kernels] + [(k.name, k.short) for k in r.kernel_stats]
    shorts = {name: short for name, short in rows if short}
    names = [name for name, _ in rows] + [k for row in r.dispatch for k in row.gpu_kernels]
    return distinct_labels(names, lambda raw: shorts.get(raw) or decode_kernel(raw).short)


def render_text(r: SummaryReport, top: int = 15) -> str:
    out = [f"trace: {r.source}", _device_line(r.device, r.device_arch, r.counts.gpu_ops), _counts_line(r),
           _verdict_line(r)]
    if (line := _manifest_line(r)) is not None:
        out.append(line)
    for w in r.warnings:
        out.append(f"warning: {w}")
    if r.findings:
        out += ["", "findings"] + [f"  {line}" for line in r.findings]
    out += ["", "steps"] + ["  " + row for row in text_table(_STEP_HEAD, _step_rows(r, top), _STEP_RIGHT)]
    out.append(f"  verdict rule: {r.verdict_rule}")
    labels = kernel_labels(r)
    if r.kernels:
        rows = [[labels[k.name], k.family, k.library, str(k.count), duration(k.total_us), duration(k.mean_us)]
                for k in r.kernels[:top]]
        out += ["", f"kernels ({len(r.kernels)} distinct, most time first)"]
        out += ["  " + row for row in text_table(["kernel", "family", "library", "count", "total", "mean"], rows,
                                             {3, 4, 5})]
    if r.memory_ops:
        rows = [[m.name, m.kind, str(m.count), duration(m.total_us)] for m in r.memory_ops[:top]]
        out += ["", "memcpy / memset"] + ["  " + row for row in text_table(["name", "kind", "count", "total"], rows, {2, 3})]
    if r.launch_calls:
        rows = [[c.name, c.kind, str(c.count), duration(c.total_us)] for c in r.launch_calls[:top]]
        out += ["", "runtime / driver calls"]
        out += ["  " + row for row in text_table(["call", "kind", "count", "total"], rows, {2, 3})]
    if r.dispatch:
        out += ["", "dispatch (CPU path -> kernels it launched)"]
        for path in r.dispatch[:top]:
            out.append(f"  {path.count}× " + " → ".join(path.path) + ("" if path.gpu_kernels else "  (no GPU)"))
            for k in path.gpu_kernels:
                out.append(f"       ⤷ {labels[k]}")
        if len(r.dispatch) > top:
            out.append(f"  … {len(r.dispatch) - top} more paths (--json has them all)")
    out += _marks_text(r.device_marks)
    out += critical_path_text(r, text_table, top)
    out += render_profile_text(r.profile(), labels, top)
    return "\n".join(out) + "\n"


def _marks_text(marks: DeviceMarks | None) -> list[str]:
    """Stream synchronisations and hardware-counter samples, when the trace has them."""
    out: list[str] = []
    if marks and marks.syncs:
        rows = [[f"GPU {s.device} stream {s.stream}", s.name, str(s.count), duration(s.total_us)] for s in marks.syncs]
        out += ["", "stream synchronisation (the host waiting on a stream; not GPU work)"]
        out += ["  " + row for row in text_table(["stream", "kind", "count", "total"], rows, {2, 3})]
    if marks and marks.counters:
        rows = [[f"GPU {c.device}", c.metric, str(c.samples), f"{c.min:g}", f"{c.mean:g}", f"{c.max:g}"]
                for c in marks.counters]
        out += ["", "hardware counters (measured, CUPTI PM sampling)"]
        out += ["  " + row for row in text_table(["device", "metric", "samples", "min", "mean", "max"], rows,
                                             {2, 3, 4, 5})]
    return out


def render_markdown(r: SummaryReport, top: int = 15) -> str:
    out = [f"### Trace summary: `{r.source}`", "", _device_line(r.device, r.device_arch, r.counts.gpu_ops), "",
           _counts_line(r), "",
           f"**{_verdict_line(r)}**"]
    if (line := _manifest_line(r)) is not None:
        out += ["", line]
    for w in r.warnings:
        out += ["", f"> warning: {md_escape(w)}"]
    if r.findings:
        out += ["", "#### Findings", ""] + [f"- {md_escape(line)}" for line in r.findings]
    out += ["", "#### Steps", ""] + md_table(_STEP_HEAD, _step_rows(r, top))
    out += ["", f"Verdict rule: {r.verdict_rule}."]
    labels = kernel_labels(r)
    if r.kernels:
        out += ["", "#### Kernels", ""]
        out += md_table(["kernel", "family", "library", "count", "total", "mean"],
                         [[labels[k.name], k.family, k.library, str(k.count), duration(k.total_us),
                           duration(k.mean_us)] for k in r.kernels[:top]])
    if r.memory_ops:
        out += ["", "#### Memcpy / memset", ""]
        out += md_table(["name", "kind", "count", "total"],
                         [[m.name, m.kind, str(m.count), duration(m.total_us)] for m in r.memory_ops[:top]])
    if r.launch_calls:
        out += ["", "#### Runtime / driver calls", ""]
        out += md_table(["call", "kind", "count", "total"],
                         [[c.name, c.kind, str(c.count), duration(c.total_us)] for c in r.launch_calls[:top]])
    if r.dispatch:
        out += ["", "#### Dispatch", ""]
        out += md_table(["count", "CPU path", "kernels"],
                         [[str(p.count), " → ".join(p.path), ", ".join(labels[k] for k in p.gpu_kernels) or "(no GPU)"]
                          for p in r.dispatch[:top]])
    out += critical_path_markdown(r, md_table, top)
    out += render_profile_markdown(r.profile(), labels, top)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- the critical path

_CP_HEAD = ["step", "length", *KINDS, "GPU share"]
_CP_LABEL = {"launch_delay": "launch delay", "sync_wait": "sync wait"}


def _cp_rows(steps: list[CriticalPathStep], top: int) -> list[list[str]]:
    if len(steps) > top:
        steps = steps[: top // 2] + steps[len(steps) - (top - top // 2):]
    return [[s.step, duration(s.length_us), *(duration(s.breakdown_us[k]) for k in KINDS),
             f"{s.gpu_share * 100:.0f}%"] for s in steps]


def _cp_detail(s: CriticalPathStep, top: int, shorts: dict[str, str]) -> tuple[list[list[str]], list[str]]:
    gain = {w.name: w.step_us for w in s.what_if}
    rows = [[label(t.name, t.kind, shorts), t.kind, duration(t.us),
             duration(gain[t.name]) if t.name in gain else "n/a"] for t in s.top[:top]]
    notes = []
    if abs(s.remainder_us) >= 0.001:
        notes.append(f"path length differs from the step window by {duration(s.remainder_us)}")
    if s.unexplained_us > 0:
        notes.append(f"{duration(s.unexplained_us)} of the path follows no recorded dependency "
                     "(work that starts on its own: another thread, work queued before the step)")
    return rows, notes


def _shorts(r: SummaryReport) -> dict[str, str]:
    """The report's short name of each kernel (cuDNN's f16 told bf16 by its op's inputs)."""
    return {k.name: k.short for k in r.kernels if k.short}


def critical_path_text(r: SummaryReport, table: Table, top: int) -> list[str]:
    cp = r.critical_path
    if not cp.steps:
        return []
    head = [_CP_LABEL.get(h, h) for h in _CP_HEAD]
    out = ["", "critical path (the chain of dependent work that ends last; by kind of time)"]
    out += ["  " + row for row in table(head, _cp_rows(cp.steps, top), set(range(1, len(head))))]
    last = cp.steps[-1]
    rows, notes = _cp_detail(last, top, _shorts(r))
    if rows:
        out += ["", f"  {last.step}: most time on the path, and the step without it (what-if)"]
        out += ["  " + row for row in table(["name", "kind", "on path", "step without it"], rows, {2, 3})]
    out += [f"  note: {n}" for n in notes] + [f"  note: {cp.collectives}"]
    return out


def critical_path_markdown(r: SummaryReport, md_table: MdTable, top: int) -> list[str]:
    cp = r.critical_path
    if not cp.steps:
        return []
    out = ["", "#### Critical path", ""] + md_table([_CP_LABEL.get(h, h) for h in _CP_HEAD], _cp_rows(cp.steps, top))
    last = cp.steps[-1]
    rows, notes = _cp_detail(last, top, _shorts(r))
    if rows:
        out += ["", f"{last.step}: most time on the path, and the step without it (what-if)", ""]
        out += md_table(["name", "kind", "on path", "step without it"], rows)
    out += [""] + [f"- {n}" for n in [*notes, cp.collectives]]
    return out
