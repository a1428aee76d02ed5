"""The fused MLP's routes on the committed sweeps of runs 21, 22 and 23 (benchmarks/results/run21 … run23,
forward and training, bf16 and fp16): routed by the committed crossover table, the module is never more
than 1.02x eager in every verified cell of every committed sweep, and within 2 % of the better of eager
and the fused path forced on (the better only where its ~95 % interval lies below eager: a forced path
not measured faster is no better than eager's own kernels) in every cell but the contested ones: cells where one sweep of that GPU and
dtype measured the forced path more than 2 % faster than eager and another measured it slower. No route
is within 2 % of the better choice in both such sweeps; there the table takes eager (the route that is
never slower than eager), and the test asserts that it does. The figures are read from
the reports' own rows; where the committed route differs from the path the sweep's module took
(it routed by its calibration, timed minutes earlier), the routed figure is the measured one of the path
the table now takes: the forced fused path's paired ratio, or, for the unfused route, its ratio in that cell
in another sweep of the same GPU and dtype that took it there, else the worst ratio the unfused route read
in any cell of that report and pass (it launches eager's kernels, and costs a little host time more)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from mlptui.runners.bench import verified
from mlptui.runners.fused import crossover

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
RUNS = ("run21", "run22", "run23", "run24")
REPORTS = [p for run in RUNS for p in sorted((RESULTS / run).glob("h[12]00-*16.json"))]
FAMILIES = {"768x3072", "1024x2816", "2048x5632", "1536x8960", "4096x11008", "5120x13824"}


def _by_gpu_and_dtype(paths: list[Path]) -> dict[tuple[str, str], list[Path]]:
    groups: dict[tuple[str, str], list[Path]] = {}
    for p in paths:
        doc = json.loads(p.read_text())
        groups.setdefault((doc["device"], verified.report_dtype(doc)), []).append(p)
    return groups


GROUPS = _by_gpu_and_dtype(REPORTS)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _cells(doc: dict[str, Any]) -> dict[tuple[str, int, str], dict[str, dict[str, Any]]]:
    cells: dict[tuple[str, int, str], dict[str, dict[str, Any]]] = {}
    for r in doc["results"]:
        if r.get("sweep"):
            cells.setdefault((r["shape"], r["rows"], r["pass"]), {})[r["mode"]] = r
    return cells


def test_a_sweep_of_every_family_was_committed() -> None:
    assert {p.parent.name for p in REPORTS} == set(RUNS)
    docs = [json.loads(p.read_text()) for p in REPORTS]
    assert any(set(d["sweep"]["families"]) == FAMILIES for d in docs)


@pytest.mark.parametrize("path", REPORTS, ids=_id)
def test_report_covers_every_family_both_passes_and_says_how_it_was_made(path: Path) -> None:
    doc = json.loads(path.read_text())
    for key in ("device", "torch", "triton", "cuda", "command"):
        assert doc[key], key
    assert path.stem == f"{doc['device_slug']}-{verified.report_dtype(doc)}"
    cells = _cells(doc)
    assert {k[0] for k in cells} == set(doc["sweep"]["families"]) <= FAMILIES
    if set(doc["sweep"]["families"]) != FAMILIES:  # a sweep cut short says why; one of chosen families
        # is one of several sweeps of a GPU and dtype that together measured every family
        others = [json.loads(p.read_text()) for p in GROUPS[(doc["device"], verified.report_dtype(doc))]]
        assert doc.get("partial") or {f for o in others for f in o["sweep"]["families"]} == FAMILIES
    rows = set(doc["sweep"]["rows"])
    for fam in doc["sweep"]["families"]:
        for ps in ("fwd", "fwd+bwd"):
            assert {k[1] for k in cells if k[0] == fam and k[2] == ps} == rows, (fam, ps)
    for modes in cells.values():  # the routed module and both of its choices, timed in one group
        assert {"eager", "eager-again", "fused", "fused-forced"} <= set(modes)
    assert not [e for e in doc["errors"] if e["kind"] == "inaccurate"]


@cache
def _report_cells(path: Path) -> dict[tuple[str, int, str], dict[str, dict[str, Any]]]:
    """A committed report's sweep cells, read once for all the tests (nothing here changes them)."""
    return _cells(json.loads(path.read_text()))


def _forced(path: Path) -> dict[tuple[str, int, str], float]:
    return {k: m["fused-forced"]["paired_vs_eager"][0] for k, m in _report_cells(path).items()}


def _siblings(group: list[Path], path: Path, key: tuple[str, int, str]) -> list[dict[str, dict[str, Any]]]:
    """This cell as the other sweeps of the same GPU and dtype timed it."""
    cells = [_report_cells(p) for p in group if p != path]
    return [c[key] for c in cells if key in c]


@pytest.mark.parametrize("group", sorted(GROUPS), ids=lambda g: f"{g[0]}-{g[1]}")
def test_committed_table_holds_the_worst_verified_cell_of_its_sweeps(group: tuple[str, str]) -> None:
    """The table's verdicts for this GPU and dtype are its sweeps' verification cells: per cell, eager's
    median and the forced path's paired ratio times it, of the sweep whose forced path did worst there,
    recomputed here from the rows."""
    device, dtype = group
    entry = json.loads(crossover.TABLE_FILE.read_text())["devices"][device]
    fams = entry["families"] if dtype == entry.get("bench_dtype", "bf16") else entry["dtypes"][dtype]["families"]
    by_dims = {(f["dim"], f["hidden"]): f for f in fams}
    sweeps = [_report_cells(p) for p in GROUPS[group]]
    for key in {k for c in sweeps for k in c}:
        shape, rows, ps = key
        timed = [c[key] for c in sweeps if key in c]
        worst = max(timed, key=lambda m: m["fused-forced"]["paired_vs_eager"][0])
        dim, hidden = (int(v) for v in shape.split("x"))
        fam = by_dims[(dim, hidden)]
        f, e = fam["fwd_bench_us" if ps == "fwd" else "train_bench_us"][fam["bench_rows"].index(rows)]
        assert e == worst["eager"]["median_us"], key
        assert f == pytest.approx(e * worst["fused-forced"]["paired_vs_eager"][0], abs=0.01), key


@pytest.mark.parametrize("path", REPORTS, ids=_id)
def test_routed_module_is_never_slower_than_eager_nor_behind_the_better_choice(path: Path) -> None:
    doc = json.loads(path.read_text())
    dtype = verified.report_dtype(doc)
    group = GROUPS[(doc["device"], dtype)]
    model = crossover.model_for(doc["device"], crossover.TABLE_FILE, dtype)
    assert model is not None
    cells = _cells(doc)
    # the unfused route's worst measured ratio per pass (a pass with no unfused cell: the report's worst)
    seen = {ps: [m["fused"]["paired_vs_eager"][0] for k, m in cells.items()
                 if k[2] == ps and m["fused"]["path"] == "unfused"] for ps in ("fwd", "fwd+bwd")}
    unfused = {ps: max(v or [x for w in seen.values() for x in w]) for ps, v in seen.items()}
    worst: dict[str, float] = {}
    for (shape, rows, ps), modes in cells.items():
        dim, hidden = (int(v) for v in shape.split("x"))
        forced = modes["fused-forced"]["paired_vs_eager"][0]
        route = "fused" if model.use_fused(rows, dim, hidden, train=ps == "fwd+bwd") else "unfused"
        if route == modes["fused"]["path"]:
            routed = modes["fused"]["paired_vs_eager"][0]  # as measured
        elif route == "fused":  # the path the table now takes, as measured in this cell
            routed = forced
        else:  # the unfused route in this cell as another sweep measured it, else this pass's worst reading
            sibling = [m["fused"]["paired_vs_eager"][0] for m in _siblings(group, path, (shape, rows, ps))
                       if m["fused"]["path"] == "unfused"]
            routed = max(sibling) if sibling else unfused[ps]
        cell = (shape, rows, ps, route)
        assert routed <= 1.02, cell
        others = [_forced(p).get((shape, rows, ps)) for p in group if p != path]
        contested = forced < 0.98 and any(o is not None and o > 1.0 for o in others)
        if contested:  # another sweep measured the fused path slower here: eager, the route never slower
            assert route == "unfused", cell
            continue
        # the better choice: the forced path where its ~95 % interval lies below eager, else eager (a forced
        # path not measured faster than eager is no better choice than eager's own kernels)
        better = forced if modes["fused-forced"]["paired_vs_eager"][2] < 1.0 else 1.0
        assert routed / better <= 1.02, cell
        worst[ps] = max(worst.get(ps, 0.0), routed / better)
    assert set(worst) == {"fwd", "fwd+bwd"}


def test_between_measured_row_counts_the_fused_path_needs_both_neighbours() -> None:
    """A row count the sweep did not time is fused only where both measured neighbours were measured
    faster; past the last measured row count, the last one's verdict (training and inference alike)."""
    fam = {"dim": 768, "hidden": 3072, "rows": [1, 16384], "fused_gpu_us": [10, 100], "eager_gpu_us": [10, 100],
           "fused_host_us": 5, "eager_host_us": 5, "bench_rows": [64, 1024, 4096, 16384],
           # fused measured 20 % faster at 64 and 4096 and 16384 rows, 1 % slower at 1024
           "fwd_bench_us": [[40, 50], [505, 500], [800, 1000], [3200, 4000]],
           "train_bench_us": [[None, None], [900, 1000], [2400, 3000], [9600, 12000]]}
    model = crossover.model_from_table({"devices": {"GPU": {"families": [fam]}}}, "GPU")
    assert model is not None
    assert model.use_fused(64, 768, 3072) and not model.use_fused(1024, 768, 3072)
    assert not model.use_fused(256, 768, 3072) and not model.use_fused(2048, 768, 3072)  # a neighbour says no
    assert model.use_fused(8192, 768, 3072) and model.use_fused(65536, 768, 3072)  # both / the last say yes
    assert model.use_fused(16, 768, 3072)  # below the first measured row count: its verdict
    assert model.use_fused(2048, 768, 3072, train=True) and model.use_fused(1024, 768, 3072, train=True)
    assert not model.use_fused(256, 768, 3072, train=True)  # a neighbour unmeasured: training stays unfused
    assert not model.use_fused(64, 768, 3072, train=True)


def test_a_dtypes_own_verdicts_route_that_dtype_and_the_rest_keep_the_entrys() -> None:
    base = {"dim": 768, "hidden": 3072, "rows": [1], "fused_gpu_us": [10], "eager_gpu_us": [10],
            "fused_host_us": 5, "eager_host_us": 5, "bench_rows": [1024],
            "fwd_bench_us": [[800, 1000]], "train_bench_us": [[2400, 3000]]}
    fp16 = {"dim": 768, "hidden": 3072, "bench_rows": [1024], "fwd_bench_us": [[1000, 1000]],
            "train_bench_us": [[2400, 3000]]}
    doc = {"devices": {"GPU": {"families": [base], "dtypes": {"fp16": {"families": [fp16]}}}}}
    for dtype, fused in ((None, True), ("bf16", True), ("fp16", False)):
        model = crossover.model_from_table(doc, "GPU", dtype)
        assert model is not None and model.use_fused(1024, 768, 3072) is fused, dtype


def test_folding_a_report_puts_its_verified_cells_under_its_dtype() -> None:
    def row(mode: str, rows: int, ps: str, us: float, paired: float | None = None) -> dict[str, Any]:
        r: dict[str, Any] = {"sweep": True, "shape": "768x3072", "dim": 768, "hidden": 3072, "rows": rows,
                             "pass": ps, "mode": mode, "median_us": us}
        return r if paired is None else {**r, "paired_vs_eager": [paired, paired - 0.01, paired + 0.01]}

    results = [row("eager", 64, "fwd", 50.0), row("fused-forced", 64, "fwd", 45.0, 0.9),
               row("eager", 64, "fwd+bwd", 200.0), row("fused-forced", 64, "fwd+bwd", 210.0, 1.05),
               {**row("eager", 64, "fwd", 49.0), "sweep": False, "calibration": True}]
    table = {"version": 1, "devices": {"GPU": {"families": [{"dim": 768, "hidden": 3072, "rows": [1],
                                                              "bench_rows": [1], "fwd_bench_us": [[1, 2]],
                                                              "train_bench_us": [[1, 2]]}]}}}
    bf = verified.fold_verified(table, [{"device": "GPU", "dtype": "bf16", "results": results}], "s")
    fam = bf["devices"]["GPU"]["families"][0]
    assert fam["bench_rows"] == [64] and fam["fwd_bench_us"] == [[45.0, 50.0]]
    assert fam["train_bench_us"] == [[210.0, 200.0]] and fam["rows"] == [1]
    fp = verified.fold_verified(table, [{"device": "GPU", "dtype": "fp16", "results": results}], "s")
    assert fp["devices"]["GPU"]["families"][0]["bench_rows"] == [1]  # the entry's own verdicts kept
    assert fp["devices"]["GPU"]["dtypes"]["fp16"]["families"][0]["fwd_bench_us"] == [[45.0, 50.0]]
    with pytest.raises(verified.MlptuiError):
        verified.fold_verified(table, [{"device": "other", "dtype": "bf16", "results": results}], "s")
    # a second sweep of the same GPU and dtype: per cell, the sweep where the forced path did worse
    again = [row("eager", 64, "fwd", 40.0), row("fused-forced", 64, "fwd", 42.0, 1.05),
             row("eager", 64, "fwd+bwd", 190.0), row("fused-forced", 64, "fwd+bwd", 170.0, 0.9)]
    both = verified.fold_verified(table, [{"device": "GPU", "dtype": "bf16", "results": results},
                                          {"device": "GPU", "dtype": "bf16", "results": again}], "s")
    fam = both["devices"]["GPU"]["families"][0]
    assert fam["fwd_bench_us"] == [[42.0, 40.0]] and fam["train_bench_us"] == [[210.0, 200.0]]
    with pytest.raises(verified.MlptuiError):
        verified.fold_verified(table, [{"device": "GPU", "dtype": "bf16", "results": results},
                                       {"device": "GPU", "dtype": "fp16", "results": again}], "s")
