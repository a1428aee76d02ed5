"""Triton's installation key kept on disk (runners/mlptui/runners/fused/kernel_key.py): a process whose Triton files match
the kept stamp takes the kept key instead of hashing Triton; one whose files differ hashes and keeps the
new key. Each case runs in its own process, as the key is settled once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

PROBE = r"""
import json, sys
import triton.runtime.cache as cache
original = cache.triton_key
from mlptui.runners.fused import kernel_key
how = kernel_key.settle()
print(json.dumps({"how": how, "replaced": cache.triton_key is not original, "key": cache.triton_key(),
                  "again": kernel_key.settle()}))
"""


def _probe(cache: Path, **env: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=240,
                         env={**os.environ, "XDG_CACHE_HOME": str(cache), **env})
    assert out.returncode == 0, out.stderr
    return dict(json.loads(out.stdout))


@pytest.mark.slow
def test_the_key_is_hashed_once_then_kept_and_a_changed_install_hashes_again(tmp_path: Path) -> None:
    first = _probe(tmp_path)
    assert first["how"] == "hashed" and first["again"] == "hashed" and not first["replaced"]
    kept = json.loads((tmp_path / "mlptui" / "fused" / "triton-key.json").read_text())
    assert kept["key"] == first["key"] and len(kept["stamp"]) == 64

    second = _probe(tmp_path)  # the kept key, equal to the one Triton computed itself
    assert second["how"] == "kept" and second["replaced"] and second["key"] == first["key"]

    kept["stamp"], kept["key"] = "0" * 64, "stale"  # as if Triton had been upgraded since
    (tmp_path / "mlptui" / "fused" / "triton-key.json").write_text(json.dumps(kept))
    third = _probe(tmp_path)
    assert third["how"] == "hashed" and third["key"] == first["key"]


@pytest.mark.slow
def test_a_damaged_file_or_the_switch_leaves_triton_hashing(tmp_path: Path) -> None:
    path = tmp_path / "mlptui" / "fused" / "triton-key.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert _probe(tmp_path)["how"] == "hashed"
    assert _probe(tmp_path)["how"] == "kept"  # the damaged file was rewritten
    off = _probe(tmp_path, MLPTUI_TRITON_KEY="hash")
    assert off["how"] == "off" and not off["replaced"]


def test_the_stamp_follows_size_and_modification_time(tmp_path: Path) -> None:
    from mlptui.runners.fused.kernel_key import stamp

    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("not part of it")
    before = stamp(tmp_path)
    (tmp_path / "notes.txt").write_text("changed, still not part of it")
    assert stamp(tmp_path) == before
    (tmp_path / "a.py").write_text("x = 22\n")
    assert stamp(tmp_path) != before
