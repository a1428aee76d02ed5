"""The columnar index gives the same Trace as the object index it replaced (still the way for traces whose
link ids do not fit 64 bits, and for tolerant decodes): every trace of sample_traces/ and of
../shared/corpus/, the hand-built hostile inputs and fuzzed ones, loaded both ways, field by field.
The vectorised classification is checked against the per-event loop it replaced, on the same inputs."""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import ROOT
from fuzz import hostile

from mlptui.base.errors import TraceError
from mlptui.trace.model import (
    ANNOTATION,
    CPU_OP,
    GPU_CATS,
    KERNEL,
    MEMCPY,
    OTHER,
    Trace,
)
from mlptui.trace.parse import classify as classify_module
from mlptui.trace.parse import index
from mlptui.trace.parse.classify import CATEGORIES, CATEGORY, classify
from mlptui.trace.parse.columns import trace_columns, trace_from_columns
from mlptui.trace.parse.decode import decode_document
from mlptui.trace.parse.load import load_trace, load_trace_bytes

CORPUS = ROOT.parent / "shared" / "corpus"
SAMPLES = sorted(p for p in (ROOT / "sample_traces").rglob("*") if p.name.endswith((".json", ".json.gz"))
                 and "bench" not in p.parts and p.name != "manifest.json")
CORPUS_FILES = sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name != "README.md") \
    if CORPUS.is_dir() else []
BIG = 1_300_000     # corpus files above this (bytes as stored) are checked by the slow test only


@contextmanager
def _objects_only() -> Iterator[None]:
    """Index as objects: what build_trace does when the link columns cannot be made."""
    original = index._links
    index._links = lambda events, b: None  # type: ignore[assignment]
    try:
        yield
    finally:
        index._links = original


def _both(load: Any) -> tuple[Trace | str, Trace | str]:
    def one() -> Trace | str:
        try:
            return load()
        except TraceError as exc:
            return f"TraceError: {exc}"
    fast = one()
    with _objects_only():
        slow = one()
    return fast, slow


def _same(fast: Trace | str, slow: Trace | str) -> None:
    if isinstance(slow, str) or isinstance(fast, str):
        assert fast == slow
        return
    assert isinstance(slow.__dict__.get("ops"), list)            # the object index made them at once
    assert fast.ops == slow.ops                                   # Op fields, children and GPU id lists
    assert fast.gpu == slow.gpu
    assert fast.steps == slow.steps
    assert fast.threads == slow.threads
    assert fast.streams == slow.streams
    assert fast.memory == slow.memory
    assert fast.warnings == slow.warnings
    assert fast.meta == slow.meta
    # and of the same types (a numpy scalar equals a float but is not one)
    assert repr((fast.ops, fast.gpu, fast.steps, fast.threads, fast.streams, fast.memory, fast.meta)) == \
        repr((slow.ops, slow.gpu, slow.steps, slow.threads, slow.streams, slow.memory, slow.meta))
    assert (fast.device, fast.devices, fast.origin_us, fast.format, fast.source) == \
        (slow.device, slow.devices, slow.origin_us, slow.format, slow.source)
    assert fast.device is None or fast.device in fast.devices
    for k in (0, len(fast.ops) // 2, len(fast.ops) - 1):
        if 0 <= k < len(fast.ops):
            assert fast.op_args(k) == slow.op_args(k)
    try:
        cols = trace_columns(fast)       # the columns the index cache stores, taken from the index at hand
    except ValueError:
        return
    again = trace_from_columns(cols, fast.source)
    assert (again.ops, again.gpu, again.steps, again.threads, again.streams, again.memory) == \
        (slow.ops, slow.gpu, slow.steps, slow.threads, slow.streams, slow.memory)


def _check_file(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
    fast, slow = _both(lambda: load_trace(path))
    if not isinstance(fast, str):
        assert "ops" not in fast.__dict__          # the columnar index makes its ops on first use
    _same(fast, slow)
    _same_buckets(path.read_bytes())


# ---------------------------------------------------------------- the classification, against its loop

def _loop_classify(events: list[Any]) -> tuple[Any, ...]:
    """The per-event classification the numpy one replaced (without the outlier step, shared by both)."""
    cpu, gpu, meta, flow, mem = [], [], [], [], []
    no_ts = no_dur = ignored = side = 0
    for i, e in enumerate(events):
        if e.ph == "X":
            if e.ts is None:
                no_ts += 1
                continue
            if e.dur is None:
                no_dur += 1
            cat = CATEGORY.get(e.cat)
            if cat is None:
                if e.cat == "Trace":
                    continue
                if e.cat == "mtia_ccp_events":
                    if e.name in ("event_record", "event_wait"):
                        side += 1
                        continue
                    cat = MEMCPY if e.name.startswith("dma") else KERNEL
                else:
                    cat = OTHER
            if cat in GPU_CATS:
                gpu.append((i, cat, e.ts, e.dur or 0.0))
            elif cat in ("gpu_user_annotation", "cuda_sync"):
                side += 1
            else:
                cpu.append((i, cat, e.ts, e.dur or 0.0))
        elif e.ph == "M":
            meta.append(i)
        elif e.ph in ("s", "f"):
            flow.append(i)
        elif e.ph in ("i", "I") and e.name == "[memory]" and e.ts is not None:
            mem.append(i)
        elif e.ph in ("B", "E"):
            ignored += 1
    return cpu, gpu, meta, flow, mem, side, (no_ts, no_dur, ignored)


def _same_buckets(data: bytes) -> None:
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    try:
        decoded = decode_document(data, "x")
    except TraceError:
        return
    events = decoded.events
    cpu, gpu, meta, flow, mem, side, _ = _loop_classify(events)
    original = classify_module._outliers
    classify_module._outliers = lambda ts: None  # type: ignore[assignment]
    try:
        b = classify(events, [])
    finally:
        classify_module._outliers = original

    def rows(ev: np.ndarray, cat: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> list[tuple[Any, ...]]:
        return list(zip(ev.tolist(), [CATEGORIES[c] for c in cat.tolist()], ts.tolist(), dur.tolist(),
                        strict=True))
    assert rows(b.cpu_ev, b.cpu_cat, b.cpu_ts, b.cpu_dur) == cpu
    assert rows(b.gpu_ev, b.gpu_cat, b.gpu_ts, b.gpu_dur) == gpu
    assert (b.meta_ev, b.flow_ev, b.mem_ev, b.device_side) == (meta, flow, mem, side)


# ---------------------------------------------------------------- the inputs

@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_sample_traces(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_file(path, monkeypatch)


@pytest.mark.skipif(not CORPUS_FILES, reason="trace corpus not available")
@pytest.mark.parametrize("path", [p for p in CORPUS_FILES if p.stat().st_size <= BIG], ids=lambda p: p.name)
def test_corpus(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_file(path, monkeypatch)


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS_FILES, reason="trace corpus not available")
@pytest.mark.parametrize("path", [p for p in CORPUS_FILES if p.stat().st_size > BIG], ids=lambda p: p.name)
def test_big_corpus_files(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check_file(path, monkeypatch)


@pytest.mark.parametrize("name", sorted(hostile.cases()))
def test_hostile_inputs(name: str) -> None:
    data = hostile.cases()[name]
    _same(*_both(lambda: load_trace_bytes(data, source=name)))
    _same_buckets(data)


_ODD_VALUES: list[Any] = [None, 0, -1, "", "7", "Stream 7", 1.5, -5.0, 1e12, 1e15, 1 << 63, 2**64 - 1, 1 << 70,
                          "X", "i", "B", "kernel", "cuda_runtime", "Trace", "mtia_ccp_events", "dma_in",
                          "event_wait", "[memory]", "ProfilerStep#9", "ac2g", "0x10"]
_KEYS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "id"]
_ARGS = ["correlation", "External id", "external id", "name"]


def _mutated(seed: int) -> bytes:
    """A sample trace's events with random fields replaced by odd values, dropped or copied, and shuffled
    in part: zero-length, touching and overlapping slices, string ids, missing links, ids past 64 bits."""
    rnd = random.Random(seed)
    base = SAMPLES[seed % len(SAMPLES)].read_bytes()
    doc = json.loads(gzip.decompress(base) if base[:2] == b"\x1f\x8b" else base)
    evs = doc["traceEvents"]
    for _ in range(rnd.randint(1, 60)):
        e = rnd.choice(evs)
        what = rnd.random()
        if what < 0.4:
            e[rnd.choice(_KEYS)] = rnd.choice(_ODD_VALUES)
        elif what < 0.55:
            e.pop(rnd.choice(_KEYS), None)
        elif what < 0.75 and isinstance(e.get("args"), dict):
            e["args"][rnd.choice(_ARGS)] = rnd.choice(_ODD_VALUES)
        elif what < 0.9:
            copy = dict(e)
            dur = copy.get("dur")
            if rnd.random() < 0.5 and isinstance(copy.get("ts"), (int, float)):
                copy["ts"] += rnd.choice([0, 1, -1]) * (dur if isinstance(dur, (int, float)) else 1) * rnd.random()
            evs.insert(rnd.randrange(len(evs) + 1), copy)
        else:
            a = rnd.randrange(len(evs))
            evs[a:a + 20] = rnd.sample(evs[a:a + 20], len(evs[a:a + 20]))
    return json.dumps(doc).encode()


@pytest.mark.parametrize("seed", range(60))
def test_mutated_inputs(seed: int) -> None:
    data = _mutated(seed)
    _same(*_both(lambda: load_trace_bytes(data, source=f"mutated-{seed}")))
    _same_buckets(data)


def test_odd_ids_and_threads() -> None:
    """String pids and tids (named lanes, "" and numbers written as text), flows standing in for a missing
    correlation, an External id spelt in lower case, a launch inside a launch, GPU work that no call
    launched, zero-length and partially overlapping slices."""
    evs: list[dict[str, Any]] = [
        {"ph": "M", "name": "thread_name", "pid": "Spans", "tid": "", "args": {"name": "spans"}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": "7", "args": {"name": "main"}},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#3", "pid": 1, "tid": "7", "ts": 0, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 7, "ts": 1, "dur": 50,
         "args": {"external id": 5}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": "7", "ts": 1, "dur": 50,
         "args": {"External id": 5}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": "7", "ts": 2, "dur": 10},
        {"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 1, "tid": "7", "ts": 3, "dur": 2,
         "args": {"correlation": 11, "External id": 5}},
        {"ph": "X", "cat": "cpu_op", "name": "zero", "pid": 1, "tid": "7", "ts": 3, "dur": 0},
        {"ph": "X", "cat": "python_function", "name": "partial", "pid": 1, "tid": "7", "ts": 90, "dur": 30},
        {"ph": "s", "cat": "ac2g", "id": 12, "pid": 1, "tid": "7", "ts": 2},
        {"ph": "f", "cat": "ac2g", "id": "0xc", "pid": 0, "tid": "Stream 7", "ts": 20, "bp": "e"},
        {"ph": "X", "cat": "kernel", "name": "k1", "pid": 0, "tid": "Stream 7", "ts": 20, "dur": 5},
        {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 21, "dur": 5,
         "args": {"correlation": 11}},
        {"ph": "X", "cat": "kernel", "name": "k3", "pid": 0, "tid": 7, "ts": 30, "dur": 5,
         "args": {"External id": 5}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "copy", "pid": 0, "tid": 8, "ts": 40, "dur": 1,
         "args": {"External id": 0}},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 7, "ts": 4, "args": {"Bytes": 1}},
    ]
    data = hostile.dumps(hostile.doc(evs))
    fast, slow = _both(lambda: load_trace_bytes(data, source="odd"))
    assert isinstance(fast, Trace) and "ops" not in fast.__dict__
    _same(fast, slow)
    assert {(t.pid, t.tid) for t in fast.threads} == {(1, 7)}
    assert [g.launch >= 0 for g in fast.gpu] == [True, True, False, False]


@pytest.mark.parametrize("keep", ["kernel", "cuda_runtime", "cpu_op"])
def test_one_kind_of_event_only(keep: str) -> None:
    """GPU work with no CPU slice at all (and the reverse): links that point nowhere."""
    evs = [e for e in hostile.events() if e.get("cat") == keep]
    _same(*_both(lambda: load_trace_bytes(hostile.dumps(hostile.doc(evs)), source=keep)))


def test_ids_beyond_64_bits_take_the_object_index() -> None:
    evs = hostile.events()
    evs[-1]["args"]["correlation"] = 1 << 64
    data = hostile.dumps(hostile.doc(evs))
    trace = load_trace_bytes(data, source="wide")
    assert isinstance(trace.__dict__.get("ops"), list)
    with pytest.raises(ValueError):
        trace_columns(trace)


def test_ids_a_float_cannot_hold_are_read_exactly() -> None:
    """Link ids past 2**53 (a float rounds them) next to events without one: the columns keep them exact."""
    evs = hostile.events()
    wide = (1 << 62) + 1
    for e in evs:
        args = e.get("args", {})
        for key in ("correlation", "External id"):
            if key in args:
                args[key] += wide
    del evs[1]["args"]
    data = hostile.dumps(hostile.doc(evs))
    fast, slow = _both(lambda: load_trace_bytes(data, source="wide ids"))
    assert isinstance(fast, Trace) and "ops" not in fast.__dict__      # indexed as columns
    _same(fast, slow)
    assert [g.correlation for g in fast.gpu] == [7 + wide] and fast.gpu[0].launch >= 0


def test_a_cache_hit_gives_what_the_first_open_gave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlptui.trace.parse import index_cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MLPTUI_NO_CACHE", raising=False)
    monkeypatch.setattr(index_cache, "MIN_BYTES", 0)
    path = tmp_path / SAMPLES[0].name
    path.write_bytes(SAMPLES[0].read_bytes())
    first = load_trace(path)
    assert "ops" not in first.__dict__
    second = load_trace(path)
    assert index_cache.has_entry(path)
    with _objects_only():
        monkeypatch.setenv("MLPTUI_NO_CACHE", "1")
        slow = load_trace(path)
    for t in (first, second):
        assert (t.ops, t.gpu, t.steps, t.threads, t.streams, t.memory, t.meta, t.warnings) == \
            (slow.ops, slow.gpu, slow.steps, slow.threads, slow.streams, slow.memory, slow.meta, slow.warnings)


def test_step_marks_are_the_loop_s() -> None:
    """ProfilerStep#N as an annotation or (torch <= 1.9) an operator; other categories are not steps."""
    evs = [{"ph": "X", "cat": cat, "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": 10 * n, "dur": 10}
           for n, cat in enumerate(["user_annotation", "Operator", "python_function", "cpu_op"])]
    fast, slow = _both(lambda: load_trace_bytes(hostile.dumps(hostile.doc(evs)), source="steps"))
    _same(fast, slow)
    assert isinstance(fast, Trace)
    assert [fast.ops[s.op].cat for s in fast.steps] == [ANNOTATION, CPU_OP, CPU_OP]
