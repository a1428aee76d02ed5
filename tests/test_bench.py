"""`mlptui bench`: argument handling without a GPU, the atomic no-overwrite writer, and the committed
GPU reports in sample_traces/bench/ (real measurements: their layout, completeness and claims)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mlptui.base.errors import MlptuiError
from mlptui.runners.cli import bench as cli_bench

ROOT = Path(__file__).resolve().parents[1]
REPORTS = sorted((ROOT / "sample_traces" / "bench").glob("*.json"))
MODES = {"eager", "compile", "max-autotune", "kernels", "fused"}


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlptui.cli", "bench", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def test_unknown_shape_is_a_one_line_error() -> None:
    proc = _cli("mlp", "--shapes", "article,huge")
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("mlptui: unknown shape 'huge' (choose from article, seed, decode16, "
                                   "decode64, decode)")


def test_unknown_mode_and_workload() -> None:
    proc = _cli("mlp", "--modes", "eager,turbo")
    assert proc.returncode == 2 and "unknown mode 'turbo'" in proc.stderr
    proc = _cli("linear")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr


def test_without_a_gpu_says_so_in_one_line() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = _cli("mlp", "--json")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "mlptui: bench needs a CUDA GPU, and torch sees none"
    assert proc.stdout == ""


def test_resolve_shapes_and_modes() -> None:
    pytest.importorskip("torch")
    from mlptui.runners.bench import modes as bench

    assert [s.name for s in bench.resolve_shapes("article,seed,decode")] == ["article", "seed", "decode16",
                                                                              "decode64"]
    assert [s.rows for s in bench.resolve_shapes("decode,article,decode16")] == [16, 64, 8192]
    assert bench.SHAPES["seed"].as_dict() == {"batch": 8, "seq": 128, "dim": 1024, "hidden": 4096, "rows": 1024}
    assert bench.SHAPES["article"].flops == 3 * 2 * 8192 * 768 * 3072
    assert bench.resolve_modes("fused,eager") == ["eager", "fused"]  # always in ladder order
    assert tuple(bench.MODES) == cli_bench.MODES
    with pytest.raises(ValueError, match="unknown shape 'x'"):
        bench.resolve_shapes("x")
    with pytest.raises(ValueError, match="unknown mode"):
        bench.resolve_modes("eager,fast")


def test_write_new_file_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "h100.json"
    cli_bench.write_new_file(target, '{"a": 1}\n')
    assert json.loads(target.read_text()) == {"a": 1}
    with pytest.raises(MlptuiError, match="never overwrites"):
        cli_bench.write_new_file(target, "{}")
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["h100.json"]  # no temp file left behind
    with pytest.raises(MlptuiError, match="does not exist"):
        cli_bench.write_new_file(tmp_path / "missing" / "x.json", "{}")


def test_reports_were_committed() -> None:
    assert REPORTS and all(p.stem in ("h100", "h200") or p.stem.startswith(("a", "b", "l", "rtx")) for p in REPORTS)


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.stem)
def test_committed_report_is_complete_and_consistent(path: Path) -> None:
    doc = json.loads(path.read_text())
    for key in ("device", "torch", "triton", "command", "results"):
        assert doc[key], key
    assert doc["device_slug"] == path.stem and path.stem in doc["device"].lower()
    assert doc["command"].startswith("mlptui bench mlp")
    for r in doc["results"]:  # every row can be compared with its eager row
        assert {"shape", "rows", "dim", "hidden", "mode", "pass", "median_us"} <= set(r), r
        assert r["pass"] in ("fwd", "fwd+bwd") and r["median_us"] > 0
    named = [r for r in doc["results"] if not r.get("sweep") and not r.get("calibration")]
    rows = {(r["mode"], r["shape"]): r for r in named}
    shapes = {r["shape"] for r in named}
    assert {"article", "seed", "decode16", "decode64"} <= shapes
    for shape in shapes:
        floor = rows[("cublas-3gemm", shape)]["median_us"]
        eager = rows[("eager", shape)]["median_us"]
        assert {m for m, s in rows if s == shape} >= MODES - {"max-autotune"}  # max-autotune is optional
        for mode in (m for m in MODES if (m, shape) in rows):
            r = rows[(mode, shape)]
            assert r["median_us"] > 0 and r["tflops"] > 0
            assert r["rel_err"] <= 1e-2  # every mode computed the same function
            assert r["floor_pct"] == pytest.approx(100 * floor / r["median_us"], abs=0.1)
            assert r["speedup_vs_eager"] == pytest.approx(eager / r["median_us"], rel=1e-2)
        fused = rows[("fused", shape)]
        if fused["path"] == "unfused":  # the fallback was chosen: the kernel path is reported beside it
            assert rows[("fused-kernel", shape)]["median_us"] > 0
    assert "liger" in rows[("kernels", "article")]["source"]
    assert rows[("fused", "article")]["path"] == "fused"


@pytest.mark.parametrize("path", [p for p in REPORTS if "sweep" in json.loads(p.read_text())], ids=lambda p: p.stem)
def test_committed_sweep_is_complete_and_its_ratios_hold(path: Path) -> None:
    doc = json.loads(path.read_text())
    cells: dict[tuple, dict[str, float]] = {}
    paired: dict[tuple, dict[str, float]] = {}
    fused_rows = {}
    for r in doc["results"]:
        if r.get("sweep"):
            key = (r["shape"], r["rows"], r["pass"])
            cells.setdefault(key, {})[r["mode"]] = r["median_us"]
            paired.setdefault(key, {"eager": 1.0})
            if "paired_vs_eager" in r:
                paired[key][r["mode"]] = r["paired_vs_eager"][0]
            if r["mode"] == "fused":
                fused_rows[key] = r
    sw = doc["sweep"]
    assert len(cells) == len(sw["families"]) * len(sw["rows"]) * len(sw["passes"])
    failed = {(e["shape"], int(e["rows"]), e["pass"]) for e in doc["errors"] if e.get("rows") and e["mode"] == "fused"}
    for key, modes in cells.items():
        assert "eager" in modes and ("fused" in modes or key in failed), key  # a missing cell says why
        if "fused" not in modes:
            continue
        for mode, us in modes.items():
            if mode == "fused":
                continue
            # timed in different groups, the fused module and another mode meet through eager (their
            # paired ratios against it); without pairs, the medians
            p = paired[key]
            expected = p[mode] / p["fused"] if mode in p and "fused" in p else us / modes["fused"]
            assert fused_rows[key][f"vs_{mode}"] == pytest.approx(expected, rel=1e-2)
    from mlptui.runners.bench.report import fused_over_eager

    for ps, summary in sw["summary"].items():
        worst = max(fused_over_eager(fused_rows[k]) for k in fused_rows if k[2] == ps)
        assert summary["worst_fused_over_eager"] == pytest.approx(worst, rel=1e-2)
        # where the forced fused path was timed beside the routed module: the route against the better of
        # its two choices, from the rows' own paired ratios
        to_best = {k: paired[k]["fused"] / min(1.0, paired[k]["fused-forced"]) for k in fused_rows
                   if k[2] == ps and "fused-forced" in paired[k]}
        if to_best:
            assert summary["worst_over_best"] == pytest.approx(max(to_best.values()), abs=1e-3)
            assert len(summary["behind_best_by_2pct"]) == sum(q > 1.02 for q in to_best.values())
        else:
            assert "worst_over_best" not in summary
    assert doc["crossover"]["families"]  # the table the sweep's fused module routed by


@pytest.mark.parametrize("path", [p for p in REPORTS if "sweep" in json.loads(p.read_text())], ids=lambda p: p.stem)
def test_committed_sweep_routes_to_the_better_choice_or_says_why_not(path: Path) -> None:
    """Every verified cell: the routed module is never more than 2 % slower than eager; and where the forced
    fused path was timed beside it, it is within 2 % of the better of eager and the forced path, except
    where the calibration, read by the routing rule (at least 1 % faster at the slow end of its interval,
    and by 12 µs or 2 % of eager's call, whichever is less), pointed the other way: there the gap is the
    drift between the two timings, and the cell is listed in the summary."""
    doc = json.loads(path.read_text())
    cal: dict[tuple, dict[str, dict]] = {}
    ver: dict[tuple, dict[str, dict]] = {}
    for r in doc["results"]:
        key = (r["shape"], r["rows"], r["pass"])
        if r.get("calibration"):
            cal.setdefault(key, {})[r["mode"]] = r
        elif r.get("sweep"):
            ver.setdefault(key, {})[r["mode"]] = r
    judged = 0
    for key, modes in ver.items():
        routed = modes["fused"]["paired_vs_eager"][0]
        assert routed <= 1.02, key
        if "fused-forced" not in modes:
            continue
        judged += 1
        forced = modes["fused-forced"]["paired_vs_eager"][0]
        if routed / min(1.0, forced) <= 1.02:
            continue
        c = cal[key]
        eager_us = c["eager"]["median_us"]
        slow_end_us = eager_us * c["fused-forced"]["paired_vs_eager"][-1]
        said_fused = slow_end_us <= min(0.99 * eager_us, eager_us - min(12.0, 0.02 * eager_us))
        assert said_fused == (modes["fused"]["path"] == "fused"), key   # the route followed the calibration
        listed = [c.split(" (")[0] for c in doc["sweep"]["summary"][key[2]]["behind_best_by_2pct"]]
        assert f"{key[0]} rows {key[1]}" in listed
    if any("fused-forced" in m for m in ver.values()):
        assert judged == len(ver)


def test_render_table_lists_every_row() -> None:
    if not REPORTS:
        pytest.skip("no committed report")
    pytest.importorskip("torch")
    from mlptui.runners.bench import modes as bench

    doc = json.loads(REPORTS[0].read_text())
    text = bench.render_table(doc)
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["shape", "mode", "median"]
    named = [r for r in doc["results"] if not r.get("sweep") and not r.get("calibration")]
    cells = {(r["shape"], r["rows"], r["pass"]) for r in doc["results"] if r.get("sweep")}
    sweep_lines = 2 + len(cells) if cells else 0  # a blank line and a header, then one line per cell
    assert len(lines) == 2 + len(named) + sweep_lines + len(doc.get("errors", []))
    assert any(ln.startswith("article   fused ") for ln in lines)
