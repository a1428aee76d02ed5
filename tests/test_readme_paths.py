"""The README's examples work as written: the trace files it tells a reader to open exist (paths
relative to the repository root), its `summary` and `diff` commands run, and its links to docs/ resolve."""

from __future__ import annotations

import glob
import re
import shlex
from pathlib import Path

import pytest
from conftest import ROOT

from mlptui.cli import main

VIEWED = re.compile(r"`mlptui (?:view|summary) ([^`\s]+\.json(?:\.gz)?)`")


def test_readme_examples_name_files_that_exist() -> None:
    paths = VIEWED.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert paths, "the README names no trace file to open"
    corpus = [p for p in paths if "shared/corpus" in p]
    if corpus and not (ROOT.parent / "shared" / "corpus").is_dir():
        pytest.skip("trace corpus not available")
    for p in paths:
        assert (ROOT / p).is_file(), p


FENCED = re.compile(r"^```[\w-]*\n(.*?)^```", re.S | re.M)
LINKED = re.compile(r"\]\(((?:docs/)?[\w./-]+\.md)\)")


def _commands(name: str) -> list[list[str]]:
    """The README's `mlptui NAME …` lines in code blocks, comments and pipes cut, globs expanded."""
    out = []
    for block in FENCED.findall((ROOT / "README.md").read_text(encoding="utf-8")):
        for line in block.splitlines():
            if not line.startswith(f"mlptui {name}"):
                continue
            words = shlex.split(line.split("#", 1)[0].split("|", 1)[0])
            if words[:2] != ["mlptui", name]:
                continue
            expanded = []
            for w in words[1:]:
                hits = sorted(glob.glob(w, root_dir=ROOT)) if "*" in w else [w]
                assert len(hits) == 1, (line, hits)       # a glob in an example names one file
                expanded.append(str(ROOT / hits[0]) if hits[0].startswith("sample_traces/") else hits[0])
            out.append(expanded)
    return out


@pytest.mark.parametrize("name", ["summary", "diff"])
def test_readme_headless_commands_run_as_written(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    commands = _commands(name)
    assert commands, f"the README shows no `mlptui {name}` example"
    for argv in commands:
        assert main(argv) == 0, argv
        assert capsys.readouterr().out.strip(), argv


def test_readme_opens_bundled_traces_that_exist() -> None:
    for name in ("view", "perfetto", "push"):
        for argv in _commands(name):
            for w in argv[1:]:
                if "sample_traces" in w:
                    assert Path(w).exists(), (name, w)


def test_readme_links_to_docs_that_exist() -> None:
    links = LINKED.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "docs/json.md" in links and "docs/figures.md" in links
    for link in links:
        assert (ROOT / link).is_file(), link


def test_readme_commands_run_as_copied_after_the_install() -> None:
    """The install puts `mlptui` in .venv/bin, not on PATH: every block of commands after it activates
    that venv in its first line (or names .venv/bin/mlptui), so a block pasted into a new shell runs."""
    blocks = FENCED.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    install = next(i for i, b in enumerate(blocks) if "python3 -m venv .venv" in b)
    assert ".venv/bin/mlptui" in blocks[install]
    commands = [b for b in blocks[install + 1:] if re.search(r"^(mlptui|pip) ", b, re.M)]
    assert len(commands) >= 4
    for block in commands:
        first = block.splitlines()[0]
        assert first.startswith(". .venv/bin/activate"), block
