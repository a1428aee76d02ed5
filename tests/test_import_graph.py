"""The import graph of the installed package `mlptui`, read with ast (import statements anywhere, those
inside functions too): it has no circle. The files are found through the package itself (every folder
`mlptui` spans: tui/mlptui and runners/mlptui), so the test holds for any layout the install maps onto `mlptui`."""

from __future__ import annotations

import ast
from pathlib import Path

import mlptui


def module_files() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for root in map(Path, mlptui.__path__):
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(["mlptui", *parts])] = path
    return found


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Modules of the tree that `module` imports."""
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
    # A module's own parent packages are imported before it anyway (`from pkg import sibling` names the
    # package too): that is not a circle, so those edges are left out.
    ancestors = {module.rsplit(".", i)[0] for i in range(1, module.count(".") + 1)}
    return {n for n in names if n in known and n != module and n not in ancestors}


def top_level_imports(path: Path, module: str) -> set[tuple[str, str]]:
    """What the file imports when it runs (statements at its top, outside TYPE_CHECKING), as (module, name)
    pairs resolved to absolute names; `import a.b` is ("a.b", "")."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found: set[tuple[str, str]] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                found.update((alias.name, "") for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: package.count(".") + 1 - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                found.update((base, alias.name) for alias in node.names)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body + node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body + [s for h in node.handlers for s in h.body])

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)).body)
    return found


def package_init_circles(files: dict[str, Path]) -> list[str]:
    """A package whose __init__ imports, at its top, a module of its own that takes a name from the package
    back (not a submodule, which Python imports on its own): the module then reads a half-made package."""
    found = []
    for package, path in files.items():
        if path.name != "__init__.py":
            continue
        inner_modules = {m for pair in top_level_imports(path, package) for m in (pair[0], ".".join(pair))}
        for inner in sorted(m for m in inner_modules if m.startswith(package + ".") and m in files):
            taken = {name for base, name in top_level_imports(files[inner], inner) if base == package}
            if {name for name in taken if f"{package}.{name}" not in files}:
                found.append(f"{package} -> {inner} -> {package}")
    return found


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
    edges = graph()
    assert {"mlptui.cli", "mlptui.trace.parse.load", "mlptui.runners.cli.run", "mlptui.runners.fused.launcher",
            "mlptui.runners.fused"} <= set(edges)
    assert "mlptui.runners.fused.tuning_cache" in edges["mlptui.runners.fused.launcher"]
    assert "mlptui.commands.summary" in edges["mlptui.cli"]      # imports inside a function count
    cycle = find_cycle(edges)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_planted_circle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_no_package_init_imports_a_module_that_imports_the_package_back() -> None:
    assert package_init_circles(module_files()) == []


def test_the_package_init_check_finds_a_planted_circle(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    init, inner = tmp_path / "pkg" / "__init__.py", tmp_path / "pkg" / "inner.py"
    init.write_text("from pkg.inner import thing\n")
    inner.write_text("from pkg import other\nthing = 1\n")
    assert package_init_circles({"pkg": init, "pkg.inner": inner}) == ["pkg -> pkg.inner -> pkg"]
    sibling = tmp_path / "pkg" / "other.py"
    sibling.write_text("")
    # `other` is a module of its own, which Python imports even while the package is half-made
    assert package_init_circles({"pkg": init, "pkg.inner": inner, "pkg.other": sibling}) == []
    init.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.inner import thing\n")
    assert package_init_circles({"pkg": init, "pkg.inner": inner}) == []
