"""The development install is the plain one: `mlptui` is imported from the repository's own folders, named
as they import (tui/mlptui, runners/mlptui/runners), through a .pth of plain paths, so a module added to
the tree imports without re-installing and every tool that reads the tree sees the real files."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import uuid
from pathlib import Path

import mlptui
import mlptui.runners
import mlptui.trace

ROOT = Path(__file__).resolve().parents[1]


def test_mlptui_spans_the_two_source_roots() -> None:
    assert sorted(Path(p).resolve() for p in mlptui.__path__) == [ROOT / "runners" / "mlptui", ROOT / "tui" / "mlptui"]
    assert Path(mlptui.trace.__file__ or "").resolve() == ROOT / "tui" / "mlptui" / "trace" / "__init__.py"
    runners = Path(mlptui.runners.__file__ or "").resolve()
    assert runners == ROOT / "runners" / "mlptui" / "runners" / "__init__.py"


def test_the_source_roots_hold_only_the_package() -> None:
    """A file that a merge leaves at its old place (tui/x.py rather than tui/mlptui/x.py) imports as nothing."""
    def entries(folder: Path) -> list[str]:
        return sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")

    assert entries(ROOT / "tui") == ["mlptui"]
    assert entries(ROOT / "runners") == ["mlptui"]
    assert entries(ROOT / "runners" / "mlptui") == ["runners"]
    # one package spanning both roots: tui/mlptui/__init__.py joins runners/mlptui (which has none) to it
    assert (ROOT / "tui" / "mlptui" / "__init__.py").exists()
    assert not (ROOT / "runners" / "mlptui" / "__init__.py").exists()


def test_importing_mlptui_loads_nothing_and_names_the_api() -> None:
    """`import mlptui` runs in every command and runner: it must not load the API (numpy, the core) until a
    name of it is used, and then give exactly the API's public names."""
    code = ("import sys, mlptui; heavy = sorted(m for m in ('numpy', 'mlptui.api', 'mlptui.trace') if m in sys.modules); "
            "import mlptui.api as api; print(heavy, mlptui.load is api.load, "
            "set(api.__all__) <= set(dir(mlptui)), hasattr(mlptui, 'no_such_name'), "
            "mlptui.__all__ == api.__all__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "True", "True", "False", "True"]


def test_the_install_is_a_pth_of_plain_paths() -> None:
    """No link tree and no import hook: the installed files are the .pth naming the two roots, and metadata."""
    dist = importlib.metadata.distribution("mlptui")
    files = [f for f in dist.files or [] if ".dist-info/" not in f.as_posix() and f.parts[0] != ".."]
    assert [f.name for f in files] == ["_mlptui.pth"]
    lines = [line for line in files[0].read_text().splitlines() if line.strip()]
    assert sorted(Path(line).resolve() for line in lines) == [ROOT / "runners", ROOT / "tui"]
    assert not any(line.startswith("import") for line in lines)   # a plain path, never code


def test_a_module_added_to_the_tree_imports_without_reinstalling() -> None:
    name = f"_probe_{uuid.uuid4().hex[:12]}"
    for root, package in ((ROOT / "tui" / "mlptui", "mlptui"), (ROOT / "runners" / "mlptui" / "runners", "mlptui.runners")):
        probe = root / f"{name}.py"
        probe.write_text("ANSWER = 42\n", encoding="utf-8")
        try:
            proc = subprocess.run([sys.executable, "-c", f"import {package}.{name} as m; print(m.ANSWER, m.__file__)"],
                                  capture_output=True, text=True, timeout=60, cwd="/")
        finally:
            probe.unlink()
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["42", str(probe)]
