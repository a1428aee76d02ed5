"""The import graph of the whole tree, read with ast (import statements anywhere, `importlib` calls and
the "mlptui.x" / "mlptui.x:function" name strings that the CLI, the sources and the workload registry
import by name): it has no circle, and every name string points at a module that exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"tui": "mlptui", "runners": "mlptui.runners", "sample_traces": "mlptui.sample_traces"}
NAME_STRING = re.compile(r"^mlptui(\.[a-z_][a-z0-9_]*)+(:[A-Za-z_]\w*)?$")


def module_files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, name in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([name, *parts])] = path
    return found


def process_entry_points(tree: ast.AST) -> set[int]:
    """ids of string nodes that follow "-m" in a list: a module run as a new process, not imported."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            for before, item in zip(node.elts, node.elts[1:], strict=False):
                if isinstance(before, ast.Constant) and before.value == "-m":
                    found.add(id(item))
    return found


def name_strings(tree: ast.AST) -> set[str]:
    skip = process_entry_points(tree)
    return {node.value.split(":")[0] for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME_STRING.match(node.value)
            and id(node) not in skip}


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Modules of the tree that `module` imports, by statement or by name string."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)   # `from pkg import module`
    names |= name_strings(tree)
    # A module's own parent packages are imported before it anyway (`from pkg import sibling` names the
    # package too): that is not a circle, so those edges are left out.
    ancestors = {module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1)}
    return {n for n in names if n in known and n != module and n not in ancestors}


def graph() -> dict[str, set[str]]:
    files = module_files()
    return {m: imports_of(m, p, set(files)) for m, p in files.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import circle (as a path that ends where it starts), or None."""
    state: dict[str, int] = {}    # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_tree_has_no_import_circle() -> None:
    cycle = find_cycle(graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_planted_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_name_strings_point_at_modules_that_exist() -> None:
    files = module_files()
    strings: set[str] = set()
    for path in files.values():
        strings |= name_strings(ast.parse(path.read_text(encoding="utf-8")))
    assert {"mlptui.commands.summary", "mlptui.runners.cli_run", "mlptui.sources.ssh"} <= strings
    assert sorted(strings - set(files)) == []
