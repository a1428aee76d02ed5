"""The crossover table's verdicts from a sweep's verification: per family, pass and row count, the fused
path forced on against eager, timed in the same group as the routed module (sweep.verification_groups).
Plain JSON: no torch needed.

    python -m mlptui.runners.bench.verified REPORT.json … --table runners/mlptui/runners/fused/crossover.json

Why the verification and not the calibration: the calibration is timed minutes before, and a short cell's
ratio moves between two such moments by more than the 2 % a route may lose (the figures are in
benchmarks/FUSED_NOTES.md), so a route read from the calibration can land on the slower choice of the
verification that judges it. A
report in the table's own dtype (its entry's `bench_dtype`, bf16) replaces the verdicts of the families it
measured; a report in another dtype goes under the entry's `dtypes` (crossover.model_from_table).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from mlptui.base.errors import MlptuiError

DTYPE_NAMES = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16"}
FORCED = "fused-forced"  # mlptui.runners.bench.sweep.FORCED, without torch

Cell = tuple[int, int, str, int]  # dim, hidden, pass, rows


def report_dtype(report: dict[str, Any]) -> str:
    name = DTYPE_NAMES.get(str(report.get("dtype")))
    if name is None:
        raise MlptuiError(f"a report in dtype {report.get('dtype')!r}: the table knows bf16 and fp16")
    return name


def verified_pairs(results: list[dict[str, Any]]) -> dict[Cell, tuple[float, float]]:
    """(dim, hidden, pass, rows) -> (forced fused µs, eager µs) of every verification cell that timed the
    fused path forced on: eager's median, and the forced path as eager's median times its paired ratio
    against eager (the median of the round-by-round ratios, the figure the route is judged by)."""
    eager: dict[Cell, float] = {}
    forced: dict[Cell, float] = {}
    for r in results:
        if not r.get("sweep"):
            continue
        key = (int(r["dim"]), int(r["hidden"]), str(r["pass"]), int(r["rows"]))
        if r["mode"] == "eager":
            eager[key] = float(r["median_us"])
        elif r["mode"] == FORCED and r.get("paired_vs_eager"):
            forced[key] = float(r["paired_vs_eager"][0])
    return {k: (round(eager[k] * q, 2), eager[k]) for k, q in forced.items() if k in eager}


def family_verdicts(pairs: dict[Cell, tuple[float, float]]) -> list[dict[str, Any]]:
    """The table's per-family form of the pairs: bench_rows, fwd_bench_us, train_bench_us ([fused, eager]
    per row count; [None, None] where a pass did not time that row count)."""
    out = []
    for dim, hidden in sorted({(k[0], k[1]) for k in pairs}):
        rows = sorted({k[3] for k in pairs if (k[0], k[1]) == (dim, hidden)})
        fam: dict[str, Any] = {"dim": dim, "hidden": hidden, "bench_rows": rows}
        for ps, field in (("fwd", "fwd_bench_us"), ("fwd+bwd", "train_bench_us")):
            fam[field] = [list(pairs[(dim, hidden, ps, n)]) if (dim, hidden, ps, n) in pairs else [None, None]
                          for n in rows]
        out.append(fam)
    return out


def worst_pairs(reports: list[dict[str, Any]]) -> dict[Cell, tuple[float, float]]:
    """Every report's verified pairs; where several timed a cell, the one whose forced path did worst
    against eager (the highest ratio)."""
    out: dict[Cell, tuple[float, float]] = {}
    for report in reports:
        for cell, (fused, eager) in verified_pairs(report.get("results", [])).items():
            kept = out.get(cell)
            if kept is None or fused / eager > kept[0] / kept[1]:
                out[cell] = (fused, eager)
    return out


def fold_verified(table: dict[str, Any], reports: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """The table with the reports' verified verdicts put into their GPU's entry (module docstring); the
    reports are of one GPU and one dtype."""
    if not reports:
        raise MlptuiError("no report to fold")
    device = str(reports[0].get("device"))
    dtype = report_dtype(reports[0])
    if any(str(r.get("device")) != device or report_dtype(r) != dtype for r in reports):
        raise MlptuiError("reports of several GPUs or dtypes folded as one: fold each GPU and dtype apart")
    entry = table.get("devices", {}).get(device)
    if entry is None:
        raise MlptuiError(f"the table has no entry for {device}: measure its crossover first (bench mlp --sweep)")
    fams = family_verdicts(worst_pairs(reports))
    if not fams:
        raise MlptuiError(f"a report from {device} with no verification cell that timed {FORCED}")
    entry = dict(entry)
    if dtype == entry.get("bench_dtype", "bf16"):
        by_dim = {(f["dim"], f["hidden"]): f for f in fams}
        families = []
        for f in entry["families"]:
            v = by_dim.get((f["dim"], f["hidden"]))
            families.append({**f, **{k: v[k] for k in ("bench_rows", "fwd_bench_us", "train_bench_us")}}
                            if v else f)
        entry.update(families=families, bench_source=source, bench_dtype=dtype)
    else:
        dtypes = dict(entry.get("dtypes", {}))
        dtypes[dtype] = {"families": fams, "bench_source": source}
        entry["dtypes"] = dtypes
    devices = dict(table.get("devices", {}))
    devices[device] = entry
    return {**table, "devices": devices}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mlptui.runners.bench.verified", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--table", type=Path, required=True, help="the crossover table to update")
    args = parser.parse_args(argv)
    try:
        try:
            table = json.loads(args.table.read_text())
        except (OSError, ValueError) as exc:
            raise MlptuiError(f"{args.table}: not a readable crossover table ({exc})") from None
        groups: dict[tuple[str, str], list[tuple[Path, dict[str, Any]]]] = {}
        for p in args.reports:
            try:
                report = json.loads(p.read_text())
            except (OSError, ValueError) as exc:
                raise MlptuiError(f"{p}: not a readable bench report ({exc})") from None
            groups.setdefault((str(report.get("device")), report_dtype(report)), []).append((p, report))
        for (device, dtype), members in groups.items():
            names = ", ".join(f"{p.parent.name}/{p.name}" for p, _ in members)
            table = fold_verified(table, [r for _, r in members],
                                  f"verification of {names}, per cell the forced path's worst")
            print(f"{names}: {device} {dtype} folded")
        from mlptui.base.files import write_atomic

        write_atomic(args.table, (json.dumps(table, indent=1) + "\n").encode())
    except MlptuiError as exc:
        print(f"mlptui: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
