"""A GPU benchmark's record (mlptui.runners.bench.gpu_record): its figures with the device and versions,
written whole under $OUT. The device's name is stood in for (no GPU here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from mlptui.runners.bench.gpu_record import write_gpu_record  # noqa: E402


def test_the_record_names_device_and_versions_and_leaves_no_part_file(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: "Some GPU")
    path = write_gpu_record("r.json", {"cells": [1, 2], "command": "x"})
    doc = json.loads(path.read_text())
    assert path.parent == tmp_path / "out" and doc["cells"] == [1, 2] and doc["command"] == "x"
    assert doc["device"] == "Some GPU" and doc["torch"] == torch.__version__ and doc["triton"] == triton.__version__
    assert sorted(p.name for p in path.parent.iterdir()) == ["r.json"]
