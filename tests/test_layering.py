"""The layering rules, checked two ways: statically (no import statement anywhere in a layer names a
forbidden package, even inside a function) and at run time (building every command's parser leaves
torch and textual out of sys.modules). Importing the whole core and running `mlptui summary` without
them is checked in test_import_hygiene.py."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# layer folder -> top-level packages it must never import
RULES: dict[str, set[str]] = {
    "tui/mlptui": {"torch", "triton", "kernels", "liger_kernel"},
    "tui/mlptui/trace": {"torch", "triton", "textual", "textual_serve", "rich"},
    "runners/mlptui/runners": {"textual", "textual_serve"},
}


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value.split(".")[0])
    return names


@pytest.mark.parametrize("layer", sorted(RULES))
def test_no_forbidden_import_statements(layer: str) -> None:
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"{layer} has no Python files"
    offenders = {
        str(f.relative_to(ROOT)): sorted(_imported_packages(f) & RULES[layer])
        for f in files
        if _imported_packages(f) & RULES[layer]
    }
    assert offenders == {}


def test_static_check_sees_imports_inside_functions(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    import torch.nn as nn\n    from textual.app import App\n")
    assert {"torch", "textual"} <= _imported_packages(probe)


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys; print(' '.join(sorted(sys.modules)))"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    return {name.split(".")[0] for name in out}


def test_cli_help_and_command_parsers_import_neither_torch_nor_textual() -> None:
    code = (
        "import argparse\n"
        "from mlptui.cli import COMMANDS, command_module\n"
        "for name in COMMANDS:\n"
        "    command_module(name).add_arguments(argparse.ArgumentParser())\n"
    )
    loaded = _modules_after(code)
    assert "torch" not in loaded and "textual" not in loaded
