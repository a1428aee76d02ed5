"""`mlptui.commands.output.json_bytes`, the writer behind every `--json`: indented UTF-8 with a closing newline,
keys that are not strings written as their str, NaN as null, and what orjson cannot write through the
standard library instead."""

from __future__ import annotations

import dataclasses
import json
import math

from mlptui.commands.output import json_bytes


@dataclasses.dataclass
class _Row:
    name: str
    us: float


def test_string_keys_and_typed_rows_are_written_indented_with_a_newline() -> None:
    doc = {"rows": [_Row("gemm", 1.5)], "n": 2}
    out = json_bytes(doc)
    assert out.endswith(b"}\n") and b'\n  "rows": [' in out
    assert json.loads(out) == {"rows": [{"name": "gemm", "us": 1.5}], "n": 2}


def test_keys_that_are_not_strings_are_written_as_their_str() -> None:
    doc = {"ranks": {0: 1.0, 1: 2.0}, "nested": [{3: "x"}]}
    out = json_bytes(doc)
    assert json.loads(out) == {"ranks": {"0": 1.0, "1": 2.0}, "nested": [{"3": "x"}]}
    assert out == json_bytes({"ranks": {"0": 1.0, "1": 2.0}, "nested": [{"3": "x"}]})


def test_non_finite_floats_are_null_and_an_unknown_type_still_writes() -> None:
    assert json.loads(json_bytes({"a": math.nan, "b": math.inf})) == {"a": None, "b": None}

    class Odd:
        def __repr__(self) -> str:
            return "odd"

    out = json.loads(json_bytes({"x": [1, 2], "y": Odd()}))
    assert out["x"] == [1, 2] and "y" in out
