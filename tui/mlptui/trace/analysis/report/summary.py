"""The headless report of one trace: `summarize(trace) -> dict`, and its text and Markdown renderings.

JSON shape (`mlptui summary PATH --json`; times in µs rounded to ns, lists sorted as stated):

    {
      "source": str,                       # what the user named (path, host:path, hf://...)
      "format": "kineto",
      "device": {"name": str, ...} | null, # deviceProperties of the GPU that ran the kernels, as recorded
      "device_arch": {"vendor": "NVIDIA" | "AMD" | "unknown", "arch": "sm_90" | "gfx942" | null,
                      "units": "SMs" | "CUs" | "units", "count": int | null},
      "warnings": [str],                   # what the loader skipped or could not nest
      "integrity": {"ok": bool, "problems": [{"kind": str, "count": int, "detail": str}], "notes": [str]},
                                           # whether the trace can be trusted (analysis/steps/integrity.py)
      "manifest": {...} | null,            # the runner's entry for this trace (workload, mode, ...), if any
      "findings": [str],                   # the last step at a glance: kernels, launch path, GEMM chain
      "attention": {…}|null,               # attention findings' figures (analysis/attention/attention.py), null if none
      "counts": {"events": int, "cpu_ops": int, "gpu_ops": int, "threads": int, "streams": int,
                 "steps": int, "unlinked_gpu_ops": int},   # GPU work with no launch call or op found
      "verdict_rule": str,                 # the rule behind every "verdict" below, in words
      "steps": [                           # one per ProfilerStep#N, in time order
        {"index": int, "name": "ProfilerStep#2", "cpu_us": f, "gpu_busy_us": f, "gpu_idle_us": f,
         "kernels": int, "launches": int, "launch_overhead_us": f,
         "window_us": f, "device_busy_us": f, "device_idle_us": f,   # all work on the device in the window
         "verdict": "overhead-bound" | "compute-bound" | "cpu-only" | "gpu-not-recorded" | "unknown"}
      ],                                   # gpu_busy/idle: the step's own work (by launch); device_*: utilisation
      "total": {same keys as a step},      # all steps together, overlapping windows counted once
                                           # (the whole trace when it has no steps)
      "kernels": [                         # kernel events only, grouped by raw name, most time first
        {"name": raw, "short": str, "family": str, "library": str, "count": int,
         "total_us": f, "mean_us": f}
      ],
      "memory_ops": [                      # memcpy and memset on the GPU, grouped the same way
        {"name": raw, "kind": "memcpy" | "memset", "count": int, "total_us": f, "mean_us": f}
      ],
      "launch_calls": [                    # runtime/driver calls, grouped by name, most time first
        {"name": "cuLaunchKernelEx", "kind": "launch" | "occupancy" | "memset" | "memcpy" | "attribute"
                                             | "sync" | "graph" | "other", "count": int, "total_us": f}
      ],
      "dispatch": [                        # every distinct leaf path of the steps (the whole trace without
                                           # steps), and every path ending at an op that launched kernels
        {"path": [op and annotation names from the outermost op of a step (below ProfilerStep#N) down
                  to the last op; Python frames left out], "count": int (how many times that path ran
                  with those kernels),
         "gpu_kernels": [raw names of the kernels the last op launched, in order; [] for none],
         "gpu_us": f (their total GPU time over all occurrences)}
      ],
      "critical_path": {...}               # per step, the longest chain of dependent work (docs/json.md)
    }
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlptui.base.units import duration
from mlptui.trace.analysis.advice.findings import trace_findings
from mlptui.trace.analysis.critical_path.critical_path_report import (
    critical_path_dict,
    render_critical_path_markdown,
    render_critical_path_text,
)
from mlptui.trace.analysis.events.device_arch import device_arch
from mlptui.trace.analysis.events.launches import launch_calls
from mlptui.trace.analysis.events.tables import tables, unique_ids
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.analysis.operators.dispatch import dispatch_paths
from mlptui.trace.analysis.report.profile_sections import kernel_labels, profile_sections, sections_by_key
from mlptui.trace.analysis.steps.integrity import integrity
from mlptui.trace.analysis.steps.steps import VERDICT_RULE, StepStats, all_step_stats, step_stats
from mlptui.trace.model import KERNEL, MEMCPY, MEMSET, Trace
from mlptui.trace.names.kernel import decode_kernel


def _r(x: float) -> float:
    return round(x, 3)


def _kernel_name(raw: str, trace: Trace | None = None) -> tuple[str, str, str]:
    k = decode_kernel(raw) if trace is None else kernel_name(trace, raw)
    return k.short, k.family, k.library


def _step_dict(s: StepStats) -> dict[str, Any]:
    d = s.to_dict()
    for key in ("cpu_us", "gpu_busy_us", "gpu_idle_us", "launch_overhead_us", "window_us", "device_busy_us",
                "device_idle_us"):
        d[key] = _r(d[key])
    return d


def _grouped(trace: Trace, cats: frozenset[str]) -> list[tuple[str, str, int, float]]:
    """(name, category, count, total µs) of the GPU ops of `cats`, by name, most time first."""
    t = tables(trace)
    pick = np.flatnonzero(t.gpu_is(cats))
    names, first, inverse = unique_ids(t.gpu_name[pick], return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(names)).tolist()
    totals = np.bincount(inverse, weights=t.gpu_dur[pick], minlength=len(names)).tolist()   # in order, as +=
    cat_of = t.gpu_cat[pick[first]].tolist()
    rows = [(t.strings[name], t.strings[cat], n, total)
            for name, cat, n, total in zip(names.tolist(), cat_of, counts, totals, strict=True)]
    rows.sort(key=lambda r: (-r[3], r[0]))
    return rows


def device_marks_section(trace: Trace) -> dict[str, Any] | None:
    from mlptui.trace.analysis.steps.device_marks import device_marks_section as section

    return section(trace)


def _attention(trace: Trace) -> dict[str, Any] | None:
    from mlptui.trace.analysis.attention.attention import attention_dict, attention_facts

    facts = attention_facts(trace)
    return attention_dict(facts) if facts is not None else None


def summarize(trace: Trace) -> dict[str, Any]:
    t = tables(trace)
    kernels = []
    for name, _cat, n, total in _grouped(trace, frozenset({KERNEL})):
        short, family, library = _kernel_name(name, trace)
        kernels.append({"name": name, "short": short, "family": family, "library": library, "count": n,
                        "total_us": _r(total), "mean_us": _r(total / n)})
    memory = [{"name": name, "kind": "memcpy" if cat == MEMCPY else "memset", "count": n,
               "total_us": _r(total), "mean_us": _r(total / n)}
              for name, cat, n, total in _grouped(trace, frozenset({MEMCPY, MEMSET}))]
    return {
        "source": trace.source,
        "format": trace.format,
        "device": trace.device,
        "device_arch": device_arch(trace.device, trace.meta).to_dict(),
        "warnings": list(trace.warnings),
        "integrity": integrity(trace).to_dict(),
        "manifest": trace.manifest,
        "findings": trace_findings(trace),
        "attention": _attention(trace),
        "counts": {"events": trace.meta.get("events", 0), "cpu_ops": t.n_ops, "gpu_ops": t.n_gpu,
                   "threads": len(trace.threads), "streams": len(trace.streams), "steps": len(trace.steps),
                   "unlinked_gpu_ops": int(((t.gpu_launch < 0) & (t.gpu_op < 0)).sum())},
        "verdict_rule": VERDICT_RULE,
        "steps": [_step_dict(s) for s in all_step_stats(trace)],
        "total": _step_dict(step_stats(trace, None)),
        "kernels": kernels,
        "memory_ops": memory,
        "launch_calls": [{"name": c.name, "kind": c.kind, "count": c.count, "total_us": _r(c.total_us)}
                         for c in launch_calls(trace)],
        "dispatch": dispatch_paths(trace),
        "device_marks": device_marks_section(trace),
        "critical_path": critical_path_dict(trace),
        **sections_by_key(profile_sections(trace)),
    }


# ---------------------------------------------------------------- renderings

def _device_line(d: dict[str, Any]) -> str:
    dev = d.get("device")
    if not dev:
        if d["counts"]["gpu_ops"]:
            return "device: not named in the trace (no deviceProperties)"
        return "device: none recorded (CPU-only trace or no deviceProperties)"
    arch = d.get("device_arch") or {}
    name = str(dev.get("name") or "").strip()
    parts = [name] if name else [] if arch.get("arch") else ["(unnamed device)"]   # unnamed: its architecture says it
    if arch.get("arch"):
        parts.append(f"{arch['vendor']} {arch['arch']}" if arch.get("vendor") == "AMD" else arch["arch"])
    if arch.get("count"):
        parts.append(f"{arch['count']} {arch['units']}")
    return "device: " + ", ".join(parts)


def _table(headers: list[str], rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]


def _step_rows(d: dict[str, Any], top: int) -> list[list[str]]:
    steps = d["steps"]
    if len(steps) > top:      # first and last steps; --json has them all
        head = steps[: top // 2]
        tail = steps[len(steps) - (top - len(head)):]
        gap = {"name": f"… {len(steps) - len(head) - len(tail)} more", "cpu_us": None}
        steps = head + [gap] + tail
    rows = [*steps, d["total"]]
    return [[s["name"]] + [""] * (len(_STEP_HEAD) - 1) if s["cpu_us"] is None else _step_row(s) for s in rows]


def _step_row(s: dict[str, Any]) -> list[str]:
    return [s["name"], duration(s["cpu_us"]), duration(s["gpu_busy_us"]), duration(s["gpu_idle_us"]),
            duration(s["device_busy_us"]), duration(s["device_idle_us"]), str(s["kernels"]),
            str(s["launches"]), duration(s["launch_overhead_us"]), s["verdict"]]


# "own": the step's own GPU work (by launch); "device": all work on the device in the step's window.
_STEP_HEAD = ["step", "CPU", "own GPU busy", "own GPU idle", "device busy", "device idle", "kernels", "launches",
              "launch ovh", "verdict"]
_STEP_RIGHT = {1, 2, 3, 4, 5, 6, 7, 8}


def _manifest_line(d: dict[str, Any]) -> str | None:
    m = d.get("manifest")
    if not m:
        return None
    keys = [k for k in ("workload", "mode", "dtype") if m.get(k)]
    return "run: " + ", ".join(f"{k} {m[k]}" for k in keys) if keys else None


def _counts_line(d: dict[str, Any]) -> str:
    c = d["counts"]
    line = (f"{c['cpu_ops']} CPU slices on {c['threads']} thread(s), {c['gpu_ops']} GPU ops on "
            f"{c['streams']} stream(s), {c['steps']} step(s)")
    return line + (f", {c['unlinked_gpu_ops']} GPU op(s) with no launching call found" if c["unlinked_gpu_ops"] else "")


def _unknown_why(d: dict[str, Any]) -> str:
    problems = {p["kind"]: p for p in (d.get("integrity") or {}).get("problems") or []}
    for kind in ("truncated", "launches_without_device_work", "steps_incomplete"):
        if kind in problems:
            return str(problems[kind]["detail"])
    return "the trace's integrity problems leave it open"


def _verdict_line(d: dict[str, Any]) -> str:
    t = d["total"]
    if t["verdict"] == "unknown":
        return f"verdict: unknown ({t['name']}: {_unknown_why(d)})"
    if t["verdict"] == "cpu-only":
        return f"verdict: cpu-only ({t['name']} put no work on the GPU)"
    if t["verdict"] == "gpu-not-recorded":
        return (f"verdict: unknown ({t['name']} made {t['launches']} launch call(s), but the trace holds no GPU "
                "activity: the device side was not recorded)")
    rel = ">" if t["verdict"] == "overhead-bound" else "<="
    line = (f"verdict: {t['verdict']} ({t['name']}: device idle {duration(t['device_idle_us'])} {rel} "
            f"device busy {duration(t['device_busy_us'])}")
    if abs(t["device_busy_us"] - t["gpu_busy_us"]) > 0.01 * max(t["device_busy_us"], 1.0):
        line += f"; of that, work the step(s) launched: {duration(t['gpu_busy_us'])}"
    return line + ")"


def render_text(d: dict[str, Any], top: int = 15) -> str:
    out = [f"trace: {d['source']}", _device_line(d), _counts_line(d), _verdict_line(d)]
    if (line := _manifest_line(d)) is not None:
        out.append(line)
    for w in d["warnings"]:
        out.append(f"warning: {w}")
    if d["findings"]:
        out += ["", "findings"] + [f"  {line}" for line in d["findings"]]
    out += ["", "steps"] + ["  " + r for r in _table(_STEP_HEAD, _step_rows(d, top), _STEP_RIGHT)]
    out.append(f"  verdict rule: {d['verdict_rule']}")
    labels = kernel_labels(d)
    if d["kernels"]:
        rows = [[labels[k["name"]], k["family"], k["library"], str(k["count"]), duration(k["total_us"]), duration(k["mean_us"])]
                for k in d["kernels"][:top]]
        out += ["", f"kernels ({len(d['kernels'])} distinct, most time first)"]
        out += ["  " + r for r in _table(["kernel", "family", "library", "count", "total", "mean"], rows, {3, 4, 5})]
    if d["memory_ops"]:
        rows = [[m["name"], m["kind"], str(m["count"]), duration(m["total_us"])] for m in d["memory_ops"][:top]]
        out += ["", "memcpy / memset"] + ["  " + r for r in _table(["name", "kind", "count", "total"], rows, {2, 3})]
    if d["launch_calls"]:
        rows = [[c["name"], c["kind"], str(c["count"]), duration(c["total_us"])] for c in d["launch_calls"][:top]]
        out += ["", "runtime / driver calls"]
        out += ["  " + r for r in _table(["call", "kind", "count", "total"], rows, {2, 3})]
    if d["dispatch"]:
        out += ["", "dispatch (CPU path -> kernels it launched)"]
        for row in d["dispatch"][:top]:
            out.append(f"  {row['count']}× " + " → ".join(row["path"]) + ("" if row["gpu_kernels"] else "  (no GPU)"))
            for k in row["gpu_kernels"]:
                out.append(f"       ⤷ {labels[k]}")
        if len(d["dispatch"]) > top:
            out.append(f"  … {len(d['dispatch']) - top} more paths (--json has them all)")
    out += _marks_text(d.get("device_marks"))
    out += render_critical_path_text(d, _table, top)
    return "\n".join(out) + "\n"


def _marks_text(marks: dict[str, Any] | None) -> list[str]:
    """Stream synchronisations and hardware-counter samples, when the trace has them."""
    out: list[str] = []
    if marks and marks["syncs"]:
        rows = [[f"GPU {s['device']} stream {s['stream']}", s["name"], str(s["count"]), duration(s["total_us"])]
                for s in marks["syncs"]]
        out += ["", "stream synchronisation (the host waiting on a stream; not GPU work)"]
        out += ["  " + r for r in _table(["stream", "kind", "count", "total"], rows, {2, 3})]
    if marks and marks["counters"]:
        rows = [[f"GPU {c['device']}", c["metric"], str(c["samples"]), f"{c['min']:g}", f"{c['mean']:g}",
                 f"{c['max']:g}"] for c in marks["counters"]]
        out += ["", "hardware counters (measured, CUPTI PM sampling)"]
        out += ["  " + r for r in _table(["device", "metric", "samples", "min", "mean", "max"], rows, {2, 3, 4, 5})]
    return out


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _md_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(_md_escape(c) for c in r) + " |" for r in rows]


def render_markdown(d: dict[str, Any], top: int = 15) -> str:
    out = [f"### Trace summary: `{d['source']}`", "", _device_line(d), "", _counts_line(d), "",
           f"**{_verdict_line(d)}**"]
    if (line := _manifest_line(d)) is not None:
        out += ["", line]
    for w in d["warnings"]:
        out += ["", f"> warning: {_md_escape(w)}"]
    if d["findings"]:
        out += ["", "#### Findings", ""] + [f"- {_md_escape(line)}" for line in d["findings"]]
    out += ["", "#### Steps", ""] + _md_table(_STEP_HEAD, _step_rows(d, top))
    out += ["", f"Verdict rule: {d['verdict_rule']}."]
    labels = kernel_labels(d)
    if d["kernels"]:
        out += ["", "#### Kernels", ""]
        out += _md_table(["kernel", "family", "library", "count", "total", "mean"],
                         [[labels[k["name"]], k["family"], k["library"], str(k["count"]), duration(k["total_us"]),
                           duration(k["mean_us"])] for k in d["kernels"][:top]])
    if d["memory_ops"]:
        out += ["", "#### Memcpy / memset", ""]
        out += _md_table(["name", "kind", "count", "total"],
                         [[m["name"], m["kind"], str(m["count"]), duration(m["total_us"])] for m in d["memory_ops"][:top]])
    if d["launch_calls"]:
        out += ["", "#### Runtime / driver calls", ""]
        out += _md_table(["call", "kind", "count", "total"],
                         [[c["name"], c["kind"], str(c["count"]), duration(c["total_us"])] for c in d["launch_calls"][:top]])
    if d["dispatch"]:
        out += ["", "#### Dispatch", ""]
        out += _md_table(["count", "CPU path", "kernels"],
                         [[str(r["count"]), " → ".join(r["path"]),
                           ", ".join(labels[k] for k in r["gpu_kernels"]) or "(no GPU)"]
                          for r in d["dispatch"][:top]])
    out += render_critical_path_markdown(d, _md_table, top)
    return "\n".join(out) + "\n"
