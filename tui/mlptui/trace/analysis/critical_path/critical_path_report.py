"""The critical path's part of `mlptui summary`: its `--json` object and its text and Markdown sections.

    critical_path_dict(trace) -> {"steps": [...], "collectives": str}     (shape in docs/json.md)
    render_critical_path_text(d, table, top) -> [lines]
    render_critical_path_markdown(d, md_table, top) -> [lines]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mlptui.base.units import duration
from mlptui.trace.analysis.critical_path.critical_graph import KINDS
from mlptui.trace.analysis.critical_path.critical_path import CriticalPath, critical_paths
from mlptui.trace.model import Trace
from mlptui.trace.names.kernel import decode_kernel

COLLECTIVES_NOTE = ("collective kernels count as device work with their measured duration (one rank's trace does "
                    "not say which rank each waited for)")


def _r(x: float) -> float:
    return round(x, 3)


def _r_all(values: list[float]) -> list[float]:
    """round(x, 3) of each, through numpy: rint(x * 1000) / 1000 is the same float wherever x * 1000 is
    not within reach of a half (those, and values too large for it, are rounded one by one)."""
    x = np.asarray(values, dtype=np.float64)
    y = x * 1000.0
    r = np.rint(y)
    out = r / 1000.0
    doubt = ~(np.abs(np.abs(y - r) - 0.5) > 1e-6) | ~(np.abs(y) < 2.0**50)
    for i in np.flatnonzero(doubt).tolist():
        out[i] = round(values[i], 3)
    rounded: list[float] = out.tolist()
    return rounded


def path_dict(p: CriticalPath) -> dict[str, Any]:
    c = p.columns
    return {
        "step": p.name, "length_us": _r(p.length_us), "window_us": _r(p.window_us),
        "remainder_us": _r(p.remainder_us) + 0.0, "unexplained_us": _r(p.unexplained_us), "gpu_share": round(p.gpu_share, 4),
        "breakdown_us": {k: _r(v) for k, v in p.breakdown_us.items()},
        "top": [{"name": n, "kind": k, "us": _r(us)} for n, k, us in p.top],
        "what_if": [{"name": n, "step_us": _r(us)} for n, us in p.what_if],
        "segments": [{"kind": k, "name": n, "start_us": s, "dur_us": d, "op": o} for k, n, s, d, o in
                     zip(c.kind, c.name, _r_all(c.start_us), _r_all(c.dur_us), c.op, strict=True)],
    }


def critical_path_dict(trace: Trace) -> dict[str, Any]:
    return {"steps": [path_dict(p) for p in critical_paths(trace)], "collectives": COLLECTIVES_NOTE}


_HEAD = ["step", "length", *KINDS, "GPU share"]
_LABEL = {"launch_delay": "launch delay", "sync_wait": "sync wait"}


def _rows(d: dict[str, Any], top: int) -> list[list[str]]:
    steps = d["critical_path"]["steps"]
    if len(steps) > top:
        steps = steps[: top // 2] + steps[len(steps) - (top - top // 2):]
    return [[s["step"], duration(s["length_us"]), *(duration(s["breakdown_us"][k]) for k in KINDS),
             f"{s['gpu_share'] * 100:.0f}%"] for s in steps]


def label(name: str, kind: str, shorts: dict[str, str] | None = None) -> str:
    """A kernel by its short name (the report's own, which its op's inputs may have settled, else the decoded
    one; the JSON keeps the raw name); anything else as recorded."""
    if kind != "kernel":
        return name
    return (shorts or {}).get(name) or decode_kernel(name).short


def _shorts(d: dict[str, Any]) -> dict[str, str]:
    """The report's short name of each kernel (cuDNN's f16 told bf16 by its op's inputs)."""
    return {k["name"]: k["short"] for k in d.get("kernels", []) if isinstance(k, dict) and k.get("short")}


def _detail(s: dict[str, Any], top: int, shorts: dict[str, str]) -> tuple[list[list[str]], list[str]]:
    gain = {w["name"]: w["step_us"] for w in s["what_if"]}
    rows = [[label(t["name"], t["kind"], shorts), t["kind"], duration(t["us"]),
             duration(gain[t["name"]]) if t["name"] in gain else "n/a"] for t in s["top"][:top]]
    notes = []
    if abs(s["remainder_us"]) >= 0.001:
        notes.append(f"path length differs from the step window by {duration(s['remainder_us'])}")
    if s["unexplained_us"] > 0:
        notes.append(f"{duration(s['unexplained_us'])} of the path follows no recorded dependency "
                     "(work that starts on its own: another thread, work queued before the step)")
    return rows, notes


def render_critical_path_text(d: dict[str, Any], table: Callable[..., list[str]], top: int) -> list[str]:
    cp = d.get("critical_path")
    if not cp or not cp["steps"]:
        return []
    head = [_LABEL.get(h, h) for h in _HEAD]
    out = ["", "critical path (the chain of dependent work that ends last; by kind of time)"]
    out += ["  " + r for r in table(head, _rows(d, top), set(range(1, len(head))))]
    last = cp["steps"][-1]
    rows, notes = _detail(last, top, _shorts(d))
    if rows:
        out += ["", f"  {last['step']}: most time on the path, and the step without it (what-if)"]
        out += ["  " + r for r in table(["name", "kind", "on path", "step without it"], rows, {2, 3})]
    out += [f"  note: {n}" for n in notes] + [f"  note: {cp['collectives']}"]
    return out


def render_critical_path_markdown(d: dict[str, Any], md_table: Callable[..., list[str]], top: int) -> list[str]:
    cp = d.get("critical_path")
    if not cp or not cp["steps"]:
        return []
    out = ["", "#### Critical path", ""] + md_table([_LABEL.get(h, h) for h in _HEAD], _rows(d, top))
    last = cp["steps"][-1]
    rows, notes = _detail(last, top, _shorts(d))
    if rows:
        out += ["", f"{last['step']}: most time on the path, and the step without it (what-if)", ""]
        out += md_table(["name", "kind", "on path", "step without it"], rows)
    out += [""] + [f"- {n}" for n in [*notes, cp["collectives"]]]
    return out
