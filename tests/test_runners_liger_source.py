"""The kernels-mlp fallback chain, offline: Hub -> HF cache -> LOCAL_KERNELS -> liger-kernel wheel.

Nothing here reaches the network. What stands in for the Hub repo kernels-community/liger-kernels is a
kernel build that each test writes to a temp dir (build/torch-universal/metadata.json +
liger_kernels/layers.py whose LigerGEGLUMLP is a plain-torch GeGLU MLP, so it runs on the CPU and is
told apart from the wheel's class). The chain runs in a fresh interpreter per case, because
huggingface_hub and kernels read HF_HOME / HF_HUB_OFFLINE when they are imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from mlptui.runners.workloads import liger_source
from mlptui.runners.workloads.hub_sources import Unavailable, local_kernels_entry

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "0123456789abcdef0123456789abcdef01234567"
LAYERS = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class LigerGEGLUMLP(nn.Module):
    """Stand-in for the Hub kernel: same constructor and parameters, plain torch inside."""

    def __init__(self, config):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))
'''


def write_kernel_build(repo: Path) -> Path:
    """Lay out a kernel repo the way `kernels` expects one (noarch 'torch-universal' variant)."""
    variant = repo / "build" / "torch-universal"
    (variant / "liger_kernels").mkdir(parents=True)
    (variant / "metadata.json").write_text(json.dumps({
        "id": "liger_kernels_test_universal", "name": "liger-kernels", "version": 1,
        "license": "BSD-2-Clause", "python-depends": [], "backend": {"type": "cuda"},
    }))
    (variant / "liger_kernels" / "__init__.py").write_text("from . import layers\n")
    (variant / "liger_kernels" / "layers.py").write_text(LAYERS)
    return variant / "liger_kernels"


def write_hf_cache(hf_home: Path) -> Path:
    """An HF cache holding v1 of the kernel repo, as a download would have left it."""
    repo = hf_home / "hub" / "kernels--kernels-community--liger-kernels"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "v1").write_text(COMMIT)
    return write_kernel_build(repo / "snapshots" / COMMIT)


CHAIN_PROBE = """
import json, sys
for blocked in sys.argv[1:]:
    sys.modules[blocked] = None  # makes `import <blocked>` fail as if it were not installed
from mlptui.runners.workloads.liger_source import load_liger_geglu_mlp
from mlptui.base.errors import MlptuiError
try:
    found = load_liger_geglu_mlp()
except MlptuiError as exc:
    print(json.dumps({"error": str(exc)}))
else:
    print(json.dumps({"source": found.source, "tried": list(found.tried), "module": found.cls.__module__,
                      "file": sys.modules[found.cls.__module__].__file__}))
"""


def run_chain(tmp_path: Path, *, local: Path | None = None, blocked: tuple[str, ...] = ()) -> dict:
    if "kernels" not in blocked:
        pytest.importorskip("kernels")
    if "liger_kernel" not in blocked:
        pytest.importorskip("liger_kernel")
    env = {k: v for k, v in os.environ.items() if k not in ("LOCAL_KERNELS", "KERNELS_CACHE", "HF_HUB_CACHE")}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    if local is not None:
        env["LOCAL_KERNELS"] = f"kernels-community/liger-kernels={local}"
    res = subprocess.run([sys.executable, "-c", CHAIN_PROBE, *blocked], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_hf_cache_is_used_when_offline(tmp_path: Path) -> None:
    """Stand-in: an HF cache laid out in a temp HF_HOME with refs/v1 -> a snapshot of the kernel build."""
    package = write_hf_cache(tmp_path / "hf")
    got = run_chain(tmp_path)
    assert got["source"].startswith("hf-cache kernels-community/liger-kernels v1 (")
    assert got["tried"] == ["hub: HF_HUB_OFFLINE is set"]
    assert Path(got["file"]).parent == package


def test_local_kernels_when_the_cache_is_empty(tmp_path: Path) -> None:
    """Stand-in: a LOCAL_KERNELS folder holding the kernel build; the HF cache (temp HF_HOME) is empty."""
    repo = tmp_path / "liger-kernels"
    package = write_kernel_build(repo)
    got = run_chain(tmp_path, local=repo)
    assert got["source"].startswith(f"LOCAL_KERNELS kernels-community/liger-kernels={repo} (")
    assert got["tried"][0] == "hub: HF_HUB_OFFLINE is set"
    assert got["tried"][1].startswith("hf-cache: Version 1 of 'kernels-community/liger-kernels' is not available")
    assert Path(got["file"]).parent == package


def test_the_wheel_is_the_last_resort(tmp_path: Path) -> None:
    """Stand-in: none; the installed liger-kernel wheel is the real thing (the HF cache is empty)."""
    got = run_chain(tmp_path)
    assert got["source"].startswith("liger-kernel wheel ")
    assert got["module"] == "liger_kernel.transformers.geglu"
    assert [t.split(":")[0] for t in got["tried"]] == ["hub", "hf-cache", "LOCAL_KERNELS"]
    assert got["tried"][2] == "LOCAL_KERNELS: LOCAL_KERNELS is not set"


def test_nothing_available_names_everything_tried(tmp_path: Path) -> None:
    """Stand-in: none; `kernels` and the wheel are hidden from the interpreter, the cache is empty."""
    got = run_chain(tmp_path, blocked=("kernels", "liger_kernel"))
    message = got["error"]
    assert message.startswith("no LigerGEGLUMLP could be loaded; tried hub: HF_HUB_OFFLINE is set; ")
    assert "hf-cache: the `kernels` package is not installed" in message
    assert "LOCAL_KERNELS: LOCAL_KERNELS is not set" in message
    assert "liger-kernel wheel: the liger-kernel wheel is not installed" in message
    assert "\n" not in message


def test_a_local_kernels_entry_for_another_repo_is_not_used(tmp_path: Path) -> None:
    """Stand-in: a LOCAL_KERNELS value naming only some other repo; the wheel then runs."""
    env_value = f"someone/other-kernel={tmp_path}"
    assert local_kernels_entry(env_value, liger_source.REPO_ID) is None
    assert local_kernels_entry(f"{env_value}:kernels-community/liger-kernels=/k", liger_source.REPO_ID) == "/k"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOCAL_KERNELS", env_value)
        with pytest.raises(Unavailable, match="no entry for kernels-community/liger-kernels"):
            liger_source.from_local_kernels()


def test_hub_step_calls_get_kernel_online_without_local_overrides(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Stand-in for the Hub: a fake kernels.get_kernel that returns the kernel build from a temp dir,
    and records the settings it was called under (online, LOCAL_KERNELS not consulted)."""
    kernels = pytest.importorskip("kernels")
    from huggingface_hub import constants

    package = write_kernel_build(tmp_path / "repo")
    seen: list[tuple] = []

    def fake_get_kernel(repo_id: str, *, version: int) -> types.ModuleType:
        seen.append((repo_id, version, constants.HF_HUB_OFFLINE, os.environ.get("LOCAL_KERNELS")))
        layers = types.ModuleType("layers")
        namespace: dict = {}
        exec(compile(LAYERS, str(package / "layers.py"), "exec"), namespace)
        layers.LigerGEGLUMLP = namespace["LigerGEGLUMLP"]
        module = types.ModuleType("liger_kernels")
        module.layers = layers
        module.__file__ = str(package / "__init__.py")
        return module

    monkeypatch.setattr(kernels, "get_kernel", fake_get_kernel)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("LOCAL_KERNELS", "kernels-community/liger-kernels=/elsewhere")
    before = constants.HF_HUB_OFFLINE
    found = liger_source.load_liger_geglu_mlp()
    assert found.source == f"hub kernels-community/liger-kernels v1 ({package})"
    assert found.tried == ()
    assert seen == [("kernels-community/liger-kernels", 1, False, None)]
    assert os.environ["LOCAL_KERNELS"] == "kernels-community/liger-kernels=/elsewhere"  # restored
    assert constants.HF_HUB_OFFLINE == before


def test_kernels_mlp_loads_the_seeded_weights_of_the_reference(tmp_path: Path) -> None:
    """Stand-in: a LOCAL_KERNELS kernel build whose LigerGEGLUMLP is plain torch, so the built module
    runs on the CPU and must match the fp32 reference MLP exactly (same seeded weights)."""
    repo = tmp_path / "liger-kernels"
    write_kernel_build(repo)
    pytest.importorskip("kernels")
    code = (
        "import torch\nfrom mlptui.runners.workloads.modules import build_kernels_mlp\nfrom mlptui.runners.workloads.registry import Shape\n"
        "b = build_kernels_mlp(Shape('mlp', (2, 4, 16, 32)), torch.float32, 'cpu')\n"
        "with torch.no_grad():\n"
        "    d = (b.module(*b.inputs) - b.reference(*b.inputs)).abs().max().item()\n"
        "print(d, type(b.module).__module__, b.kernel_source.split(' ')[0], len(b.kernel_tried))\n"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT),
           "LOCAL_KERNELS": f"kernels-community/liger-kernels={repo}"}
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    diff, module, source, tried = res.stdout.split()
    assert float(diff) == 0.0 and module != "liger_kernel.transformers.geglu"
    assert source == "LOCAL_KERNELS" and tried == "2"
