"""`summary --json` is the typed report as it is: every object of the document has exactly the fields of its
report type, in their order (mlptui.trace.reports), and docs/json.md names every one of them."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import ROOT, SAMPLES

from mlptui.cli import main
from mlptui.trace.reports.summary import SummaryReport

# an attention trace (attention facts, fused kernels with occupancy) and a plain one
TRACES = [next(SAMPLES.glob("attention/attention-sdpa-flash-eager-*.pt.trace.json.gz")),
          next(SAMPLES.glob("linear-eager-*-bf16-*.pt.trace.json.gz"))]


def _fields(cls: Any) -> list[str]:
    """A report type's field names in order: a dataclass's fields, or a TypedDict's keys (bulk rows are typed
    dictionaries, written in the order their keys are declared)."""
    if typing.is_typeddict(cls):
        return list(typing.get_type_hints(cls))
    return [f.name for f in dataclasses.fields(cls)]


def _check(value: Any, hint: Any, where: str, seen: set[type]) -> None:
    """`value` (decoded JSON) has the shape of the type `hint`, recursively."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [h for h in typing.get_args(hint) if h is not type(None)]
        if value is not None and len(options) > 1:     # report types told apart by their fields
            assert all(dataclasses.is_dataclass(h) for h in options), f"{where}: a union of non-report types"
            assert isinstance(value, dict), f"{where}: {type(value).__name__}, not an object"
            fitting = [h for h in options if [f.name for f in dataclasses.fields(h)] == list(value)]
            assert len(fitting) == 1, f"{where}: keys {list(value)} fit {len(fitting)} of {options}"
            options = fitting
        if value is not None:
            _check(value, options[0], where, seen)
        return
    if dataclasses.is_dataclass(hint) or typing.is_typeddict(hint):
        assert isinstance(value, dict), f"{where}: {type(value).__name__}, not an object"
        names = _fields(hint)
        assert list(value) == names, f"{where}: keys {list(value)} are not the fields {names}"
        seen.add(hint)
        hints = typing.get_type_hints(hint)
        for name in names:
            _check(value[name], hints[name], f"{where}.{name}", seen)
        return
    if origin in (list, tuple):
        assert isinstance(value, list), f"{where}: not an array"
        item = typing.get_args(hint)[0]
        for k, v in enumerate(value):
            _check(v, item, f"{where}[{k}]", seen)
        return
    if origin is dict:
        assert isinstance(value, dict), f"{where}: not an object"     # open by nature: any keys
        return
    if hint is Any or hint is type(None):
        return
    allowed = (int, float) if hint is float else hint
    assert isinstance(value, allowed) and not (hint is not bool and isinstance(value, bool)), (
        f"{where}: {value!r} is not {hint}")


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name.split("-2026")[0])
def test_summary_json_has_exactly_the_report_fields(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["summary", str(path), "--json"]) == 0
    doc = orjson.loads(capsys.readouterr().out)
    seen: set[type] = set()
    _check(doc, SummaryReport, "summary", seen)
    assert len(seen) >= 10           # the nested report types were reached, not only the top level
    assert any(typing.is_typeddict(t) for t in seen)     # and the typed rows (the critical path's segments)


def _report_types(cls: type, found: dict[str, type]) -> dict[str, type]:
    """Every report type reachable from `cls` through its fields' types, by name."""
    found[cls.__name__] = cls
    for hint in typing.get_type_hints(cls).values():
        stack = [hint]
        while stack:
            h = stack.pop()
            stack.extend(typing.get_args(h))
            if (dataclasses.is_dataclass(h) or typing.is_typeddict(h)) and isinstance(h, type) \
                    and h.__name__ not in found:
                _report_types(h, found)
    return found


def _summary_section() -> str:
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    start = text.index("## `summary --json`")
    return text[start:text.index("\n## ", start + 1)]


def test_docs_name_every_field_of_the_summary_report() -> None:
    section = _summary_section()
    order = re.search(r"Its keys, in order: (.+?)\.\n", section, re.S)
    assert order is not None, "docs/json.md lists the summary's keys in order"
    listed = re.findall(r"`(\w+)`", order.group(1))
    assert listed == [f.name for f in dataclasses.fields(SummaryReport)]
    quoted = set(re.findall(r'"(\w+)"', section))
    missing = {f"{name}.{field}" for name, cls in _report_types(SummaryReport, {}).items()
               for field in _fields(cls) if field not in quoted}
    assert not missing, f"docs/json.md's summary section does not name {sorted(missing)}"
