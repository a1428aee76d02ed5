"""The wheel installs one import root, `mlptui` (with its runners, sample traces, styles, py.typed and
licence), and nothing with a generic name like `tui` or `runners`."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_the_wheel_holds_only_mlptui(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                           "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    wheel = next(tmp_path.glob("mlptui-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"mlptui"}
    for must in ("mlptui/__init__.py", "mlptui/py.typed", "mlptui/app.tcss", "mlptui/trace/parse/load.py",
                 "mlptui/runners/cli/run.py", "mlptui/sample_traces/manifest.json", "mlptui/base/errors.py",
                 "mlptui/contract/manifest.py"):
        assert must in names, must
    assert any(n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names)
    # every package folder of the repository made it in (a new folder missing from pyproject's list fails here)
    for folder, root in (("tui", "mlptui"), ("runners", "mlptui/runners")):
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.relative_to(ROOT / folder).as_posix()
            assert f"{root}/{rel}" in names, rel
