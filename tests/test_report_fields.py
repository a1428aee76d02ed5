"""The typed reports are the JSON documents: every key the commands print is a field of its report's
dataclass, in the fields' order, at every level (the encoder writes a dataclass field by field, so a field
added, renamed or moved shows here)."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any

import orjson
import pytest

from mlptui.cli import main
from mlptui.trace.reports.ranks import RanksReport

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces"


def _dataclass_in(hint: Any) -> type | None:
    """The dataclass a field's type holds directly or as `X | None`."""
    if dataclasses.is_dataclass(hint):
        return typing.cast(type, hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        found = [a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)]
        return typing.cast(type, found[0]) if found else None
    return None


def keys_match(doc: Any, cls: type, where: str = "$") -> int:
    """Check `doc`'s keys against `cls`'s fields, recursively; the number of objects checked."""
    assert isinstance(doc, dict), f"{where}: {type(doc).__name__}, not an object"
    names = [f.name for f in dataclasses.fields(cls)]
    assert list(doc) == names, f"{where}: keys {list(doc)} != {cls.__name__}'s fields {names}"
    checked = 1
    for name, hint in typing.get_type_hints(cls).items():
        value = doc[name]
        if value is None:
            continue
        inner = _dataclass_in(hint)
        if inner is not None:
            checked += keys_match(value, inner, f"{where}.{name}")
        elif typing.get_origin(hint) is list:
            (item,) = typing.get_args(hint)
            inner = _dataclass_in(item)
            if inner is not None:
                for i, v in enumerate(value):
                    checked += keys_match(v, inner, f"{where}.{name}[{i}]")
    return checked


def _cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    main(argv)
    return orjson.loads(capsys.readouterr().out)


def test_the_ranks_section_is_its_report(capsys: pytest.CaptureFixture[str]) -> None:
    folder = sorted(SAMPLES.glob("tp-mlp-eager-*-x2-*"))[0]
    doc = _cli_json(["summary", str(folder), "--json"], capsys)
    assert keys_match(doc["ranks"], RanksReport) > 10
    assert doc["ranks"]["calls"] and doc["ranks"]["collectives"] and doc["ranks"]["stragglers"]
