"""A big trace's event array is decoded piece by piece (mlptui.trace.parse.decode.decode_in_pieces), so that
only one piece's decoded events are alive at a time. Cut into pieces of a few KiB, every sample and corpus
trace, and inputs built to mislead the cutting (braces and commas inside strings, nested objects followed
by more keys, keys after the array, "traceEvents" inside a string), load to the very Trace the whole-
document decode gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT
from fuzz import hostile

from mlptui.base.errors import TraceError
from mlptui.trace.model import Trace
from mlptui.trace.parse import decode
from mlptui.trace.parse import load as load_module
from mlptui.trace.parse.load import load_trace, load_trace_bytes

CORPUS = ROOT.parent / "shared" / "corpus"
FILES = sorted(p for p in [*(ROOT / "sample_traces").glob("*.json.gz"), *CORPUS.rglob("*.json*")]
               if p.is_file() and p.stat().st_size < 1_300_000)


def _load_both(load: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Trace | str, Trace | str, bool]:
    """(cut into 4 KiB pieces, decoded whole, whether the pieces were used)."""
    used: list[bool] = []
    real = decode.decode_in_pieces

    def spy(data: Any, sink: Any) -> Any:
        out = real(data, sink)
        used.append(out is not None)
        return out

    def one() -> Trace | str:
        try:
            return load()
        except TraceError as exc:
            return f"TraceError: {exc}"
    monkeypatch.setattr(decode, "PIECE_BYTES", 4096)
    monkeypatch.setattr(load_module, "decode_in_pieces", spy)
    pieces = one()
    monkeypatch.setattr(load_module, "decode_in_pieces", lambda data, sink: None)
    whole = one()
    return pieces, whole, any(used)


def _same(a: Trace | str, b: Trace | str) -> None:
    if isinstance(a, str) or isinstance(b, str):
        assert a == b
        return
    ca, cb = a.columns.columns(), b.columns.columns()
    for name, col in ca.items():
        assert col.dtype == cb[name].dtype and np.array_equal(col, cb[name], equal_nan=col.dtype.kind == "f"), name
    assert a.columns.strings == b.columns.strings
    assert (a.steps, a.threads, a.streams, a.memory, a.meta, a.warnings, a.device, a.devices, a.origin_us) == \
        (b.steps, b.threads, b.streams, b.memory, b.meta, b.warnings, b.device, b.devices, b.origin_us)
    for event in {0, a.meta["events"] // 2, a.meta["events"] - 1}:
        assert a.args(event) == b.args(event)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    pieces, whole, used = _load_both(lambda: load_trace(path), monkeypatch)
    _same(pieces, whole)
    assert used or isinstance(whole, str) or path.stat().st_size < 8192


def _events(n: int) -> list[dict[str, Any]]:
    evs: list[dict[str, Any]] = []
    for i in range(n):
        odd = i % 37 == 0         # now and then, what looks like an event's end inside one
        evs.append({"ph": "X", "cat": "cpu_op", "name": f"op}}, {{\"{i}" if odd else f"op{i}", "pid": 1, "tid": 1,
                    "ts": 10 * i, "dur": 5, "args": {"External id": i, "nested": {"a": [{"b": "},]"}], "c": {}},
                                                     "z": "},{" if odd else "z"}})
        evs.append({"ph": "X", "cat": "kernel", "name": "k},", "pid": 0, "tid": 7, "ts": 10 * i + 1, "dur": 2,
                    "args": {"External id": i, "grid": [i + 1, 1, 1], "block": [128, 1, 1]}})
    return evs


@pytest.mark.parametrize("shape", ["keys after the array", "bare array", "traceEvents in a string first",
                                   "truncated", "not a profiler trace", "empty array"])
def test_inputs_that_mislead_the_cutting(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    evs = _events(300)
    if shape == "bare array":
        data = json.dumps(evs).encode()
    elif shape == "empty array":
        data = json.dumps({"traceEvents": [], "schemaVersion": 1, "pad": "x" * 20000}).encode()
    elif shape == "not a profiler trace":
        data = json.dumps({"traceEvents": [{**e, "cat": "v8"} for e in evs]}).encode()
    else:
        doc: dict[str, Any] = {"schemaVersion": 1}
        if shape == "traceEvents in a string first":
            doc["traceName"] = '"traceEvents": [ {"ph": "X"}, '
        doc["traceEvents"] = evs
        doc["deviceProperties"] = [{"id": 0, "name": "GPU }, ]", "numSms": 132}]
        doc["distributedInfo"] = {"rank": 0, "pg_config": [{"ranks": [0]}]}
        data = json.dumps(doc).encode()
        if shape == "truncated":
            data = data[: len(data) * 2 // 3]
    pieces, whole, used = _load_both(lambda: load_trace_bytes(data, source=shape), monkeypatch)
    _same(pieces, whole)
    if shape in ("keys after the array", "bare array", "traceEvents in a string first", "not a profiler trace"):
        assert used
    if isinstance(pieces, Trace) and shape not in ("truncated", "empty array"):
        assert len(pieces.ops) == 300 and len(pieces.gpu) == 300
        assert (pieces.device or {}).get("numSms") == (None if "bare" in shape else 132)


@pytest.mark.parametrize("name", sorted(hostile.cases()))
def test_hostile_inputs(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    data = hostile.cases()[name]
    pieces, whole, _ = _load_both(lambda: load_trace_bytes(data, source=name), monkeypatch)
    _same(pieces, whole)
