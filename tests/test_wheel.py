"""The wheel installs one import root, `mlptui` (with its runners, sample traces, styles, py.typed and
licence), and nothing with a generic name like `tui` or `runners`."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow

SHIPPED_SUFFIXES = {".py", ".tcss", ".typed", ".json", ".gz", ".toml"}


def test_the_wheel_holds_only_mlptui(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("mlptui-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"mlptui"}
    for must in ("mlptui/cli.py", "mlptui/py.typed", "mlptui/app.tcss", "mlptui/trace/parse/load.py",
                 "mlptui/runners/cli/run.py", "mlptui/runners/fused/crossover.json",
                 "mlptui/sample_traces/manifest.json", "mlptui/base/errors.py", "mlptui/contract/manifest.py"):
        assert must in names, must
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    # every file of both source roots made it in, where it imports from, and every sample trace
    shipped = 0
    for source, under in ((ROOT / "tui", ""), (ROOT / "runners", ""), (ROOT / "sample_traces", "mlptui/sample_traces/")):
        for path in source.rglob("*"):
            if path.is_file() and path.suffix in SHIPPED_SUFFIXES:
                rel = path.relative_to(source).as_posix()
                assert f"{under}{rel}" in names, rel
                shipped += 1
    assert shipped > 250


def test_the_installed_wheel_finds_its_sample_traces(tmp_path: Path) -> None:
    """Installed from the wheel (not the development tree), `mlptui` still lists the shipped traces."""
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path / "wheel"), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    target = tmp_path / "installed"
    with zipfile.ZipFile(next((tmp_path / "wheel").glob("mlptui-*.whl"))) as wheel:
        wheel.extractall(target)
    # -S: no site-packages .pth files, so the development install's source roots stay off the path; the
    # dependencies come from site-packages given as a plain path.
    code = ("import mlptui, mlptui.runners; from mlptui.samples import sample_trace_paths; "
            "print(list(mlptui.__path__)); print(mlptui.runners.__file__); print(len(sample_trace_paths()))")
    site = next(p for p in sys.path if p.endswith("site-packages"))
    proc = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={"PYTHONPATH": f"{target}{os.pathsep}{site}", "PATH": os.environ["PATH"]})
    assert proc.returncode == 0, proc.stderr
    path, runners, count = proc.stdout.splitlines()
    assert path == repr([str(target / "mlptui")])
    assert runners.startswith(str(target / "mlptui" / "runners"))
    assert int(count) == len([p for p in (ROOT / "sample_traces").iterdir() if ".pt.trace.json" in p.name])
