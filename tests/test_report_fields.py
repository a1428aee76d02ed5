"""The typed reports are the JSON documents: every key the commands print is a field of its report's
dataclass, in the fields' order, at every level (the encoder writes a dataclass field by field, so a field
added, renamed or moved shows here)."""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from pathlib import Path
from typing import Any

import orjson
import pytest

from mlptui.cli import main
from mlptui.trace.reports.diff import GatedDiffReport
from mlptui.trace.reports.profile import ProfileSections, UsedDevice
from mlptui.trace.reports.ranks import RanksReport

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_traces"


def _present(hint: Any) -> Any:
    """`X` of a field typed `X | None`; any other type as it is."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return args[0] if len(args) == 1 else hint
    return hint


def _dataclass_in(hint: Any) -> type | None:
    """The report type (a dataclass, or a TypedDict for bulk rows) a field's type holds directly or as
    `X | None`."""
    hint = _present(hint)
    return typing.cast(type, hint) if dataclasses.is_dataclass(hint) or typing.is_typeddict(hint) else None


def _fields(cls: type) -> list[str]:
    """A report type's field names in order: a dataclass's fields, or a TypedDict's keys as declared."""
    if typing.is_typeddict(cls):
        return list(typing.get_type_hints(cls))
    return [f.name for f in dataclasses.fields(cls)]


def _items_of(hint: Any) -> type | None:
    """The dataclass of a field typed `list[X]` or `list[X] | None`."""
    hint = _present(hint)
    return _dataclass_in(typing.get_args(hint)[0]) if typing.get_origin(hint) is list else None


def keys_match(doc: Any, cls: type, where: str = "$") -> int:
    """Check `doc`'s keys against `cls`'s fields, recursively; the number of objects checked."""
    assert isinstance(doc, dict), f"{where}: {type(doc).__name__}, not an object"
    # a row of a subclass (a device that ran kernels, with its figures) has the subclass's fields
    subclasses: list[type] = [] if typing.is_typeddict(cls) else cls.__subclasses__()
    cls = next((sub for sub in subclasses if len(doc) == len(dataclasses.fields(sub))), cls)
    names = _fields(cls)
    assert list(doc) == names, f"{where}: keys {list(doc)} != {cls.__name__}'s fields {names}"
    checked = 1
    for name, hint in typing.get_type_hints(cls).items():
        value = doc[name]
        if value is None:
            continue
        inner = _dataclass_in(hint)
        if inner is not None:
            checked += keys_match(value, inner, f"{where}.{name}")
        item = _items_of(hint)
        if item is not None:
            for i, v in enumerate(value):
                checked += keys_match(v, item, f"{where}.{name}[{i}]")
    return checked


def _cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    main(argv)
    return orjson.loads(capsys.readouterr().out)


def test_the_ranks_section_is_its_report(capsys: pytest.CaptureFixture[str]) -> None:
    folder = sorted(SAMPLES.glob("tp-mlp-eager-*-x2-*"))[0]
    doc = _cli_json(["summary", str(folder), "--json"], capsys)
    assert keys_match(doc["ranks"], RanksReport) > 10
    assert doc["ranks"]["calls"] and doc["ranks"]["collectives"] and doc["ranks"]["stragglers"]


def test_the_diff_is_its_report(capsys: pytest.CaptureFixture[str]) -> None:
    eager, compiled = sorted(SAMPLES.glob("mlp-eager-*.gz"))[0], sorted(SAMPLES.glob("mlp-compile-*.gz"))[0]
    doc = _cli_json(["diff", str(eager), str(compiled), "--json", "--fail-if-slower", "1000"], capsys)
    assert keys_match(doc, GatedDiffReport) > 40
    assert doc["gate"] and doc["operators"] and doc["overview"] and doc["by_family"] and doc["launch_calls"]


def field_names(cls: type) -> set[str]:
    """Every field name of `cls` and of the dataclasses of its module its fields hold, at any depth (a part
    of another report, such as the overview's devices, is named in that report's section)."""
    names = set()
    for name, hint in typing.get_type_hints(cls).items():
        names.add(name)
        inner = _dataclass_in(hint) or _items_of(hint)
        if inner is not None and inner.__module__ == cls.__module__:
            names |= field_names(inner)
    return names


def test_docs_json_names_exactly_the_diff_reports_fields() -> None:
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    section = text.split("## `diff --json`", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    # a quoted word is a key unless it is a value: after a colon, or one of several joined by `|`
    keys = {m.group(1) for m in re.finditer(r'(?<![:|] )(?<![:|])"([a-z_]+)"(?!\|)', block)}
    assert keys == field_names(GatedDiffReport)


def test_the_profile_sections_are_their_report(capsys: pytest.CaptureFixture[str]) -> None:
    path = sorted(SAMPLES.glob("mlp-train-eager-*.gz"))[0]         # with memory events and module frames
    doc = _cli_json(["summary", str(path), "--json"], capsys)
    sections = {f.name: doc[f.name] for f in dataclasses.fields(ProfileSections)}
    assert keys_match(sections, ProfileSections) > 50
    assert doc["memory"]["ops"] and doc["modules"] and doc["recommendations"]
    assert any(len(d) == len(dataclasses.fields(UsedDevice)) for d in doc["overview"]["devices"])


def test_the_critical_path_section_is_its_report(capsys: pytest.CaptureFixture[str]) -> None:
    """Its segments are typed dictionaries (TypedDict), not dataclasses: their keys are checked the same way."""
    from mlptui.trace.reports.summary import CriticalPathReport, PathSegment
    assert typing.is_typeddict(PathSegment)
    path = sorted(SAMPLES.glob("mlp-eager-*.gz"))[0]
    doc = _cli_json(["summary", str(path), "--json"], capsys)
    segments = sum(len(step["segments"]) for step in doc["critical_path"]["steps"])
    assert segments > 0
    assert keys_match(doc["critical_path"], CriticalPathReport) > segments


def test_the_reports_import_only_the_standard_library_and_base() -> None:
    """The typed reports are a layer under the analyses: any module may build or read them."""
    import ast
    import sys

    folder = ROOT / "tui" / "mlptui" / "trace" / "reports"
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                allowed = name.split(".")[0] in sys.stdlib_module_names or name == "__future__" or \
                    name.startswith(("mlptui.base", "mlptui.trace.reports"))
                assert allowed, f"{path.name} imports {name}"
