"""`mlptui view` on the command line: bad paths end with one line and exit 2 before the app starts,
and the explorer never imports torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mlptui.cli import main
from mlptui.samples import sample_trace_paths

ROOT = Path(__file__).resolve().parents[1]


def test_samples_are_found_through_the_package() -> None:
    paths = sample_trace_paths()
    assert len(paths) >= 7
    assert all(p.name.endswith((".json", ".json.gz")) and p.is_file() for p in paths)
    assert any(p.name.startswith("mlp-compile-") for p in paths)


@pytest.mark.parametrize("content, expect", [
    (None, "no such file or folder"),
    (b"hello, this is not json", "is not a PyTorch profiler trace"),
])
def test_view_refuses_a_bad_path_with_one_line(tmp_path, capsys, content, expect) -> None:
    path = tmp_path / "notes.txt"
    if content is not None:
        path.write_bytes(content)
    assert main(["view", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mlptui: ") and expect in err


def test_view_refuses_three_paths_and_a_folder_beside_a_file(tmp_path, capsys) -> None:
    sample = str(sample_trace_paths()[0])
    assert main(["view", sample, sample, sample]) == 2
    assert main(["view", str(tmp_path), sample]) == 2
    assert main(["view", str(tmp_path)]) == 2          # a folder without traces
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 3 and all(line.startswith("mlptui: ") for line in err)


SCRIPT = r"""
import sys
import mlptui.cli, mlptui.commands.view
assert "textual" not in sys.modules, "mlptui.commands.view must import textual only when it runs"
from mlptui.app import make_app
from mlptui.samples import sample_trace_paths
from mlptui.viewmodels.facts import build_facts
from mlptui.sources.dispatch import open_trace
app = make_app([])
for path in sample_trace_paths():
    build_facts(open_trace(str(path)))
print(sorted(m for m in sys.modules if m.split(".")[0] == "torch"))
"""


def test_the_explorer_never_imports_torch() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


def test_view_without_a_terminal_says_to_use_ssh_t(sample_trace) -> None:
    """`ssh host mlptui view X` without -t has no terminal: one line and exit 2, not a stream of escapes."""
    proc = subprocess.run(
        [sys.executable, "-m", "mlptui.cli", "view", str(sample_trace("mlp", "eager"))],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "mlptui: view needs a terminal: over ssh use `ssh -t HOST mlptui view ...` (or `mlptui summary` for a report)"
    ]
