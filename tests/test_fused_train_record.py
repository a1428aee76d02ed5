"""The committed run-20 records (benchmarks/results/run20/, H100): what FUSED_NOTES says of them holds in
the files themselves, read here from the raw per-round timings rather than the records' own medians."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

RECORDS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "run20"


def _load(name: str) -> dict:
    return json.loads((RECORDS / name).read_text(encoding="utf-8"))


def _median(rounds: list[float]) -> float:
    return statistics.median(rounds)


def test_records_name_device_versions_and_command() -> None:
    for name in ("before.json", "after.json", "after_shared.json", "train_bimodal.json", "host_and_gpu_apart.json"):
        doc = _load(name)
        assert doc["device"] == "NVIDIA H100 80GB HBM3" and doc["torch"] == "2.11.0+cu130"
        assert doc["triton"] == "3.6.0" and doc["command"]


def test_every_process_after_the_change_takes_one_training_kernel() -> None:
    before = {p["plans_auto"]["m8192-n3072-k768-bfloat16-train"] for p in _load("before.json")["processes"]}
    after = {p["plans_auto"]["m8192-n3072-k768-bfloat16-train"]
             for name in ("after.json", "after_shared.json") for p in _load(name)["processes"]}
    assert len(before) > 1 and len(after) == 1


def test_routed_training_never_slower_than_eager_after_but_not_yet_stable_across_processes() -> None:
    for name in ("after.json", "after_shared.json"):
        routed = []
        for p in _load(name)["processes"]:
            r = p["rounds_us"]
            ratio = _median(r["fused-auto"]) / _median(r["eager"])
            assert ratio <= 1.02, (name, ratio)
            routed.append(_median(r["fused-auto"]))
        # the ≤ 3 % goal between processes is not met (the notes say why): the spread is recorded, not hidden
        assert max(routed) / min(routed) > 1.03
    before = [_median(p["rounds_us"]["fused-auto"]) / _median(p["rounds_us"]["eager"])
              for p in _load("before.json")["processes"]]
    assert max(before) > 1.02


def test_the_training_step_is_host_bound_on_that_machine() -> None:
    apart = _load("host_and_gpu_apart.json")["host_and_gpu_apart"]
    for mode in ("eager", "fused"):
        host = _median(apart[mode]["host_us_all"])
        assert host > apart[mode]["gpu_us_back_to_back"], mode
    assert apart["fused"]["gpu_us_back_to_back"] < apart["eager"]["gpu_us_back_to_back"]


def test_first_calls_with_the_kept_key_cost_less_but_not_yet_50_ms() -> None:
    before = [f["first_ms"] for f in _load("before.json")["first_call"]]
    # the first probe after the training processes tuned the inference bucket (training has its own entry)
    kept = [f["first_ms"] for name in ("after.json", "after_shared.json")
            for f in _load(name)["first_call"][1:] + _load(name)["first_call_key_from_file"]
            if f.get("key_settled") == ["kept"] and "m8192-n3072-k768-bfloat16" in f["plan"]]
    assert len(kept) == 4 and min(before) > 500
    assert max(kept) < 350 and min(kept) > 50
