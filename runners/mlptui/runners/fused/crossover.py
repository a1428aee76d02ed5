"""Fused or unfused: a measured model of both paths' time per call, per GPU and model-family shape.

A call of either path costs max(host time, GPU time) when calls come back to back: the host enqueues
while the GPU works, and whichever is longer sets the pace. The table (crossover.json beside this file,
written by `mlptui bench mlp --sweep` on each GPU) holds, per GPU and (dim, hidden) family, each path's
host time per call (enqueue time, independent of rows) and its GPU time at a grid of row counts
(CUDA-graph replay). Between grid points the GPU time is interpolated linearly in rows; past the last
point it grows in proportion; a shape outside the families uses the nearest family by dim*hidden with
its rows scaled by the work ratio.

Where the sweep measured a row count (both paths timed against each other), its verdict routes (the
fused path measured faster by BENCH_MARGIN and by the drift allowance); between two measured row counts
the fused path is taken only where both say so, and where either is unmeasured the model decides (below
and above the measured rows, the nearest one's verdict); elsewhere the fused path is taken only where the
model predicts it faster by MARGIN: the unfused path is eager itself (the same five kernels), so on a
close call it cannot be slower than eager. The verdicts are per dtype where the table holds a dtype's own
(an entry's `dtypes`), else the entry's (`bench_dtype`, bf16). On a GPU missing from the table, the fused
path runs from DEFAULT_MIN_ROWS rows on.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE_FILE = Path(__file__).with_name("crossover.json")
MARGIN = 0.03  # the fused path must be predicted ≥ 3 % faster
# ... and, where a calibration measured it, measured faster by this much at the slow end of the paired
# ratio's ~95 % interval (already a bound that holds against noise, so less than MARGIN, which kept cells
# the calibration measured faster fused on the unfused route)
BENCH_MARGIN = 0.01
# ... and by this many µs per call, up to DRIFT_CAP of eager's call. Two timings of one cell made minutes apart
# (the calibration and the verification) move the fused path's time against eager's by a few µs, whatever
# the cell's size: a shift of the host's latency between the two moments (benchmarks/phase_drift_gpu.py).
# The full allowance everywhere left short cells measured faster fused on the unfused route, giving up more
# than the share of a call the route may lose to the better path. The cap keeps a short call's allowance
# at DRIFT_CAP: a cell measured that much faster is the better path's, and the drift is then a risk taken
# on both sides alike (benchmarks/results/fused-mlp.md, "Drift allowance").
PHASE_DRIFT_US = 12.0
DRIFT_CAP = 0.02
# Training (forward+backward) is routed by the sweep's measurements alone (the model only knows forward
# calls), with the same margins: from 2k rows its cells are long and their paired ratios steady, where
# the forced fused path was measured faster than eager (benchmarks/results/fused-mlp.md, "Training route").
DEFAULT_MIN_ROWS = 128  # GPUs without a measured table (the rule of the first sweeps)


@dataclass(frozen=True)
class PathCost:
    host_us: float
    rows: tuple[int, ...]
    gpu_us: tuple[float, ...]

    def gpu_at(self, rows: float) -> float:
        r, t = self.rows, self.gpu_us
        if rows <= r[0]:
            return t[0]
        if rows >= r[-1]:
            return t[-1] * rows / r[-1]
        i = bisect.bisect_right(r, rows)
        f = (rows - r[i - 1]) / (r[i] - r[i - 1])
        return t[i - 1] + f * (t[i] - t[i - 1])

    def at(self, rows: float) -> float:
        return max(self.host_us, self.gpu_at(rows))


Pair = tuple[float | None, float | None]  # (fused µs, eager µs) of one sweep cell; None: not measured


@dataclass(frozen=True)
class Family:
    dim: int
    hidden: int
    fused: PathCost
    eager: PathCost
    # the sweep's do_bench medians (L2 flushed) at its row counts, folded in after a sweep (fold_sweep)
    bench_rows: tuple[int, ...] = ()
    fwd_bench: tuple[Pair, ...] = ()
    train_bench: tuple[Pair, ...] = ()

    def bench_verdict(self, rows: float, train: bool, margin: float) -> bool | None:
        """Was the fused path measured faster (by `margin`, and by PHASE_DRIFT_US per call or DRIFT_CAP of
        eager's call, whichever is less) at this row count? Between two measured row counts: True only where
        both were, False where either was not, None where either is unmeasured; outside them, the nearest
        one's verdict. None: not measured.

        Why both neighbours: the sweep measures a grid of row counts, and a call between two of them is a
        prediction; the unfused path costs what eager costs, so an unsure prediction keeps it."""
        pairs = self.train_bench if train else self.fwd_bench
        r = self.bench_rows
        if not r or not pairs:
            return None
        i = bisect.bisect_left(r, rows)
        if i < len(r) and r[i] == rows or i == 0:
            return _faster(pairs[i], margin)
        if i == len(r):
            return _faster(pairs[-1], margin)
        below, above = _faster(pairs[i - 1], margin), _faster(pairs[i], margin)
        if below is False or above is False:
            return False
        return True if below and above else None


def _faster(pair: Pair, margin: float) -> bool | None:
    """One measured cell's verdict (Family.bench_verdict); None where it is unmeasured."""
    f, e = pair
    if f is None or e is None:
        return None
    return f <= min((1.0 - margin) * e, e - min(PHASE_DRIFT_US, DRIFT_CAP * e))


@dataclass(frozen=True)
class CrossoverModel:
    device: str
    families: tuple[Family, ...]
    margin: float = MARGIN

    def _family(self, dim: int, hidden: int) -> tuple[Family, float]:
        """The family to read, and the factor that maps rows of this shape onto its rows."""
        work = dim * hidden
        fam = min(self.families, key=lambda f: abs(math.log(f.dim * f.hidden / work)) + abs(math.log(f.dim / dim)))
        return fam, work / (fam.dim * fam.hidden)

    def predict(self, rows: int, dim: int, hidden: int) -> dict[str, float]:
        fam, scale = self._family(dim, hidden)
        r = max(rows, 1) * scale
        return {"fused": fam.fused.at(r), "unfused": fam.eager.at(r)}

    def measured(self, rows: int, dim: int, hidden: int, train: bool = False) -> bool | None:
        """The sweep's verdict at this row count (Family.bench_verdict): the fused path measured faster by the
        pass's margin and by PHASE_DRIFT_US (True), not (False), or no measurement (None)."""
        fam, scale = self._family(dim, hidden)
        return fam.bench_verdict(max(rows, 1) * scale, train, BENCH_MARGIN)

    def use_fused(self, rows: int, dim: int, hidden: int, train: bool = False) -> bool:
        """Where the sweep measured the fused path against eager (its calibration: synchronized calls,
        paired, at the slow end of the interval), that verdict; elsewhere, inference follows the host+GPU
        model. Training (forward+backward): only where the sweep measured the fused path faster.

        Why the measurement first: the model's GPU times are CUDA-graph replays back to back, which at
        compute-bound sizes moved between two runs on one GPU by more than the margin and vetoed cells the
        calibration measured faster (benchmarks/results/fused-mlp.md, "Measured routing")."""
        if rows <= 0:
            return False
        verdict = self.measured(rows, dim, hidden, train)
        if train or verdict is not None:
            return verdict is True
        p = self.predict(rows, dim, hidden)
        return p["fused"] <= (1.0 - self.margin) * p["unfused"]


def model_from_table(doc: dict[str, Any], device: str, dtype: str | None = None) -> CrossoverModel | None:
    """This GPU's model; with `dtype` ("bf16", "fp16"), the verdicts measured in that dtype where the entry
    holds them (its `dtypes`), else the entry's own (measured in its `bench_dtype`)."""
    entry = doc.get("devices", {}).get(device)
    if not entry:
        return None
    own = entry.get("dtypes", {}).get(dtype, {}) if dtype and dtype != entry.get("bench_dtype", "bf16") else {}
    verdicts = {(int(v["dim"]), int(v["hidden"])): v for v in own.get("families", [])}
    fams = []
    for f in entry["families"]:
        rows = tuple(int(r) for r in f["rows"])
        v = verdicts.get((int(f["dim"]), int(f["hidden"])), f)
        fams.append(Family(int(f["dim"]), int(f["hidden"]),
                           PathCost(float(f["fused_host_us"]), rows, tuple(map(float, f["fused_gpu_us"]))),
                           PathCost(float(f["eager_host_us"]), rows, tuple(map(float, f["eager_gpu_us"]))),
                           tuple(int(r) for r in v.get("bench_rows", ())),
                           tuple((p[0], p[1]) for p in v.get("fwd_bench_us", ())),
                           tuple((p[0], p[1]) for p in v.get("train_bench_us", ()))))
    return CrossoverModel(device, tuple(fams)) if fams else None


@lru_cache(maxsize=8)
def _load(path: str) -> dict[str, Any]:
    p = Path(path)
    return json.loads(p.read_text()) if p.exists() else {}


_INSTALLED: dict[str, CrossoverModel] = {}


def install(model: CrossoverModel) -> None:
    """Use this model for its GPU in this process (a table just measured, before it is committed)."""
    _INSTALLED[model.device] = model


def model_for(device: str, path: Path | None = None, dtype: str | None = None) -> CrossoverModel | None:
    """The installed model for this GPU (a sweep's own, any dtype), else the table's (model_from_table)."""
    if path is None and device in _INSTALLED:
        return _INSTALLED[device]
    return model_from_table(_load(str(path or TABLE_FILE)), device, dtype)


def use_fused(rows: int, dim: int, hidden: int, model: CrossoverModel | None, train: bool = False) -> bool:
    """The rule FusedGeGLUMLP applies (once per row count and pass; the answer is cached)."""
    if model is None:
        return rows >= DEFAULT_MIN_ROWS
    return model.use_fused(rows, dim, hidden, train)


def _bench_cells(results: list[dict[str, Any]]) -> dict[tuple[int, int, str, int], tuple[float, float]]:
    """(dim, hidden, pass, rows) -> (fused µs, eager µs) of the cells where the fused path ran: from a
    calibration (the fused path forced on) when the results hold one, else from the routed sweep. A cell whose
    two timings of eager differ by more than the pass's margin is left out: unmeasured (training then
    stays unfused; inference follows the model)."""
    calibrated = any(r.get("calibration") for r in results)
    by_cell: dict[tuple[int, int, str, int], dict[str, dict[str, Any]]] = {}
    for r in results:
        if calibrated and r.get("calibration"):
            mode = "fused" if r["mode"] == "fused-forced" else r["mode"]
            r = {**r, "mode": mode, "path": "fused"} if mode == "fused" else r
        elif calibrated or not r.get("sweep"):
            continue
        by_cell.setdefault((r["dim"], r["hidden"], r["pass"], r["rows"]), {})[r["mode"]] = r
    pairs = {}
    for key, modes in by_cell.items():
        fused, eager = modes.get("fused"), modes.get("eager")
        if fused is None or eager is None or fused.get("path") != "fused":
            continue
        spread = eager.get("noise")
        if spread is not None and spread > MARGIN:
            continue  # eager timed twice differed by more than the margin: this cell resolves nothing
        eager_us = float(eager["median_us"])
        # The round-by-round ratio where the report has it (less noisy), at the slow end of its ~95 %
        # interval: a cell is measured faster only when the interval says so. A cell whose median read
        # fused faster in the calibration could read it slower in the verification (benchmarks/results/
        # fused-mlp.md, "Paired ratios").
        paired = fused.get("paired_vs_eager")
        pairs[key] = (eager_us * float(paired[-1]) if paired else float(fused["median_us"]), eager_us)
    return pairs


def _family_pairs(pairs: dict[tuple[int, int, str, int], tuple[float, float]], dim: int, hidden: int,
                  rows: list[int]) -> dict[str, list[list[float | None]]]:
    out: dict[str, list[list[float | None]]] = {"fwd": [], "fwd+bwd": []}
    for ps, seq in out.items():
        for n in rows:
            p = pairs.get((dim, hidden, ps, n))
            seq.append([p[0], p[1]] if p is not None else [None, None])
    return out


def fold_sweep(table: dict[str, Any], report: dict[str, Any], source: str) -> dict[str, Any]:
    """The table with a sweep report's do_bench medians folded into its GPU's families: per sweep row
    count, (fused, eager) for the forward and for forward+backward. A report with calibration rows gives
    the forced fused path's pairs everywhere; an older one, the cells where the routed path was fused."""
    device = report["device"]
    return merge_device(table, device, fold_entry(table["devices"][device], report["results"], source))


def fold_entry(entry: dict[str, Any], results: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """One GPU's table entry with a report's results folded in (fold_sweep, for an entry on its own)."""
    entry = dict(entry)
    pairs = _bench_cells(results)
    rows = sorted({k[3] for k in pairs} | {r["rows"] for r in results if r.get("sweep") or r.get("calibration")})
    measured = {(r["dim"], r["hidden"]) for r in results if r.get("sweep") or r.get("calibration")}
    families = []
    for f in entry["families"]:
        f = dict(f)
        fam_pairs = _family_pairs(pairs, f["dim"], f["hidden"], rows)
        if (f["dim"], f["hidden"]) in measured or "bench_rows" not in f:
            f.update(bench_rows=rows, fwd_bench_us=fam_pairs["fwd"], train_bench_us=fam_pairs["fwd+bwd"])
        families.append(f)
    entry.update(families=families, bench_source=source)
    return entry


def with_calibration(model: CrossoverModel, results: list[dict[str, Any]]) -> CrossoverModel:
    """The model with a calibration's pairs (fused forced vs eager, per pass and row count) put into the
    families it measured; the others are kept as they were."""
    calibration = [r for r in results if r.get("calibration")]
    pairs = _bench_cells(calibration)
    fams = []
    for fam in model.families:
        rows = sorted({r["rows"] for r in calibration if (r["dim"], r["hidden"]) == (fam.dim, fam.hidden)})
        if not rows:
            fams.append(fam)
            continue
        fp = _family_pairs(pairs, fam.dim, fam.hidden, rows)
        fams.append(replace(fam, bench_rows=tuple(rows), fwd_bench=tuple((p[0], p[1]) for p in fp["fwd"]),
                            train_bench=tuple((p[0], p[1]) for p in fp["fwd+bwd"])))
    return replace(model, families=tuple(fams))


def merge_device(doc: dict[str, Any], device: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The table with one GPU's entry replaced (the others kept)."""
    devices: dict[str, Any] = dict(doc.get("devices", {}))
    devices[device] = entry
    return {"version": 1, "devices": devices}
