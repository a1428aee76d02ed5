"""The profiler views of `summary --json` (overview, recommendations, operators, kernel_stats, memory,
modules) and their text and Markdown sections. Scope: the steps, or the whole trace when it has none; or
one step."""

from __future__ import annotations

from typing import Any

from mlptui.base.units import MISSING, duration, share, size
from mlptui.trace.analysis.advice.recommendations import recommendations
from mlptui.trace.analysis.kernels.kernel_inputs import kernel_name
from mlptui.trace.analysis.kernels.kernel_stats import kernel_stats
from mlptui.trace.analysis.memory.memory import memory_report
from mlptui.trace.analysis.operators.modules import module_tree
from mlptui.trace.analysis.operators.operators import operators_in_steps
from mlptui.trace.analysis.steps.breakdown import CATEGORIES
from mlptui.trace.analysis.steps.overview import na_notes, overview
from mlptui.trace.model import Trace
from mlptui.trace.names.distinct import distinct_labels
from mlptui.trace.names.kernel import decode_kernel


def profile_sections(trace: Trace, step: int | None = None) -> dict[str, Any]:
    """Every section over the scope: every step (the whole trace when it has none), or `step`."""
    ov = overview(trace, step=step)
    ops = operators_in_steps(trace, step=step)
    mem = memory_report(trace, step)
    mods = module_tree(trace, step)
    kernels = kernel_stats(trace, step, steps_only=bool(trace.steps))
    return {
        "overview": ov,
        "recommendations": recommendations(trace, ov, ops, step),
        "operators": [o.to_dict() for o in ops],
        "kernel_stats": [{**k.to_dict(), "short": kernel_name(trace, k.name).short} for k in kernels],
        "memory": None if mem is None else mem.to_dict(),
        "modules": None if mods is None else [m.to_dict() for m in mods],
    }


def breakdown_rows(ov: dict[str, Any]) -> list[dict[str, Any]]:
    """The step-time breakdown as flat rows (`summary --csv breakdown`): each step of the overview, then
    the scope's total when there are several, with its duration and each category's µs."""
    steps = ov["steps"] + ([ov["total"]] if len(ov["steps"]) > 1 else [])
    return [{"name": s["name"], "duration_us": s["duration_us"],
             **{f"{c}_us": s["breakdown_us"][c] for c in CATEGORIES}} for s in steps]


# ---------------------------------------------------------------- renderings

def _na(row: dict[str, Any], key: str) -> str:
    """A share, or "n/a" where the overview says why it cannot be known; a figure hardware counters measured
    in place of the estimate, marked "m"."""
    if row.get(f"{key}_measured") is not None:
        return f"{share(row[f'{key}_measured'])} m"
    return "n/a" if row.get(f"{key}_na") else share(row[key])


def _net(n: int | None) -> str:
    """Net bytes per op; None: not known (frees without Addr)."""
    return "n/a" if n is None else size(n)


_OV_HEAD = ["step", "duration", "GPU util", "SM eff", "occ ach/th", "TC"] + list(CATEGORIES)


def _ov_row(s: dict[str, Any]) -> list[str]:
    b = s["breakdown_us"]
    return [s["name"], duration(s["duration_us"]), share(s["gpu_util"]), _na(s, "sm_efficiency"),
            f"{_na(s, 'achieved_occupancy')}/{share(s['theoretical_occupancy'])}", share(s["tensor_core_share"])] + \
        [duration(b[c]) for c in CATEGORIES]


def _op_row(o: dict[str, Any]) -> list[str]:
    return [o["name"], str(o["calls"]), duration(o["host_self_us"]), duration(o["host_total_us"]), duration(o["device_self_us"]),
            duration(o["device_total_us"]), ("yes " + share(o["tc_share"])) if o["tc_eligible"] else ""]


_OP_HEAD = ["op", "calls", "host self", "host total", "dev self", "dev total", "TC elig/share"]


def kernel_labels(d: dict[str, Any]) -> dict[str, str]:
    """Each kernel of a summary by its short name as the report has it (dtype settled by the launching
    ops' inputs; the raw names are in --json), as the views show it: kernels whose short names are alike
    get the words of their raw names that differ (mlptui.trace.names.distinct), one label per raw name in
    every table of the summary."""
    rows = [*d.get("kernels", ()), *d.get("kernel_stats", ())]
    shorts = {k["name"]: k["short"] for k in rows if k.get("short")}
    names = [k["name"] for k in rows] + [k for row in d.get("dispatch", ()) for k in row["gpu_kernels"]]
    return distinct_labels(names, lambda raw: shorts.get(raw) or decode_kernel(raw).short)


def _tables(d: dict[str, Any], top: int) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, headers, rows) of each section, shared by the text and Markdown renderings."""
    ov = d["overview"]
    labels = kernel_labels(d)
    steps = ov["steps"][:top] + ([ov["total"]] if len(ov["steps"]) > 1 else [])
    out = [("overview", _OV_HEAD, [_ov_row(s) for s in steps])]
    out.append(("operators (most device time first)", _OP_HEAD, [_op_row(o) for o in d["operators"][:top]]))
    out.append(("kernels, completed", ["kernel", "TC", "calls", "total", "mean", "min", "max", "blk/SM", "occ"],
                [[name, "yes" if k["tensor_cores"] else "", str(k["calls"]), duration(k["total_us"]),
                  duration(k["mean_us"]), duration(k["min_us"]), duration(k["max_us"]),
                  "n/a" if k["blocks_per_sm"] is None else f"{k['blocks_per_sm']:.2f}",
                  "n/a" if k["achieved_occupancy"] is None else share(k["achieved_occupancy"])]
                 for name, k in ((labels[k["name"]], k) for k in d["kernel_stats"][:top])]))
    mem = d["memory"]
    if mem is not None:
        out.append(("memory peaks", ["device", "peak allocated", "peak reserved", "at", "op"],
                    [[("cpu" if m["kind"] == "cpu" else f"{m['kind']}:{m['id']}"), size(m["peak_allocated_bytes"]),
                      size(m["peak_reserved_bytes"]), duration(m["peak_ts"]),
                      m["peak_op"] or MISSING] for m in mem["devices"]]))
        out.append(("memory by op", ["op", "allocs", "frees", "allocated", "net", "net w/ children"],
                    [[o["name"], str(o["allocs"]), str(o["frees"]), size(o["bytes_allocated"]), _net(o["net_bytes"]),
                      _net(o["net_bytes_with_children"])] for o in mem["ops"][:top]]))
    mods = d["modules"]
    if mods is not None:
        out.append(("modules", ["module", "calls", "host", "device"],
                    [["  " * (len(m["path"]) - 1) + m["path"][-1], str(m["calls"]), duration(m["host_us"]),
                      duration(m["device_us"])] for m in mods[:top * 2]]))
    return out


def _device_lines(d: dict[str, Any]) -> list[str]:
    lines = []
    for dev in d["overview"]["devices"]:
        if "gpu_util" not in dev:
            continue
        memory = f", {size(dev['memory_bytes'])}" if dev["memory_bytes"] is not None else ""
        lines.append(f"device {dev['id']}: {dev['label']}{memory}; {dev['kernels']} kernels, "
                     f"GPU util {share(dev['gpu_util'])}, "
                     f"SM eff {_na(dev, 'sm_efficiency')}, TC {share(dev['tensor_core_share'])}")
    return lines


def render_profile_text(d: dict[str, Any], table: Any, top: int = 15) -> list[str]:
    out = [""] + _device_lines(d)
    if d["recommendations"]:
        out += ["", "recommendations"] + [f"  [{r['rule']}] {r['message']} ({r['figures'].get('device')}; the rule "
                                          f"applies to {r['applies_to']})" for r in d["recommendations"]]
    for title, head, rows in _tables(d, top):
        if rows:
            out += ["", title] + ["  " + r for r in table(head, rows, set(range(1, len(head))))]
            if title == "overview":
                out += ["  " + note for note in na_notes(d["overview"])]
    return out


def render_profile_markdown(d: dict[str, Any], md_table: Any, top: int = 15) -> list[str]:
    out = ["", "#### Devices", ""] + [f"- {line}" for line in _device_lines(d)]
    if d["recommendations"]:
        out += ["", "#### Recommendations", ""] + [f"- **{r['rule']}**: {r['message']} ({r['figures'].get('device')}; "
                                                   f"the rule applies to {r['applies_to']})" for r in d["recommendations"]]
    for title, head, rows in _tables(d, top):
        if rows:
            out += ["", f"#### {title[0].upper()}{title[1:]}", ""] + md_table(head, rows)
            if title == "overview":
                out += [""] + [f"- {note}" for note in na_notes(d["overview"])]
    return out
