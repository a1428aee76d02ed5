"""Loading: gzip told apart by magic bytes, both top-level forms, progress in bytes, one-line errors."""

from __future__ import annotations

import gzip
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from conftest import trace_bytes, x

from mlptui.base.errors import TraceError
from mlptui.trace.parse.load import load_trace, load_trace_bytes

EVENTS = [
    x("ProfilerStep#1", "user_annotation", 100.0, 50.0),
    x("aten::mm", "cpu_op", 110.0, 20.0, **{"External id": 7}),
    x("cudaLaunchKernel", "cuda_runtime", 115.0, 5.0, correlation=42, **{"External id": 7}),
    x("gemm_kernel", "kernel", 125.0, 30.0, pid=0, tid=7, correlation=42, **{"External id": 7}),
]


def _error(path_or_bytes: Path | bytes) -> str:
    with pytest.raises(TraceError) as err:
        if isinstance(path_or_bytes, Path):
            load_trace(path_or_bytes)
        else:
            load_trace_bytes(path_or_bytes, source="mem")
    msg = str(err.value)
    assert "\n" not in msg and msg
    return msg


def test_plain_and_gzip_by_magic_not_by_name(tmp_path: Path) -> None:
    plain = trace_bytes(EVENTS)
    (tmp_path / "a.json.gz").write_bytes(plain)                    # plain text named .gz
    (tmp_path / "b.json").write_bytes(gzip.compress(plain))         # gzip named .json
    for name in ("a.json.gz", "b.json"):
        t = load_trace(tmp_path / name)
        assert [op.name for op in t.ops] == ["ProfilerStep#1", "aten::mm", "cudaLaunchKernel"]
        assert [g.name for g in t.gpu] == ["gemm_kernel"]


def test_bare_array_form(tmp_path: Path) -> None:
    path = tmp_path / "bare.json"
    path.write_bytes(orjson.dumps(EVENTS))
    t = load_trace(path)
    assert len(t.ops) == 3 and len(t.gpu) == 1 and t.meta.get("bare_array") is True
    assert t.gpu[0].launch == 2 and t.gpu[0].op == 1


def test_relative_float_and_integer_epoch_times_agree(tmp_path: Path) -> None:
    epoch = 1_695_835_542_514_261
    ints = [dict(e, ts=int(e["ts"]) + epoch, dur=int(e["dur"])) for e in EVENTS]
    floats = [dict(e, ts=e["ts"] + 4456355958212.538) for e in EVENTS]
    a = load_trace_bytes(trace_bytes(ints), source="ints")
    b = load_trace_bytes(trace_bytes(floats, baseTimeNanoseconds=1790857026000000000), source="floats")
    assert [(op.ts, op.dur, op.parent) for op in a.ops] == [(op.ts, op.dur, op.parent) for op in b.ops]
    assert a.ops[0].ts == 0.0 and a.ops[1].ts == 10.0 and a.origin_us == float(epoch + 100)
    assert b.meta["baseTimeNanoseconds"] == 1790857026000000000


def test_progress_reports_file_bytes(tmp_path: Path) -> None:
    for gz in (False, True):
        path = tmp_path / ("p.json.gz" if gz else "p.json")
        path.write_bytes(trace_bytes(EVENTS * 50, gz=gz))
        seen: list[tuple[int, int]] = []
        load_trace(path, progress=lambda d, t, seen=seen: seen.append((d, t)))
        size = path.stat().st_size
        assert seen and seen[-1] == (size, size)
        assert all(t == size for _, t in seen)
        assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_args_are_decoded_on_demand() -> None:
    t = load_trace_bytes(trace_bytes(EVENTS), source="mem")
    assert t.op_args(1) == {"External id": 7}
    assert t.gpu_args(0)["correlation"] == 42
    assert t.args(-1) == {} and t.args(10**6) == {}


@pytest.mark.parametrize(
    ("data", "expect"),
    [
        (b"", "empty file"),
        (b"   \n\t ", "empty file"),
        (b"hello world", "not JSON"),
        (b'{"traceEvents": [{"ph": "X", "name": "a"', "truncated JSON"),
        (b'{"traceEvents": [}', "not valid JSON"),
        (b'{"schemaVersion": 1}', "not a PyTorch profiler trace"),
        (b'{"schema": "1.0.1", "nodes": []}', "execution trace"),
        (gzip.compress(trace_bytes(EVENTS), mtime=0)[:24], "truncated gzip"),
        (b"\x1f\x8b" + b"\x00" * 40, "corrupt gzip"),
    ],
)
def test_bad_input_is_one_line(data: bytes, expect: str, tmp_path: Path) -> None:
    assert expect in _error(data)
    path = tmp_path / "bad.json"
    path.write_bytes(data)
    msg = _error(path)
    assert expect in msg and str(path) in msg


def test_a_cut_short_trace_keeps_the_events_before_the_cut(tmp_path: Path,
                                                           sample_trace: Callable[..., Path]) -> None:
    raw = gzip.decompress(sample_trace("mlp", "eager").read_bytes())
    whole = load_trace_bytes(raw, source="whole")
    cut = raw[: int(len(raw) * 0.6)]
    path = tmp_path / "killed.pt.trace.json"
    path.write_bytes(cut)
    t = load_trace(path)
    assert t.warnings[0].startswith(f"the file ends early (truncated after {len(cut)} bytes); loaded the ")
    assert 0 < len(t.ops) < len(whole.ops)
    assert [op.name for op in t.ops][:5] == [op.name for op in whole.ops][:5]
    k = next(g for g in t.gpu if g.cat == "kernel")
    assert t.gpu_args(k.id)["correlation"] == k.correlation       # full args read back from the cut file
    # the same file gzip-compressed and cut: the gzip stream ends early too
    gz = tmp_path / "killed.pt.trace.json.gz"
    gz.write_bytes(gzip.compress(raw)[:-2000])
    tg = load_trace(gz)
    assert tg.warnings[0] == "the gzip stream ends early (truncated file); loaded what it holds"
    assert tg.warnings[1].startswith("the file ends early") and len(tg.ops) > 0
    k = next(g for g in tg.gpu if g.cat == "kernel")
    assert tg.gpu_args(k.id)["correlation"] == k.correlation
    # only the trailer missing: everything is there
    tail = load_trace_bytes(gzip.compress(raw)[:-8], source="no-trailer")
    assert len(tail.ops) == len(whole.ops) and "gzip stream ends early" in tail.warnings[0]


def test_missing_file_and_folder(tmp_path: Path) -> None:
    assert "no such file" in _error(tmp_path / "nope.json")
    assert "folder" in _error(tmp_path)


def test_invalid_utf8_is_repaired_with_a_warning() -> None:
    data = trace_bytes(EVENTS).replace(b"aten::mm", b"aten::m\xff")
    t = load_trace_bytes(data, source="mem")
    assert t.ops[1].name == "aten::m\ufffd"
    assert any("invalid UTF-8 at byte" in w for w in t.warnings)


def test_events_missing_fields_become_warnings() -> None:
    events = EVENTS + [
        {"ph": "X", "cat": "cpu_op", "name": "no_ts", "pid": 1, "tid": 1, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "no_dur", "pid": 1, "tid": 1, "ts": 140},
        {"ph": "X", "cat": "cpu_op", "name": "neg", "pid": 1, "tid": 1, "ts": 141, "dur": -3},
    ]
    t = load_trace_bytes(trace_bytes(events), source="mem")
    names = [op.name for op in t.ops]
    assert "no_ts" not in names and "no_dur" in names and "neg" in names
    assert any("without a 'ts'" in w for w in t.warnings)
    assert any("without a 'dur'" in w for w in t.warnings)
    assert any("negative or impossible duration" in w for w in t.warnings)


def test_wrong_types_take_the_tolerant_path() -> None:
    events = EVENTS + [
        {"ph": "X", "cat": "cpu_op", "name": 5, "pid": 1, "tid": 1, "ts": 1, "dur": 1},   # name not a string
        {"ph": "X", "cat": "cpu_op", "name": "str_ts", "pid": 1, "tid": 1, "ts": "150.5", "dur": "2"},
        "not an event",
        None,
    ]
    t = load_trace_bytes(trace_bytes(events), source="mem")
    assert "str_ts" in [op.name for op in t.ops]
    assert t.gpu[0].launch >= 0
    assert any("skipped 3 malformed event" in w for w in t.warnings)


def test_string_pids_and_flows_without_correlation_args() -> None:
    # old exporters: no correlation in args, only the ac2g flow pair; a "Spans" pid from the profiler itself
    events = [
        x("aten::add", "cpu_op", 0.0, 10.0),
        x("cudaLaunchKernel", "cuda_runtime", 2.0, 3.0),
        {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 99, "pid": 1, "tid": 1, "ts": 2.0},
        x("add_kernel", "kernel", 20.0, 4.0, pid=0, tid=7),
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 99, "pid": 0, "tid": 7, "ts": 20.0, "bp": "e"},
        {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
         "ts": 0.0, "dur": 30.0},
    ]
    t = load_trace_bytes(trace_bytes(events), source="mem")
    assert len(t.ops) == 2
    g = t.gpu[0]
    assert g.correlation == 99 and t.ops[g.launch].name == "cudaLaunchKernel" and t.ops[g.op].name == "aten::add"


@pytest.mark.parametrize("loader", ["path", "bytes"])
def test_same_trace_either_way(loader: str, sample_trace: Callable[..., Path]) -> None:
    path = sample_trace("mlp", "eager")
    t = load_trace(path) if loader == "path" else load_trace_bytes(path.read_bytes(), source=str(path))
    assert t.source == str(path) and len(t.steps) == 3


def test_full_args_are_read_back_from_the_file(tmp_path: Path, sample_trace: Callable[..., Path]) -> None:
    path = sample_trace("linear", "eager")
    t = load_trace(path)
    assert not t._args.loaded          # nothing but the linking keys was kept by the load
    doc = orjson.loads(gzip.decompress(path.read_bytes()))
    for g in t.gpu:
        assert t.gpu_args(g.id) == doc["traceEvents"][g.event]["args"]
    addmm = next(op for op in t.ops if op.name == "aten::addmm")
    assert t.op_args(addmm.id)["Input Dims"] == doc["traceEvents"][addmm.event]["args"]["Input Dims"]
    plain = tmp_path / "plain.json"
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    t2 = load_trace(plain)
    assert t2.gpu_args(0) == t.gpu_args(0)


def test_args_of_a_file_changed_after_loading_are_not_mixed_in(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(trace_bytes(EVENTS))
    t = load_trace(path)
    path.write_bytes(trace_bytes(EVENTS[:2]) + b"     ")
    assert t.op_args(1) == {}
    assert t._args.problem == "args unavailable: the file changed after it was loaded"


def test_args_after_utf8_repair_and_tolerant_decode(tmp_path: Path) -> None:
    path = tmp_path / "bad-utf8.json"
    path.write_bytes(trace_bytes(EVENTS).replace(b'"correlation":42', b'"note":"\xff","correlation":42', 1))
    t = load_trace(path)
    assert t.op_args(2) == {"note": "\ufffd", "correlation": 42, "External id": 7}
    odd = load_trace_bytes(trace_bytes(EVENTS + [{"ph": "X", "name": 3}]), source="mem")
    assert odd.op_args(1) == {"External id": 7}


def test_chrome_traces_not_from_the_profiler_are_refused_and_legacy_ones_load() -> None:
    import orjson
    import pytest

    from mlptui.base.errors import TraceError
    from mlptui.trace.parse.load import load_trace_bytes

    foreign = {"traceEvents": [{"ph": "B", "cat": "PERF", "name": "a", "pid": 1, "tid": 1, "ts": 0},
                               {"ph": "E", "cat": "PERF", "name": "a", "pid": 1, "tid": 1, "ts": 5},
                               {"ph": "X", "cat": "PREF", "name": "b", "pid": 1, "tid": 1, "ts": 1, "dur": 2}]}
    with pytest.raises(TraceError, match="not from the PyTorch profiler"):
        load_trace_bytes(orjson.dumps(foreign), source="tf.json")
    with pytest.raises(TraceError, match="not trace events"):
        load_trace_bytes(orjson.dumps([[-1, 1, 512, 7], [-1, 1, 1024, 7]]), source="memory_timeline.raw")
    legacy = {"traceEvents": [{"name": "aten::mm", "ph": "X", "ts": 0, "dur": 5, "tid": 1, "pid": "CPU functions",
                               "args": {}}]}
    assert [op.name for op in load_trace_bytes(orjson.dumps(legacy), source="legacy.json").ops] == ["aten::mm"]
