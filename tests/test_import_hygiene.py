"""The trace core and `mlptui summary` never import torch or textual (the summary runs on any machine), and
the summary does not import numpy.ma (a cost of every fresh process)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import contextlib, importlib, io, pkgutil, sys
import mlptui.base, mlptui.contract, mlptui.trace
mods = sorted(m.name for pkg in (mlptui.trace, mlptui.contract, mlptui.base)
              for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."))
for name in mods:
    importlib.import_module(name)
importlib.import_module("mlptui.commands.summary")
from mlptui.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    rc = main(["summary", sys.argv[1], "--json"])
assert rc == 0, rc
assert '"steps"' in out.getvalue()
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "textual"))
print(len(mods), bad)
"""


def test_trace_core_and_summary_import_neither_torch_nor_textual() -> None:
    sample = sorted((ROOT / "sample_traces").glob("*.pt.trace.json*"))[0]
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(sample)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    count, bad = proc.stdout.strip().split(" ", 1)
    assert int(count) >= 8          # load, index, decode, tree, steps, launches, summary, ...
    assert bad == "[]"


NO_MASKED = r"""
import contextlib, io, sys
from mlptui.cli import main
for path in sys.argv[1:]:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["summary", path, "--json"]) == 0, path
print(sorted(m for m in sys.modules if m == "numpy.ma" or m.startswith("numpy.ma.")))
"""


def test_summary_does_not_import_numpy_ma() -> None:
    """numpy.ma adds to every fresh process's imports; a plain np.unique or np.median pulls it in."""
    samples = [str(p) for p in sorted((ROOT / "sample_traces").rglob("*.pt.trace.json*"))]
    assert len(samples) >= 8
    proc = subprocess.run([sys.executable, "-c", NO_MASKED, *samples], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "MLPTUI_NO_CACHE": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
