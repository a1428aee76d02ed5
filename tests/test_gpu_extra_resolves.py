"""The `gpu` extra installs against the versions a GPU image ships (torch 2.11.0, Triton 3.6.0,
huggingface_hub 1.33.0, the image this project's GPU figures were measured on), and pulls no sigstore.

Resolved by pip's dry run against the package registry (network to the registry only; nothing is
installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IMAGE = {"torch": "2.11.0", "triton": "3.6.0", "huggingface_hub": "1.33.0"}


@pytest.mark.slow
def test_gpu_extra_resolves_with_the_gpu_image_versions(tmp_path: Path) -> None:
    constraints = tmp_path / "image.txt"
    constraints.write_text("".join(f"{name}=={version}\n" for name, version in IMAGE.items()))
    report = tmp_path / "report.json"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                        "--report", str(report), "-c", str(constraints), f"{ROOT}[gpu]"],
                       capture_output=True, text=True, timeout=280)
    assert r.returncode == 0, r.stderr[-2000:]
    chosen = {item["metadata"]["name"].lower().replace("-", "_"): item["metadata"]["version"]
              for item in json.loads(report.read_text())["install"]}
    for name, version in IMAGE.items():
        assert chosen[name] == version
    assert "kernels" in chosen and "liger_kernel" in chosen
    assert "sigstore" not in chosen
