"""The profiler views of a diff: the operator table of the aligned steps side by side, and both
sides' overview figures (over all their steps).

Operator rows are joined by op name; status "added" (B only), "removed" (A only), "changed" (calls
differ) or "same". Rows are ordered by the larger side's device total time, then host total time.
"""

from __future__ import annotations

from typing import Any

from mlptui.base.units import MISSING, duration, share
from mlptui.trace.analysis.operators.operators import OpGroup, operators
from mlptui.trace.analysis.steps.overview import overview
from mlptui.trace.model import Trace

OVERVIEW_KEYS = ("gpu_util", "sm_efficiency", "achieved_occupancy", "theoretical_occupancy", "tensor_core_share",
                 "duration_us", "breakdown_us")


def _side(g: OpGroup | None) -> dict[str, Any] | None:
    if g is None:
        return None
    return {"calls": g.calls, "host_self_us": round(g.host_self_us, 3), "host_total_us": round(g.host_total_us, 3),
            "device_self_us": round(g.device_self_us, 3), "device_total_us": round(g.device_total_us, 3)}


def operator_diff(a: Trace, b: Trace, step_a: int | None, step_b: int | None) -> list[dict[str, Any]]:
    """Rows {"name", "status", "a": {calls, host/device self/total µs} | null, "b": … | null}."""
    ga = {g.name: g for g in operators(a, step_a)}
    gb = {g.name: g for g in operators(b, step_b)}
    rows = []
    for name in ga.keys() | gb.keys():
        x, y = ga.get(name), gb.get(name)
        status = "added" if x is None else "removed" if y is None else "changed" if x.calls != y.calls else "same"
        rows.append({"name": name, "status": status, "a": _side(x), "b": _side(y)})

    def weight(r: dict[str, Any]) -> tuple[float, float, str]:
        sides = [s for s in (r["a"], r["b"]) if s is not None]
        return (-max(s["device_total_us"] for s in sides), -max(s["host_total_us"] for s in sides), r["name"])

    rows.sort(key=weight)
    return rows


def overview_pair(a: Trace, b: Trace) -> dict[str, Any]:
    """Each side's overview total (all steps) and devices."""
    out = {}
    for tag, trace in (("a", a), ("b", b)):
        ov = overview(trace)
        out[tag] = {"scope": ov["total"]["name"], **{k: ov["total"][k] for k in OVERVIEW_KEYS},
                    "devices": [d for d in ov["devices"] if "gpu_util" in d]}
    return out


def profile_diff(a: Trace, b: Trace, step_a: int | None, step_b: int | None) -> dict[str, Any]:
    """The `operators` and `overview` keys of `mlptui diff --json`."""
    return {"operators": operator_diff(a, b, step_a, step_b), "overview": overview_pair(a, b)}


MARK = {"same": "=", "changed": "~", "added": "+", "removed": "-"}


def overview_lines(doc: dict[str, Any]) -> list[str]:
    """One line per side: scope, GPU util, SM efficiency, occupancy, Tensor-Core share, breakdown."""
    lines = []
    for tag in ("a", "b"):
        o = doc["overview"][tag]
        parts = o["breakdown_us"]
        dur = o["duration_us"] or 1.0
        top = sorted(parts.items(), key=lambda kv: -kv[1])[:3]
        lines.append(f"{tag.upper()}: {o['scope']} {duration(o['duration_us'])}, GPU util {share(o['gpu_util'])}, "
                     f"SM eff {share(o['sm_efficiency'])}, occ {share(o['achieved_occupancy'])}/"
                     f"{share(o['theoretical_occupancy'])}, TC {share(o['tensor_core_share'])}; "
                     + ", ".join(f"{k} {share(v / dur)}" for k, v in top if v > 0))
    return lines


def operator_lines(doc: dict[str, Any], top: int = 20, width: int = 40) -> list[str]:
    head = f"  {'':1} {'operator':<{width}} {'calls A':>7} {'calls B':>7} {'host A':>10} {'host B':>10} " \
           f"{'device A':>10} {'device B':>10}"
    lines = [head]
    for r in doc["operators"][:top]:
        a, b = r["a"] or {}, r["b"] or {}
        name = r["name"] if len(r["name"]) <= width else r["name"][:width - 1] + "…"
        lines.append(f"  {MARK[r['status']]} {name:<{width}} {a.get('calls', MISSING):>7} {b.get('calls', MISSING):>7} "
                     f"{duration(a.get('host_total_us')):>10} {duration(b.get('host_total_us')):>10} "
                     f"{duration(a.get('device_total_us')):>10} {duration(b.get('device_total_us')):>10}")
    if len(doc["operators"]) > top:
        lines.append(f"  … {len(doc['operators']) - top} more operators (see --json)")
    return lines
