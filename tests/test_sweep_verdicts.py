"""How the sweep turns one cell's interleaved calls into a verdict (runners/mlptui/runners/bench/sweep.py::paired_ratio) and how
the report and the crossover fold read it (runners/mlptui/runners/bench/report.py, runners/mlptui/runners/fused/crossover.py). CPU only:
the call times are made up, the arithmetic is the sweep's."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from mlptui.runners.bench.pairing import noise, paired_ratio
from mlptui.runners.bench.report import summarize
from mlptui.runners.fused import crossover as cx


def _drifting(n: int, factor: float, seed: int = 1) -> dict[str, list[float]]:
    """Eager and a mode `factor` slower, both riding the same slow drift of the machine's speed (round k of
    both at the same moment) plus independent call-to-call jitter."""
    rng = random.Random(seed)
    drift = [1.0 + 0.3 * (k % 50) / 50 for k in range(n)]  # 30 % saw-tooth between rounds
    eager = [100e-6 * d * (1 + rng.gauss(0, 0.002)) for d in drift]
    other = [100e-6 * factor * d * (1 + rng.gauss(0, 0.002)) for d in drift]
    return {"eager": eager, "other": other}


def test_paired_ratio_cancels_a_drift_between_rounds() -> None:
    times = _drifting(200, 1.05)
    mid, lo, hi = paired_ratio(times, "other")
    assert lo <= mid <= hi
    assert lo < 1.05 < hi and hi - lo < 0.005


def test_paired_ratio_is_the_median_of_round_ratios_with_order_statistic_bounds() -> None:
    times = {"eager": [1.0] * 9, "m": [float(v) for v in (9, 1, 8, 2, 7, 3, 6, 4, 5)]}
    mid, lo, hi = paired_ratio(times, "m")
    assert mid == 5.0
    # n = 9: ranks floor(4.5 - 2.94) = 1 and ceil(4.5 + 2.94) - 1 = 7 of the sorted ratios 1..9
    assert (lo, hi) == (2.0, 8.0)
    even = paired_ratio({"eager": [1.0] * 4, "m": [1.0, 2.0, 3.0, 4.0]}, "m")
    assert even[0] == 2.5
    with pytest.raises(ValueError):
        paired_ratio({"eager": [], "m": []}, "m")
    with pytest.raises(ValueError):  # rounds that do not pair up are a bug, not a figure
        paired_ratio({"eager": [1.0], "m": [1.0, 2.0]}, "m")


def test_noise_is_eagers_twin_against_eager() -> None:
    assert noise({"eager-again": [0.97, 0.95, 0.99]}) == pytest.approx(0.03)
    assert noise({"fused": [1.0, 0.9, 1.1]}) is None


def _row(rows: int, paired: list[float] | None, vs_eager: float, path: str = "unfused") -> dict[str, object]:
    r: dict[str, object] = {"sweep": True, "shape": "768x3072", "dim": 768, "hidden": 3072, "rows": rows,
                            "pass": "fwd", "mode": "fused", "median_us": 100.0, "vs_eager": vs_eager, "path": path}
    if paired is not None:
        r["paired_vs_eager"] = paired
    return r


def test_summary_reads_the_paired_ratio_and_its_interval() -> None:
    cells = [_row(1, [1.03, 1.025, 1.04], 1.0),    # medians equal, rounds say 3 % slower: slower, beyond
             _row(16, [1.03, 1.01, 1.05], 0.99),   # slower, but the interval reaches below 1.02
             _row(64, [0.99, 0.98, 1.0], 0.95)]    # medians say 5 % slower, rounds say not
    s = summarize(cells)["fwd"]
    assert s["estimator"] == "paired"
    assert [c.split(" (")[0] for c in s["slower_than_eager_by_2pct"]] == ["768x3072 rows 1", "768x3072 rows 16"]
    assert [c.split(" (")[0] for c in s["slower_beyond_noise"]] == ["768x3072 rows 1"]
    assert s["worst_fused_over_eager"] == 1.03


def test_summary_judges_the_route_against_the_better_of_its_two_choices() -> None:
    """With the forced fused path timed beside the routed module: routed unfused where forced was 8 % faster
    is 8.7 % behind the better choice (1.0 / 0.92); routed fused where forced is 3 % slower than eager is
    3 % behind eager; a route that took the better path is not listed. Cells without a forced timing (older
    reports) are not judged, and no figure is made up for them."""
    def forced(rows: int, ratio: float) -> dict[str, object]:
        return {"sweep": True, "shape": "768x3072", "rows": rows, "pass": "fwd", "mode": "fused-forced",
                "median_us": 100.0 * ratio, "paired_vs_eager": [ratio, ratio - 0.01, ratio + 0.01]}

    cells = [_row(1, [1.0, 0.99, 1.01], 1.0), forced(1, 0.92),                    # unfused: left 8 % unused
             _row(16, [1.03, 1.02, 1.04], 0.97, "fused"), forced(16, 1.03),      # fused though slower
             _row(64, [0.80, 0.79, 0.81], 1.25, "fused"), forced(64, 0.80),      # fused, the better path
             _row(128, [1.0, 0.99, 1.01], 1.0)]                                  # no forced timing
    s = summarize(cells)["fwd"]
    assert s["worst_over_best"] == round(1.0 / 0.92, 3) and s["worst_over_best_cell"] == "768x3072 rows 1"
    assert [c.split(" (")[0] for c in s["behind_best_by_2pct"]] == ["768x3072 rows 1", "768x3072 rows 16"]
    assert "worst_over_best" not in summarize([_row(1, [1.0, 0.99, 1.01], 1.0)])["fwd"]


def test_summary_of_an_older_report_reads_the_medians() -> None:
    s = summarize([_row(64, None, 1 / 1.05)])["fwd"]
    assert s["estimator"] == "ratio of medians" and s["worst_fused_over_eager"] == 1.05


def test_calibration_pairs_take_the_paired_ratio() -> None:
    """The routing model's (fused, eager) pair of a calibrated cell is eager's median times the slow end
    of the paired ratio's interval where the row has one (0.82 here, though the two medians say 0.95)."""
    fam = {"dim": 768, "hidden": 3072, "rows": [1, 8192], "fused_gpu_us": [10, 180], "eager_gpu_us": [14, 260],
           "fused_host_us": 5, "eager_host_us": 5}
    base = cx.model_from_table({"devices": {"GPU": {"families": [fam]}}}, "GPU")
    results = [{"calibration": True, "dim": 768, "hidden": 3072, "rows": 64, "pass": "fwd", "mode": "eager",
                "median_us": 100.0, "noise": 0.0},
               {"calibration": True, "dim": 768, "hidden": 3072, "rows": 64, "pass": "fwd",
                "mode": "fused-forced", "median_us": 95.0, "noise": 0.0, "paired_vs_eager": [0.8, 0.78, 0.82]}]
    model = cx.with_calibration(base, results)
    assert model.families[0].fwd_bench == ((pytest.approx(82.0), 100.0),)


def test_shared_weights_are_eagers_very_tensors() -> None:
    """`--sweep-weights shared`: every mode's parameters are eager's tensors, so placement is no difference
    between modes; a module whose parameters eager lacks is refused."""
    torch = pytest.importorskip("torch", reason="the sweep's modules need torch")

    from mlptui.runners.bench.sweep import share_parameters
    from mlptui.runners.fused import FusedGeGLUMLP
    from mlptui.runners.workloads.modules import SimpleGeGLUMLP

    eager, twin, fused = SimpleGeGLUMLP(8, 16), SimpleGeGLUMLP(8, 16), FusedGeGLUMLP(8, 16)
    for m in (twin, fused):
        share_parameters(m, eager)
        assert all(p is q for p, q in zip(m.parameters(), eager.parameters(), strict=True))
    x = torch.randn(3, 8)
    assert torch.equal(twin(x), eager(x))
    with pytest.raises(KeyError):
        share_parameters(torch.nn.Linear(8, 8), eager)


def test_a_cells_rows_carry_each_modes_paired_ratio_but_eagers() -> None:
    pytest.importorskip("torch", reason="sweep.py needs torch")
    from mlptui.runners.bench.sweep import cell_rows

    rows = cell_rows({"eager": 100.004, "fused": 80.0}, {"fused": [0.8, 0.79, 0.81]}, {"rows": 64, "pass": "fwd"})
    assert rows == [{"rows": 64, "pass": "fwd", "mode": "eager", "median_us": 100.0},
                    {"rows": 64, "pass": "fwd", "mode": "fused", "median_us": 80.0, "paired_vs_eager": [0.8, 0.79, 0.81]}]


def test_a_calibrated_cell_whose_interval_reaches_eager_stays_unfused() -> None:
    """Fused measured 5 % faster at the median but with an interval reaching 0.995 of eager is not
    measured faster by the 1 % margin: the model's own prediction (fused far faster here) is vetoed."""
    fam = {"dim": 768, "hidden": 3072, "rows": [1, 8192], "fused_gpu_us": [10, 180], "eager_gpu_us": [14, 260],
           "fused_host_us": 5, "eager_host_us": 5}
    base = cx.model_from_table({"devices": {"GPU": {"families": [fam]}}}, "GPU")

    def calibrated(paired: list[float], eager_us: float = 2000.0) -> cx.CrossoverModel:
        return cx.with_calibration(base, [
            {"calibration": True, "dim": 768, "hidden": 3072, "rows": 64, "pass": "fwd", "mode": "eager",
             "median_us": eager_us, "noise": 0.0},
            {"calibration": True, "dim": 768, "hidden": 3072, "rows": 64, "pass": "fwd", "mode": "fused-forced",
             "median_us": eager_us * paired[0], "noise": 0.0, "paired_vs_eager": paired}])

    assert base.use_fused(64, 768, 3072)
    assert not calibrated([0.95, 0.92, 0.995]).use_fused(64, 768, 3072)
    assert calibrated([0.97, 0.965, 0.985]).use_fused(64, 768, 3072)  # 1.5 % (30 µs) faster at the slow end
    assert cx.BENCH_MARGIN == 0.01 < cx.MARGIN


def test_a_calibrated_cell_must_also_save_the_drift_between_two_timings_up_to_two_percent() -> None:
    """The drift allowance is PHASE_DRIFT_US per call, capped at DRIFT_CAP (2 %) of eager's call: a 150 µs
    call measured 1.5 % faster at the slow end of its interval stays unfused, 2 % (3 µs) is enough; a 2 ms
    call needs 12 µs (0.6 %) and the 1 % margin, whichever is more; a 600 µs call needs the full 12 µs."""
    fam = cx.Family(768, 3072, cx.PathCost(5, (1, 8192), (10, 180)), cx.PathCost(5, (1, 8192), (14, 260)),
                    bench_rows=(64,))
    assert (cx.PHASE_DRIFT_US, cx.DRIFT_CAP, cx.BENCH_MARGIN) == (12.0, 0.02, 0.01)

    def verdict(fused_us: float, eager_us: float) -> bool | None:
        return replace(fam, fwd_bench=((fused_us, eager_us),)).bench_verdict(64, False, cx.BENCH_MARGIN)

    assert verdict(147.75, 150.0) is False     # 1.5 %: inside the allowance
    assert verdict(147.0, 150.0) is True       # exactly 2 % (3 µs) faster
    assert verdict(135.0, 150.0) is True
    assert verdict(589.0, 600.0) is False      # 11 µs: 1.8 %, under the 12 µs the 2 % cap allows here
    assert verdict(588.0, 600.0) is True
    assert verdict(1970.0, 2000.0) is True
    assert verdict(1985.0, 2000.0) is False    # 15 µs, but under the 1 % margin
    assert replace(fam, fwd_bench=((None, 150.0),)).bench_verdict(64, False, cx.BENCH_MARGIN) is None


def test_training_is_routed_by_the_same_margins_as_inference() -> None:
    """Training cells measured 2-10 % faster with the fused path forced on route fused (a larger training
    margin kept such cells unfused); an unmeasured training cell stays unfused."""
    fam = cx.Family(768, 3072, cx.PathCost(5, (1, 8192), (10, 180)), cx.PathCost(5, (1, 8192), (14, 260)),
                    bench_rows=(64, 8192), fwd_bench=((None, None), (None, None)),
                    train_bench=((None, None), (3_100.0, 3_300.0)))
    model = cx.CrossoverModel("GPU", (fam,))
    assert model.use_fused(8192, 768, 3072, train=True)           # 6 % faster
    assert not model.use_fused(64, 768, 3072, train=True)         # not measured
    slower = replace(fam, train_bench=((None, None), (3_280.0, 3_300.0)))   # 0.6 %: under the 1 % margin
    assert not cx.CrossoverModel("GPU", (slower,)).use_fused(8192, 768, 3072, train=True)


def test_verification_times_the_fused_module_head_to_head_with_eager() -> None:
    pytest.importorskip("torch", reason="sweep.py needs torch")
    from mlptui.runners.bench.sweep import verification_groups

    assert verification_groups(["eager", "eager-again", "fused", "compile", "kernels"]) == \
        [["eager", "eager-again", "fused"], ["eager", "compile", "kernels"]]
    assert verification_groups(["eager", "eager-again", "fused", "fused-forced", "compile"]) == \
        [["eager", "eager-again", "fused", "fused-forced"], ["eager", "compile"]]
    assert verification_groups(["eager", "eager-again", "fused"]) == [["eager", "eager-again", "fused"]]
    # nothing to pair the fused module with (eager failed to build): one group, as before
    assert verification_groups(["fused", "compile"]) == [["fused", "compile"]]
    assert verification_groups(["eager", "compile"]) == [["eager", "compile"]]


def test_groups_meet_through_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each group is timed on its own (the timing is faked: it needs a GPU); every mode keeps its own group's
    median and paired ratio, eager its first group's median, and the fused row's ratios to the modes of
    the other group go through eager."""
    pytest.importorskip("torch", reason="sweep.py needs torch")
    from mlptui.runners.bench import sweep

    seen: list[list[str]] = []
    medians = {"eager": 100.0, "eager-again": 101.0, "fused": 90.0, "compile": 150.0}

    def fake(fns):
        seen.append(list(fns))
        drift = 1.0 if len(seen) == 1 else 1.1  # the second group ran on a slower machine
        best = {m: medians[m] * drift for m in fns}
        return best, {m: [round(best[m] / best["eager"], 4)] * 3 for m in fns if m != "eager"}

    monkeypatch.setattr(sweep, "timed_cell", fake)
    fns = {m: (lambda: None) for m in ("eager", "eager-again", "fused", "compile")}
    best, paired = sweep.timed_groups(fns)
    assert seen == [["eager", "eager-again", "fused"], ["eager", "compile"]]
    assert best == {"eager": 100.0, "eager-again": 101.0, "fused": 90.0, "compile": 165.0}
    assert paired["compile"][0] == 1.5 and paired["fused"][0] == 0.9
    assert sweep.vs_fused(best, paired, "compile") == pytest.approx(1.5 / 0.9)  # not 165 / 90
    assert sweep.vs_fused(best, paired, "eager") == pytest.approx(1 / 0.9)
    assert sweep.vs_fused({"fused": 80.0, "kernels": 120.0}, {}, "kernels") == 1.5  # no pairs: the medians


def test_a_measured_cell_routes_by_its_measurement_and_the_model_fills_the_rest() -> None:
    """The replay model has the two paths level at 8192 rows (no 3 % margin: unfused), the calibration
    measured fused 7 % faster there: fused. A row count nearer an unmeasured grid point follows the model."""
    fam = {"dim": 768, "hidden": 3072, "rows": [1, 8192], "fused_gpu_us": [10, 3300], "eager_gpu_us": [14, 3310],
           "fused_host_us": 5, "eager_host_us": 5}
    base = cx.model_from_table({"devices": {"GPU": {"families": [fam]}}}, "GPU")
    assert not base.use_fused(8192, 768, 3072) and base.measured(8192, 768, 3072) is None

    def cal(rows: int, mode: str, us: float, paired: list[float] | None = None) -> dict[str, object]:
        r: dict[str, object] = {"calibration": True, "dim": 768, "hidden": 3072, "rows": rows, "pass": "fwd",
                                "mode": mode, "median_us": us, "noise": 0.0}
        return r if paired is None else {**r, "paired_vs_eager": paired}

    model = cx.with_calibration(base, [cal(8192, "eager", 3450.0), cal(8192, "fused-forced", 3210.0,
                                                                        [0.93, 0.929, 0.931])])
    assert model.measured(8192, 768, 3072) is True and model.use_fused(8192, 768, 3072)
    assert model.use_fused(4096, 768, 3072)  # nearest measured row count: 8192
    slower = cx.with_calibration(base, [cal(8192, "eager", 3450.0), cal(8192, "fused-forced", 3460.0,
                                                                         [1.003, 1.0, 1.006])])
    assert slower.measured(8192, 768, 3072) is False and not slower.use_fused(8192, 768, 3072)
