"""The bounds of the MCP server's results (mlptui.api.bounds), without the server: pages that cover a
table exactly once, and documents cut to the character cap that say so."""

from __future__ import annotations

import json

import pytest

from mlptui.api import bounds
from mlptui.base.errors import MlptuiError


def test_pages_cover_every_row_once_within_the_cap() -> None:
    rows = [{"name": f"op{i}", "text": "x" * (i % 50)} for i in range(500)]
    seen, cursor, cuts = [], None, 0
    while True:
        text = bounds.page(rows, 100, cursor, max_chars=2_000)
        doc = json.loads(text)
        assert len(text) <= 2_000 and doc["total"] == 500
        cuts += doc["cut"]
        seen += doc["rows"]
        cursor = doc["next"]
        if cursor is None:
            break
    assert seen == rows and cuts > 0


def test_a_row_over_the_cap_is_shortened_not_skipped() -> None:
    text = bounds.page([{"name": "y" * 10_000}, {"name": "z"}], 10, None, max_chars=2_000)
    doc = json.loads(text)
    assert len(text) <= 2_000 and doc["cut"] and doc["rows"][0]["name"].startswith("yyy") and doc["next"] == "1"


def test_bad_cursor_and_limit_are_one_line() -> None:
    with pytest.raises(MlptuiError, match="not a cursor"):
        bounds.page([1, 2], 1, "abc")
    with pytest.raises(MlptuiError, match="outside the table"):
        bounds.page([1, 2], 1, "7")
    with pytest.raises(MlptuiError, match="limit must be 1 or more"):
        bounds.page([1, 2], 0, None)


def test_fit_keeps_small_documents_and_cuts_large_ones() -> None:
    small = {"a": [1, 2, 3]}
    assert json.loads(bounds.fit(small, 2_000)) == small
    big = {"head": 1, "rows": [{"n": i, "s": "w" * 40} for i in range(2_000)], "blob": {"k": "v" * 5_000}}
    text = bounds.fit(big, 2_000)
    doc = json.loads(text)
    assert len(text) <= 2_000 and doc["cut"] is True and doc["head"] == 1 and "2000 characters" in doc["cut_note"]
    assert doc["rows"] == big["rows"][:len(doc["rows"])]
