"""The one trace form: a loaded Trace cannot be changed (fields frozen, columns read-only), its schema is
written once, and figures kept through Trace.derive are computed once per trace, whichever threads ask,
without one figure's computation holding up another's."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import find_sample

from mlptui.trace.model import Trace
from mlptui.trace.parse.load import load_trace
from mlptui.trace.store import SCHEMA, TraceColumns


@pytest.fixture(scope="module")
def trace() -> Trace:
    return load_trace(Path(find_sample("mlp", "eager")))


def test_the_trace_cannot_be_changed(trace: Trace) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        trace.manifest = {}  # type: ignore[misc]
    with pytest.raises(ValueError):
        trace.columns.op_ts[0] = 1.0
    assert trace.manifest is not None             # attached by the loader (sample_traces/manifest.json)


def test_the_schema_is_the_store_s_fields(trace: Trace) -> None:
    fields = [f.name for f in dataclasses.fields(TraceColumns) if f.init and f.name != "strings"]
    assert fields == list(SCHEMA)
    for name, dtype in SCHEMA.items():
        assert getattr(trace.columns, name).dtype == dtype


def test_a_damaged_store_is_refused(trace: Trace) -> None:
    cols = {name: np.array(col) for name, col in trace.columns.columns().items()}
    bad = dict(cols, op_parent=cols["op_parent"] + 1)             # a root gets a parent past its own id
    with pytest.raises(ValueError):
        TraceColumns.of(trace.columns.strings, bad)
    with pytest.raises(ValueError):
        TraceColumns.of(trace.columns.strings, dict(cols, gpu_dur=cols["gpu_dur"].astype(np.float32)))


def test_a_figure_is_computed_once_whichever_threads_ask() -> None:
    t = load_trace(Path(find_sample("linear", "eager")))
    calls: list[int] = []
    started, release = threading.Event(), threading.Event()

    def slow(tr: Trace) -> int:
        calls.append(1)
        started.set()
        release.wait(5)
        return len(tr.steps)

    def quick(tr: Trace) -> int:
        return tr.columns.n_ops

    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(t.derive(slow))) for _ in range(4)]
    for th in threads:
        th.start()
    assert started.wait(5)
    assert t.derive(quick) == t.columns.n_ops        # not held up by the slow figure being computed
    release.set()
    for th in threads:
        th.join(5)
    assert calls == [1] and results == [len(t.steps)] * 4
