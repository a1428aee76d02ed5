"""The diff across the attention rung: naive ⇄ in-place shows the removed Memcpy and what launched it;
math ⇄ flash shows the math backend's kernels collapsing into one fused kernel (⊕); checked against the
raw events of the aligned steps."""

from __future__ import annotations

import json

from attention_support import Raw, attention_sample

from mlptui.cli import main


def _diff(capsys, a: str, b: str) -> dict:
    assert main(["diff", str(attention_sample(a)), str(attention_sample(b)), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _step_index(raw: Raw, name: str) -> int:
    return next(i for i, s in enumerate(raw.steps) if s["name"] == name)


def test_naive_to_in_place_removes_the_copy_and_nothing_else(capsys) -> None:
    doc = _diff(capsys, "attention-naive", "attention-inplace")
    removed = [k for k in doc["kernels"] if k["status"] == "removed"]
    assert len(removed) == 1 and removed[0]["kind"] == "memcpy"
    assert removed[0]["a"] == ["Memcpy DtoD (Device -> Device)"]
    assert "aten::masked_fill" in removed[0]["a_chain"] and removed[0]["a_chain"][-1] == "cudaMemcpyAsync"
    assert {k["status"] for k in doc["kernels"]} == {"same", "removed"}
    raw_a = Raw(attention_sample("attention-naive"))
    raw_b = Raw(attention_sample("attention-inplace"))
    sa, sb = doc["a"]["step"], doc["b"]["step"]
    a_copies = raw_a.gpu_in_step(_step_index(raw_a, sa), "gpu_memcpy")
    b_copies = raw_b.gpu_in_step(_step_index(raw_b, sb), "gpu_memcpy")
    assert (len(a_copies), len(b_copies)) == (1, 0)
    assert removed[0]["a_us"] == a_copies[0]["dur"]
    assert "aten::clone" in doc["cpu"]["removed_ops"]


def test_math_to_flash_collapses_twenty_kernels_into_one(capsys) -> None:
    doc = _diff(capsys, "attention-sdpa-math", "attention-sdpa-flash")
    fused = [k for k in doc["kernels"] if k["status"] == "fused"]
    assert len(fused) == 1 and [k["status"] for k in doc["kernels"]] == ["fused"]
    raw_a = Raw(attention_sample("attention-sdpa-math"))
    raw_b = Raw(attention_sample("attention-sdpa-flash"))
    a_kernels = raw_a.gpu_in_step(_step_index(raw_a, doc["a"]["step"]))
    b_kernels = raw_b.gpu_in_step(_step_index(raw_b, doc["b"]["step"]))
    assert len(a_kernels) == 20 and len(b_kernels) == 1
    assert sorted(fused[0]["a"]) == sorted(k["name"] for k in a_kernels)
    assert fused[0]["b"] == [b_kernels[0]["name"]] and "pytorch_flash::flash_fwd_kernel" in fused[0]["b"][0]


def test_the_text_diff_marks_the_collapse_with_the_fused_marker(capsys) -> None:
    assert main(["diff", str(attention_sample("attention-sdpa-math")),
                 str(attention_sample("attention-sdpa-flash"))]) == 0
    out = capsys.readouterr().out
    assert "0 same, 0 changed, 0 added, 0 removed, 1 fused" in out
    assert "⊕" in out and "FlashAttention attention fwd bf16" in out


def test_hand_written_attention_against_flash_is_one_fused_row_too(capsys) -> None:
    doc = _diff(capsys, "attention-inplace", "attention-sdpa-flash")
    fused = [k for k in doc["kernels"] if k["status"] == "fused"]
    assert len(fused) == 1 and len(fused[0]["a"]) == 5      # 2 GEMMs, mul, masked_fill, softmax
