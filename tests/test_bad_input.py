"""Mangled traces (truncated, bytes flipped, fields dropped or retyped): the loader returns a Trace or raises
a one-line TraceError, never anything else."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlptui.base.errors import TraceError
from mlptui.trace.analysis.report.summary import summarize
from mlptui.trace.model import Trace
from mlptui.trace.parse.load import load_trace_bytes

ROOT = Path(__file__).resolve().parents[1]
_SAMPLE = sorted((ROOT / "sample_traces").glob("linear-eager-*.pt.trace.json.gz"))[0]
RAW = gzip.decompress(_SAMPLE.read_bytes())
DOC = orjson.loads(RAW)
EVENTS = DOC["traceEvents"]
FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "args", "id", "bp")
ODD_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                       st.text(max_size=5), st.lists(st.integers(), max_size=2), st.just({}))

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(data: bytes) -> None:
    try:
        trace = load_trace_bytes(data, source="mangled")
    except TraceError as exc:
        msg = str(exc)
        assert msg and "\n" not in msg
        return
    assert isinstance(trace, Trace)
    summarize(trace)    # and everything downstream copes with what was loaded
    for op in trace.ops[:3]:
        assert isinstance(trace.op_args(op.id), dict)     # full args read back from the same bytes
    for g in trace.gpu[:3]:
        args = trace.gpu_args(g.id)
        assert isinstance(args, dict)
        if type(args.get("correlation")) is int and -2**63 <= args["correlation"] < 2**63:
            assert args["correlation"] == g.correlation      # the args read back belong to this event


@SETTINGS
@given(cut=st.integers(0, len(RAW)), gz=st.booleans())
def test_truncated(cut: int, gz: bool) -> None:
    data = RAW[:cut]
    _check(gzip.compress(data) if gz else data)


@SETTINGS
@given(flips=st.lists(st.tuples(st.integers(0, len(RAW) - 1), st.integers(0, 255)), min_size=1, max_size=8))
def test_flipped_bytes(flips: list[tuple[int, int]]) -> None:
    data = bytearray(RAW)
    for pos, value in flips:
        data[pos] = value
    _check(bytes(data))


@SETTINGS
@given(flips=st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.integers(0, 3000))
def test_mangled_gzip(flips: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(_SAMPLE.read_bytes())
    for pos, value in flips:
        data[pos % len(data)] = value
    _check(bytes(data[: max(len(data) - cut, 0)]))


@SETTINGS
@given(edits=st.lists(st.tuples(st.integers(0, len(EVENTS) - 1), st.sampled_from(FIELDS),
                                st.one_of(st.just("drop"), ODD_VALUES)), min_size=1, max_size=12),
       bare=st.booleans())
def test_dropped_and_retyped_fields(edits: list[tuple[int, str, object]], bare: bool) -> None:
    events = [dict(e) for e in EVENTS]
    for i, field, value in edits:
        if value == "drop":
            events[i].pop(field, None)
        else:
            events[i][field] = value
    doc = events if bare else {**DOC, "traceEvents": events}
    _check(json.dumps(doc).encode())       # stdlib: keeps ints beyond 64 bits and writes NaN as NaN


@SETTINGS
@given(doc=st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4)),
                        lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                st.dictionaries(st.sampled_from(["traceEvents", "ph", "ts", "nodes"]),
                                                                inner, max_size=4)),
                        max_leaves=12))
def test_arbitrary_json(doc: object) -> None:
    _check(json.dumps(doc).encode())
