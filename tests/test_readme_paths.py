"""The trace files the README tells a reader to open exist (paths relative to the repository root)."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

VIEWED = re.compile(r"`mlptui (?:view|summary) ([^`\s]+\.json(?:\.gz)?)`")


def test_readme_examples_name_files_that_exist() -> None:
    paths = VIEWED.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert paths, "the README names no trace file to open"
    corpus = [p for p in paths if "shared/corpus" in p]
    if corpus and not (ROOT.parent / "shared" / "corpus").is_dir():
        pytest.skip("trace corpus not available")
    for p in paths:
        assert (ROOT / p).is_file(), p
