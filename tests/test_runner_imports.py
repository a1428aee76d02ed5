"""Importing a runners module loads torch or Triton only if that module (or one it imports at its top) needs
them: the pure parts (the crossover model, the sweep's pairing arithmetic, the command lines) import on a
machine without torch, and the custom ops register only when ops.py itself is imported."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import mlptui.runners

RUNNERS = Path(mlptui.runners.__file__ or "").parent
GPU_PACKAGES = {"torch", "triton", "kernels", "liger_kernel"}

# torch (and friends) refuse to import, so a module that would load them fails instead of passing unnoticed
# on a machine that has them; the module is imported, then the GPU packages must be absent.
PROBE = r"""
import importlib, importlib.abc, sys
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"torch", "triton", "kernels", "liger_kernel"}:
            raise ImportError(f"{name} imported")
sys.meta_path.insert(0, Refuse())
importlib.import_module(sys.argv[1])
print(sorted(m for m in sys.modules if m.split(".")[0] in {"torch", "triton", "kernels", "liger_kernel"}))
"""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(RUNNERS).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["mlptui.runners", *parts])


def top_level_imports(path: Path) -> set[str]:
    """Modules imported when the file runs: statements at its top, not inside functions or TYPE_CHECKING."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rsplit(".", 1)[0]
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
    visit(tree.body)
    return names


def needs_gpu_packages() -> dict[str, bool]:
    """Per runners module: whether importing it must load a GPU package (itself or through the modules and
    packages it imports at its top)."""
    files = {module_name(p): p for p in sorted(RUNNERS.rglob("*.py"))}
    direct = {m: top_level_imports(p) for m, p in files.items()}
    memo: dict[str, bool] = {}

    def needs(module: str, seen: frozenset[str]) -> bool:
        if module not in memo:
            parents = {module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1)}
            deps = {d for name in direct[module] for d in (name, name.rsplit(".", 1)[0]) if d in files}
            memo[module] = any(n.split(".")[0] in GPU_PACKAGES for n in direct[module]) or any(
                needs(d, seen | {module}) for d in (deps | parents) & set(files) if d not in seen | {module})
        return memo[module]

    return {m: needs(m, frozenset()) for m in files}


PURE = sorted(m for m, needs in needs_gpu_packages().items() if not needs)


def test_the_pure_modules_are_found() -> None:
    assert {"mlptui.runners.fused.crossover", "mlptui.runners.bench.pairing", "mlptui.runners.fused",
            "mlptui.runners.bench.report", "mlptui.runners.cli.run", "mlptui.runners.cli.bench"} <= set(PURE)
    assert not {"mlptui.runners.fused.ops", "mlptui.runners.fused.launcher", "mlptui.runners.bench.sweep"} & set(PURE)


@pytest.mark.parametrize("module", PURE)
def test_a_pure_module_imports_without_torch(module: str) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, module], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.strip().splitlines()[-1:]
    assert proc.stdout.strip() == "[]"


def test_the_named_command_passes() -> None:
    code = "import mlptui.runners.fused.crossover, sys; assert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


def test_custom_ops_register_only_with_ops_py() -> None:
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    code = (
        "import torch\n"
        "import mlptui.runners.fused.crossover, mlptui.runners.fused.configs, mlptui.runners.fused.launcher\n"
        "before = hasattr(torch.ops.mlptui, 'geglu_gateup')\n"
        "import mlptui.runners.fused.ops\n"
        "print(before, hasattr(torch.ops.mlptui, 'geglu_gateup'))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "True"]
