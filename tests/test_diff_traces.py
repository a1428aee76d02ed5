"""The diff on real GPU traces: the article's three comparisons and an A100 vs V100 pair."""

from __future__ import annotations

import dataclasses

import pytest
from diff_support import corpus_pair, load, sample

from mlptui.base.errors import MlptuiError
from mlptui.trace.diff.trace_diff import FUSED, SAME, diff_traces, median_step, step_by_number

CONTRACT_SIDE = {"source": str, "step": str, "cpu_us": float, "gpu_busy_us": float, "kernels": int,
                 "launches": int}


def _kernel_rows(d):
    return [r for r in d.rows if r.a and r.a[0].kind == "kernel" or r.b and r.b[0].kind == "kernel"]


def test_linear_eager_vs_compile_same_gemm_t_removed_compile_preops_added() -> None:
    d = diff_traces(load(sample("linear", "eager")), load(sample("linear", "compile")))
    rows = _kernel_rows(d)
    assert [r.status for r in rows] == [SAME]
    assert rows[0].a[0].name == rows[0].b[0].name and rows[0].a[0].name.startswith("nvjet_")
    assert {"aten::linear", "aten::t", "aten::transpose"} <= set(d.cpu.removed_ops)
    assert "TorchDynamo Cache Lookup" in d.cpu.added_ops
    assert any(n.startswith("Torch-Compiled Region") for n in d.cpu.added_ops)
    assert "AOTDispatcher Runtime Wrapper Prologue" in d.cpu.added_ops
    # The same kernel, reached through two different CPU chains.
    assert "aten::linear" in rows[0].a[0].chain and "aten::addmm" in rows[0].a[0].chain
    assert "aten::linear" not in rows[0].b[0].chain and "aten::addmm" in rows[0].b[0].chain
    assert any(n.startswith("Torch-Compiled Region") for n in rows[0].b[0].chain)


def test_mlp_eager_vs_compile_three_gemms_same_gelu_mul_fused() -> None:
    d = diff_traces(load(sample("mlp", "eager")), load(sample("mlp", "compile")))
    rows = _kernel_rows(d)
    assert [r.status for r in rows] == [SAME, SAME, FUSED, SAME]
    gemms = [r for r in rows if r.status == SAME]
    assert all(r.a[0].family == "gemm" and r.a[0].name == r.b[0].name for r in gemms)
    fused = rows[2]
    assert [k.launcher for k in fused.a] == ["aten::gelu", "aten::mul"]
    assert fused.b[0].name.startswith("triton_poi_fused") and "gelu_mul" in fused.b[0].name
    assert fused.delta_us is not None and fused.delta_us < 0       # one pass over memory, not two
    # the memsets before the gate/up GEMMs are reported, and aligned with each other
    memsets = [r for r in d.rows if (r.a or r.b)[0].kind == "memset"]
    assert memsets and all(r.status == SAME for r in memsets)
    assert {"aten::gelu", "aten::mul", "aten::t"} <= set(d.cpu.removed_ops)
    assert "triton_poi_fused__unsafe_view_gelu_mul_0" in d.cpu.added_ops
    assert d.a.kernels == 5 and d.b.kernels == 4


def test_mlp_eager_vs_liger_gelu_mul_fused_into_geglu_kernel() -> None:
    d = diff_traces(load(sample("mlp", "eager")), load(sample("kernels-mlp", "eager")))
    rows = _kernel_rows(d)
    assert [r.status for r in rows] == [SAME, SAME, FUSED, SAME]
    fused = rows[2]
    assert [k.launcher for k in fused.a] == ["aten::gelu", "aten::mul"]
    assert fused.b[0].name == "_geglu_tanh_forward_kernel"
    assert "LigerGELUMulFunction" in d.cpu.added_ops


def test_swapped_mirrors_statuses_and_speedup() -> None:
    d = diff_traces(load(sample("mlp", "eager")), load(sample("mlp", "compile")))
    s = d.swapped()
    assert s.a.source == d.b.source and s.cpu.added_ops == d.cpu.removed_ops
    assert [r.status for r in s.rows] == [r.status for r in d.rows]
    assert s.speedup == pytest.approx(1 / d.speedup)
    assert s.rows[4].a == d.rows[4].b


def test_json_contract_fields_and_types() -> None:
    eager = load(sample("mlp", "eager"))
    doc = diff_traces(eager, load(sample("mlp", "compile"))).report()
    for side in ("a", "b"):
        for key, typ in CONTRACT_SIDE.items():
            assert isinstance(getattr(getattr(doc, side), key), typ), (side, key)
    assert doc.a.step == eager.steps[median_step(eager)].name
    for row in doc.kernels:
        assert row.status in {"same", "changed", "added", "removed", "fused"}
        assert isinstance(row.a, list) and isinstance(row.b, list)
        assert (row.a_us is None) == (not row.a) and (row.b_us is None) == (not row.b)
    assert {f.name for f in dataclasses.fields(doc.cpu)} >= {"removed_ops", "added_ops"}
    assert isinstance(doc.speedup, float) and doc.speedup > 0


def test_median_step_and_chosen_steps() -> None:
    t = load(sample("mlp", "eager"))
    durs = sorted(s.dur for s in t.steps)
    assert t.steps[median_step(t)].dur == durs[(len(durs) - 1) // 2]
    first = step_by_number(t, int(t.steps[0].name.rpartition("#")[2]), "A")
    d = diff_traces(t, load(sample("mlp", "compile")), step_a=first, step_b=0)
    assert d.a.step == t.steps[0].name and d.a.step_index == first
    with pytest.raises(MlptuiError, match="no ProfilerStep#999"):
        step_by_number(t, 999, "A")


def test_a100_vs_v100_pair_finishes_and_pairs_gemms_by_role() -> None:
    control, test = corpus_pair()
    d = diff_traces(load(control), load(test))
    assert "A100" in (d.a.device or "") and "V100" in (d.b.device or "")
    counts = d.counts()
    assert counts["same"] > 500                      # most of the ATen kernels are byte-identical
    changed = [r for r in d.rows if r.status == "changed" and r.a[0].family == "gemm"]
    assert changed, "Ampere cutlass GEMMs should pair with Volta sgemm ones"
    assert any("cutlass" in r.a[0].name for r in changed) and any("volta" in r.b[0].name for r in changed)
    assert all(r.b[0].family == "gemm" for r in changed)
    # the V100 run copies far more (DtoD memcpys): reported as added, never paired with kernels
    added = [r for r in d.rows if r.status == "added"]
    assert sum(1 for r in added if r.b[0].kind == "memcpy") > 500
    assert d.speedup is not None and d.speedup < 1    # the V100 steps are slower
    n_a = sum(len(r.a) for r in d.rows)
    n_b = sum(len(r.b) for r in d.rows)
    assert n_a == sum(1 for g in d.trace_a.gpu if g.step == d.a.step_index)
    assert n_b == sum(1 for g in d.trace_b.gpu if g.step == d.b.step_index)


def test_time_by_family_and_launch_calls_tell_the_hopper_story() -> None:
    d = diff_traces(load(sample("mlp", "eager")), load(sample("mlp", "compile")))
    fam = {p.name: p for p in d.families}
    assert (fam["gemm"].a_count, fam["gemm"].b_count) == (3, 3)
    assert (fam["pointwise"].a_count, fam["pointwise"].b_count) == (2, 1)
    assert fam["pointwise"].b_us < fam["pointwise"].a_us
    assert (fam["memset"].a_count, fam["memset"].b_count) == (2, 2)   # nvjet's memsets, on both sides
    calls = {p.name: p for p in d.launch_calls}
    # eager launches ATen kernels with cudaLaunchKernel, Inductor's Triton kernel goes through cuLaunchKernel;
    # cuBLAS nvjet GEMMs use cuLaunchKernelEx after a cudaMemsetAsync on both sides
    assert (calls["cudaLaunchKernel"].a_count, calls["cudaLaunchKernel"].b_count) == (2, 0)
    assert (calls["cuLaunchKernel"].a_count, calls["cuLaunchKernel"].b_count) == (0, 1)
    assert (calls["cuLaunchKernelEx"].a_count, calls["cuLaunchKernelEx"].b_count) == (3, 3)
    assert (calls["cudaMemsetAsync"].a_count, calls["cudaMemsetAsync"].b_count) == (2, 2)
    doc = d.report()
    assert doc.biggest[0] == 5 and doc.kernels[4].status == "fused"
    s = d.swapped()
    assert {p.name: (p.a_count, p.b_count) for p in s.launch_calls}["cuLaunchKernel"] == (1, 0)


def test_a_side_without_gpu_work_makes_every_row_added() -> None:
    from diff_support import CORPUS

    cpu_only = sorted(CORPUS.glob("cpu_only__*.json.gz"))
    if not cpu_only:
        pytest.skip("no CPU-only corpus trace")
    d = diff_traces(load(cpu_only[0]), load(sample("mlp", "eager")))
    assert d.rows and all(r.status == "added" for r in d.rows)
    from mlptui.render.diff_text import render_text

    assert "A has no GPU work" in render_text(d.report())


def test_pair_details_show_both_sides_launch_geometry_and_occupancy() -> None:
    from mlptui.viewmodels.diff_details import pair_details

    d = diff_traces(load(sample("mlp", "eager")), load(sample("kernels-mlp", "eager")))
    fused = next(r for r in d.rows if r.status == FUSED)
    text = "\n".join(pair_details(d, fused))
    assert "kernels_mlp_fwd → LigerGELUMulFunction → cuLaunchKernelEx" in text
    assert "mlp_fwd → aten::gelu → cudaLaunchKernel" in text and "mlp_fwd → aten::mul → cudaLaunchKernel" in text
    assert "raw: _geglu_tanh_forward_kernel" in text
    assert text.count("occupancy: ") == 3 and "registers per thread 48" in text


def test_a_trace_against_itself_is_all_same() -> None:
    t = load(sample("mlp", "reduce-overhead"))
    d = diff_traces(t, t)
    assert d.rows and all(r.status == SAME for r in d.rows)
    assert d.speedup == pytest.approx(1.0) and not d.cpu.removed_ops and not d.cpu.added_ops


def test_mlp_eager_vs_fused_triton_mlp_gate_up_gemms_and_geglu_fused() -> None:
    d = diff_traces(load(sample("mlp", "eager")), load(sample("fused-mlp", "eager")))
    rows = _kernel_rows(d)
    assert [r.status for r in rows] == [FUSED, SAME]
    fused = rows[0]
    assert sorted(k.launcher for k in fused.a) == ["aten::gelu", "aten::mm", "aten::mm", "aten::mul"]
    assert len(fused.b) == 1 and "geglu" in fused.b[0].name and fused.b[0].library.startswith("Triton")
    assert rows[1].a[0].family == "gemm" and rows[1].a[0].name == rows[1].b[0].name   # the down projection
    # the gate/up GEMMs' memsets have nothing to pair with: one Triton kernel, no cuBLAS workspace
    assert {r.status for r in d.rows if (r.a or r.b)[0].kind == "memset"} == {"removed"}


def test_unprofiled_speedup_comes_from_the_runs_manifests() -> None:
    a, b = load(sample("mlp", "compile")), load(sample("fused-mlp", "eager"))
    doc = diff_traces(a, b).report()
    a_us, b_us = a.manifest["timing"]["median_us"], b.manifest["timing"]["median_us"]
    assert doc.a.timed_us == pytest.approx(a_us) and doc.b.timed_us == pytest.approx(b_us)
    assert doc.timed_speedup == pytest.approx(a_us / b_us, rel=1e-3)
    assert doc.timed_speedup > 1.1          # the fused MLP is faster than compile, unprofiled
    assert diff_traces(b, a).report().timed_speedup == pytest.approx(b_us / a_us, rel=1e-3)
    untimed = diff_traces(a, a)
    untimed.a = dataclasses.replace(untimed.a, timed_us=None)   # a trace without a runner's manifest
    assert untimed.report().timed_speedup is None
