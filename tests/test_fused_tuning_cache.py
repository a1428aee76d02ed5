"""The fused kernel's tuning cache: what `mlptui bench mlp --warm` tunes is kept on disk, and a new
process's first call at a tuned bucket reads it instead of tuning.

Runs on the CPU through Triton's interpreter (TRITON_INTERPRET=1), where the tuner times candidates by
wall clock; on a GPU the same code path times them with do_bench. The second process fails if its tuner runs
at all, which is what keeps the first call cheap; how long that first call takes is a GPU figure, recorded by
`benchmarks/train_stability_gpu.py --first-calls` (benchmarks/FUSED_NOTES.md), not timed here, where a busy
CI machine's wall clock would decide the outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("triton")

from mlptui.runners.fused import tuning_cache  # noqa: E402
from mlptui.runners.fused.configs import GateUpConfig  # noqa: E402

SECOND_PROCESS = r"""
import json
import torch
from mlptui.runners.fused import launcher as launcher_mod

def refuse(*_a, **_k):
    raise SystemExit("the tuner ran although the bucket was tuned")
launcher_mod.GateUpLauncher._tune = refuse
torch.manual_seed(0)
wg = torch.randn(48, 32, dtype=torch.bfloat16)
wu = torch.randn(48, 32, dtype=torch.bfloat16)
x = torch.randn(16, 32, dtype=torch.bfloat16)
launcher = launcher_mod.GateUpLauncher(wg, wu)
launcher.tune = True  # as on a GPU: a miss would tune
out = launcher(x)
reference = launcher_mod.fused_geglu_gateup(x, wg, wu, config=launcher_mod.GateUpConfig(64, 64, 64, 4, 4),
                                            use_tma=False)
matches = torch.allclose(out.float(), reference.float(), rtol=1e-2, atol=1e-2)
print(json.dumps({"tuned": launcher.tuned(), "matches": bool(matches)}))
"""


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CACHE_HOME": str(cache), "TRITON_INTERPRET": "1", "PYTHONHASHSEED": "0"}


@pytest.mark.slow
def test_a_second_process_reads_the_warmed_bucket_without_tuning(tmp_path: Path) -> None:
    env = _env(tmp_path / "cache")
    warm = subprocess.run([sys.executable, "-m", "mlptui.cli", "bench", "mlp", "--warm", "--json",
                           "--sweep-families", "32x48", "--sweep-rows", "16"],
                          capture_output=True, text=True, env=env, timeout=240)
    assert warm.returncode == 0, warm.stderr
    report = json.loads(warm.stdout)
    kept = json.loads(Path(report["cache"]).read_text())
    assert Path(report["cache"]).is_relative_to(tmp_path / "cache" / "mlptui" / "fused")
    entry = kept["n48-k32-bfloat16-m16-aligned-persistent"]
    cfg = GateUpConfig(**entry["config"])

    second = subprocess.run([sys.executable, "-c", SECOND_PROCESS], capture_output=True, text=True,
                            env=env, timeout=240)
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout)
    label = out["tuned"]["m16-n48-k32-bfloat16"]
    # the first call launched the kept choice (its tuner would have ended the process) and computed the same
    # result as a fixed configuration, within bf16 rounding
    assert label == f"{cfg.label()}-{'tma' if entry['use_tma'] else 'ptr'}"
    assert out["matches"], out


def test_damaged_or_unfitting_entries_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tuning_cache.forget_loaded()
    path = tuning_cache.cache_file("Some GPU sm90", "3.6.0")
    path.parent.mkdir(parents=True)
    good = {"config": GateUpConfig(64, 64, 64, 4, 4).as_dict(), "use_tma": True}
    huge = {"config": GateUpConfig(256, 256, 256, 4, 8).as_dict(), "use_tma": True}  # 1.5 MB of stages
    path.write_text(json.dumps({"good": good, "huge": huge, "text": "x", "badfield": {"config": {"nope": 1},
                                "use_tma": True}, "negative": {"config": {**good["config"], "block_m": -64},
                                                               "use_tma": False}}))
    assert tuning_cache.lookup(path, "good") == (GateUpConfig(64, 64, 64, 4, 4), True)
    for key in ("huge", "text", "badfield", "negative", "absent"):
        assert tuning_cache.lookup(path, key) is None, key
    tuning_cache.forget_loaded()
    path.write_text("{not json")
    assert tuning_cache.lookup(path, "good") is None
    tuning_cache.store(path, "good", GateUpConfig(64, 64, 64, 4, 4), False)  # a damaged file is rewritten
    tuning_cache.forget_loaded()
    assert tuning_cache.lookup(path, "good") == (GateUpConfig(64, 64, 64, 4, 4), False)


def test_a_store_keeps_what_another_process_wrote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tuning_cache.forget_loaded()
    path = tuning_cache.cache_file("Some GPU sm90", "3.6.0")
    tuning_cache.store(path, "a", GateUpConfig(64, 64, 64, 4, 4), True)
    # another process adds an entry behind this one's back
    doc = json.loads(path.read_text())
    doc["b"] = {"config": GateUpConfig(128, 64, 64, 4, 4).as_dict(), "use_tma": False}
    path.write_text(json.dumps(doc))
    tuning_cache.store(path, "c", GateUpConfig(64, 128, 64, 4, 4), True)
    assert set(json.loads(path.read_text())) == {"a", "b", "c"}
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tuning_cache.cache_folder() == tmp_path / ".cache" / "mlptui" / "fused"
    name = tuning_cache.cache_file("NVIDIA H100 80GB HBM3 sm90", "3.6.0").name
    assert name == "nvidia-h100-80gb-hbm3-sm90-triton-3.6.0.json"


def test_row_counts_are_keyed_by_how_triton_specializes_them() -> None:
    from mlptui.runners.fused.launcher import int_spec

    assert [int_spec(m) for m in (1, 2, 15, 16, 8000, 8192)] == [1, 0, 0, 16, 16, 16]
    assert int_spec(8001) == 0
