"""One GPU's bench report from several `mlptui bench mlp` runs (a sweep split by family across runs, each
under a device's time limit), and the crossover table updated from it. Plain JSON: no torch needed.

    python -m mlptui.runners.bench.report A.json B.json … --out sample_traces/bench/h100.json \
        [--table runners/mlptui/runners/fused/crossover.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mlptui.base.errors import MlptuiError
from mlptui.runners.fused import crossover


def fused_over_eager(row: dict[str, Any]) -> float:
    """A fused result row's time against its cell's eager: the paired ratio where the report has it
    (runners/mlptui/runners/bench/sweep.py::paired_ratio), else the ratio of the two medians (older reports)."""
    paired = row.get("paired_vs_eager")
    return float(paired[0]) if paired else 1 / float(row["vs_eager"])


def over_best(row: dict[str, Any], forced: dict[str, Any] | None) -> float | None:
    """The routed module's time against the better of its two choices, eager and the fused path forced on,
    both timed in the same group as it (paired ratios against eager); None where the cell has no forced
    timing (reports written before the sweep timed the forced path)."""
    if forced is None or not forced.get("paired_vs_eager") or not row.get("paired_vs_eager"):
        return None
    return fused_over_eager(row) / min(1.0, float(forced["paired_vs_eager"][0]))


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per pass: the worst fused/eager ratio over the verified cells, those slower than eager by > 2 %, and
    of them those slower beyond the timing's resolution (the paired ratio's interval above 1.02, or, in
    older reports, the ratio beyond eager's spread against itself in the same cell). Where the cells timed
    the fused path forced on beside the routed module: the worst ratio of the routed module to the better
    of eager and the forced path, and the cells more than 2 % behind it (the route left a gain unused, or
    lost time)."""
    out: dict[str, Any] = {}
    for ps in ("fwd", "fwd+bwd"):
        cells = [r for r in results if r.get("sweep") and r["mode"] == "fused" and r["pass"] == ps
                 and "vs_eager" in r]
        if not cells:
            continue
        forced = {(r["shape"], r["rows"]): r for r in results
                  if r.get("sweep") and r["mode"] == "fused-forced" and r["pass"] == ps}
        to_best = [(r, q) for r in cells if (q := over_best(r, forced.get((r["shape"], r["rows"])))) is not None]
        worst = max(cells, key=fused_over_eager)

        def beyond(r: dict[str, Any]) -> bool:
            paired = r.get("paired_vs_eager")
            if paired:
                return float(paired[1]) > 1.02
            return r.get("noise") is not None and fused_over_eager(r) > max(1.02, 1 + r["noise"])

        def label(r: dict[str, Any]) -> str:
            paired = r.get("paired_vs_eager")
            interval = f", interval {paired[1]:.3f}-{paired[2]:.3f}" if paired else \
                (f", noise {r['noise']:.3f}" if r.get("noise") is not None else "")
            return f"{r['shape']} rows {r['rows']} ({fused_over_eager(r):.3f}x{interval}, {r.get('path')} path)"

        out[ps] = {"cells": len(cells), "worst_fused_over_eager": round(fused_over_eager(worst), 3),
                   "worst_cell": f"{worst['shape']} rows {worst['rows']}",
                   "estimator": "paired" if all(r.get("paired_vs_eager") for r in cells) else "ratio of medians",
                   "slower_than_eager_by_2pct": [label(r) for r in cells if fused_over_eager(r) > 1.02],
                   "slower_beyond_noise": [label(r) for r in cells if fused_over_eager(r) > 1.02 and beyond(r)],
                   "fused_path_cells": sum(1 for r in cells if r.get("path") == "fused")}
        if to_best:
            worst_r, worst_q = max(to_best, key=lambda t: t[1])
            out[ps].update(worst_over_best=round(worst_q, 3),
                           worst_over_best_cell=f"{worst_r['shape']} rows {worst_r['rows']}",
                           behind_best_by_2pct=[f"{r['shape']} rows {r['rows']} ({q:.3f}x the better of eager "
                                                f"and forced fused, {r.get('path')} path)"
                                                for r, q in to_best if q > 1.02])
    return out


def merge_reports(docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first report, with the others' results, errors, sweep families and commands added; the crossover
    entry folded from every run's calibration. All reports must come from one GPU."""
    if not docs:
        raise MlptuiError("no reports to merge")
    devices = {d.get("device") for d in docs}
    if len(devices) != 1:
        raise MlptuiError(f"reports from different GPUs: {', '.join(sorted(map(str, devices)))}")
    out = dict(docs[0])
    out["results"] = [r for d in docs for r in d.get("results", [])]
    out["errors"] = [e for d in docs for e in d.get("errors", [])]
    out["commands"] = [c for d in docs for c in (d.get("commands") or [d.get("command")]) if c]
    sweeps = [d["sweep"] for d in docs if d.get("sweep")]
    if sweeps:
        sweep = dict(sweeps[0])
        sweep["families"] = [f for s in sweeps for f in s.get("families", [])]
        sweep["summary"] = summarize(out["results"])
        out["sweep"] = sweep
    entries = [d["crossover"] for d in docs if d.get("crossover")]
    if entries:  # each run measured its own families' model; a family measured twice keeps the later
        fams = {(f["dim"], f["hidden"]): f for e in entries for f in e.get("families", [])}
        entry = {**entries[0], "families": list(fams.values())}
        out["crossover"] = crossover.fold_entry(entry, out["results"], "; ".join(out["commands"]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlptui.runners.bench.report", description=__doc__)
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="the merged report (never overwritten)")
    parser.add_argument("--table", type=Path, help="crossover table to update with this GPU's folded entry")
    args = parser.parse_args(argv)
    try:
        if args.out.exists():
            raise MlptuiError(f"{args.out} exists; the merged report never overwrites a file")
        docs = []
        for p in args.reports:
            try:
                docs.append(json.loads(p.read_text()))
            except (OSError, ValueError) as exc:
                raise MlptuiError(f"{p}: not a readable bench report ({exc})") from None
        merged = merge_reports(docs)
        from mlptui.base.files import write_atomic

        try:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(args.out, (json.dumps(merged, indent=1) + "\n").encode())
        except OSError as exc:
            raise MlptuiError(f"{args.out}: cannot write the merged report ({exc.strerror or exc})") from None
        if args.table is not None and merged.get("crossover"):
            table = json.loads(args.table.read_text()) if args.table.exists() else {}
            write_atomic(args.table, (json.dumps(crossover.merge_device(table, str(merged["device"]),
                                                                        merged["crossover"]), indent=1)
                                      + "\n").encode())
    except MlptuiError as exc:
        print(f"mlptui: {exc}", file=sys.stderr)
        return 2
    summary = merged.get("sweep", {}).get("summary", {})
    for ps, s in summary.items():
        print(f"{ps}: {s['cells']} cells ({s['fused_path_cells']} on the fused path), worst fused/eager "
              f"{s['worst_fused_over_eager']} ({s['worst_cell']}), slower than eager by >2%: "
              f"{len(s['slower_than_eager_by_2pct'])}, of them beyond the cell's noise: {len(s['slower_beyond_noise'])}")
        if "worst_over_best" in s:
            print(f"{ps}: worst routed/better of eager and forced fused {s['worst_over_best']} "
                  f"({s['worst_over_best_cell']}), behind it by >2%: {len(s['behind_best_by_2pct'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
