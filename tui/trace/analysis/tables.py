"""A trace's ops and GPU ops as numpy columns, for the analyses that weigh every op.

    tables(trace) -> Tables        computed once per trace (`Trace.derived`)

A trace indexed as columns (mlptui.trace.parse.columns) hands its columns over as they are, before any
Op or GpuOp object is made: a report that reads only these never makes the 200,000 objects of a 100 MB
trace. A trace whose objects exist already (made by the app, or built as objects by the loader) is
taken apart once. Strings are ids into `Tables.strings`; categories too (`cat_ids` turns a set of
normalised categories into the ids to test against).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

from mlptui.trace.model import Trace

_KEY = "tables"
_OP_INTS = ("parent", "depth", "step", "pid", "tid", "event")
_OP_FLOATS = ("ts", "dur", "self_us", "gpu_us")
_GPU_INTS = ("device", "stream", "event", "launch", "op", "step")
_GPU_FLOATS = ("ts", "dur")


@dataclass
class Tables:
    """Op columns (`op_*`, row = Op.id) and GPU op columns (`gpu_*`, row = GpuOp.id)."""

    strings: list[str]
    op_name: np.ndarray          # int64 string ids
    op_cat: np.ndarray
    op_ts: np.ndarray            # float64 µs
    op_dur: np.ndarray
    op_self_us: np.ndarray
    op_gpu_us: np.ndarray
    op_parent: np.ndarray        # int64, -1 for roots
    op_depth: np.ndarray
    op_step: np.ndarray
    op_pid: np.ndarray
    op_tid: np.ndarray
    op_event: np.ndarray
    op_gpu_ptr: np.ndarray       # GPU op ids each op launched itself: op_gpu_ids[ptr[k]:ptr[k + 1]]
    op_gpu_ids: np.ndarray
    gpu_name: np.ndarray
    gpu_cat: np.ndarray
    gpu_ts: np.ndarray
    gpu_dur: np.ndarray
    gpu_device: np.ndarray
    gpu_stream: np.ndarray
    gpu_event: np.ndarray
    gpu_launch: np.ndarray
    gpu_op: np.ndarray
    gpu_step: np.ndarray
    _ids: dict[str, int] = field(default_factory=dict, repr=False, init=False)
    _children: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False, init=False)
    _masks: dict[tuple[str, frozenset[str]], np.ndarray] = field(default_factory=dict, repr=False, init=False)

    @property
    def n_ops(self) -> int:
        return len(self.op_ts)

    @property
    def n_gpu(self) -> int:
        return len(self.gpu_ts)

    def string_id(self, s: str) -> int:
        """The id of string `s`, or -1 when no op or GPU op has it as name or category."""
        if not self._ids:
            self._ids.update(zip(self.strings, range(len(self.strings)), strict=True))
        return self._ids.get(s, -1)

    def cat_ids(self, cats: Iterable[str]) -> list[int]:
        return [i for i in map(self.string_id, cats) if i >= 0]

    def op_is(self, cats: Iterable[str]) -> np.ndarray:
        """Per op: is its category one of `cats` (read-only: kept for the next caller)."""
        return self._category_mask("op", self.op_cat, cats)

    def gpu_is(self, cats: Iterable[str]) -> np.ndarray:
        """Per GPU op: is its category one of `cats` (read-only: kept for the next caller)."""
        return self._category_mask("gpu", self.gpu_cat, cats)

    def _category_mask(self, table: str, column: np.ndarray, cats: Iterable[str]) -> np.ndarray:
        key = (table, frozenset(cats))
        mask = self._masks.get(key)
        if mask is None:
            mask = self._masks[key] = np.isin(column, self.cat_ids(key[1]))
            mask.flags.writeable = False
        return mask

    def names_where(self, test: Any, among: np.ndarray | None = None) -> np.ndarray:
        """Per string id: test(string), for a test to run once per distinct name, not once per op;
        with `among` (string ids), only those are tested and every other id is False."""
        if among is None:
            return np.fromiter(map(test, self.strings), dtype=bool, count=len(self.strings))
        out = np.zeros(len(self.strings), dtype=bool)
        ids = distinct(among)
        out[ids] = np.fromiter((test(self.strings[i]) for i in ids.tolist()), dtype=bool, count=len(ids))
        return out

    def children(self) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, ids): the children of op k are ids[ptr[k]:ptr[k + 1]], in id order (Op.children)."""
        if self._children is None:
            has = np.flatnonzero(self.op_parent >= 0)
            ids = has[np.argsort(self.op_parent[has], kind="stable")]
            ptr = np.zeros(self.n_ops + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.op_parent[has], minlength=self.n_ops), out=ptr[1:])
            self._children = (ptr, ids)
        return self._children


def tables(trace: Trace) -> Tables:
    """The columns of `trace` (see the module docstring), made on the first call."""
    cached = trace.derived.get(_KEY)
    if isinstance(cached, Tables):
        return cached
    pending = trace.__dict__.get("_pending")
    cols = getattr(pending, "cols", None)
    strings = getattr(pending, "strings", None)
    if isinstance(cols, dict) and isinstance(strings, list):
        made = _from_columns(cols, strings)
    else:
        made = _from_objects(trace)
    trace.derived[_KEY] = made
    return made


def _from_columns(c: dict[str, np.ndarray], strings: list[str]) -> Tables:
    return Tables(strings, **{k: c[k] for k in _FIELDS})


_FIELDS = (["op_name", "op_cat"] + [f"op_{f}" for f in _OP_FLOATS + _OP_INTS] + ["op_gpu_ptr", "op_gpu_ids"]
           + ["gpu_name", "gpu_cat"] + [f"gpu_{f}" for f in _GPU_FLOATS + _GPU_INTS])


def _from_objects(trace: Trace) -> Tables:
    ops, gpu = trace.ops, trace.gpu
    ids: dict[str, int] = {}
    cols: dict[str, np.ndarray] = {}
    for prefix, items, ints, floats in (("op", ops, _OP_INTS, _OP_FLOATS), ("gpu", gpu, _GPU_INTS, _GPU_FLOATS)):
        n = len(items)
        for f in ("name", "cat"):
            values = list(map(attrgetter(f), items))
            for s in dict.fromkeys(values):
                ids.setdefault(s, len(ids))
            cols[f"{prefix}_{f}"] = np.fromiter(map(ids.__getitem__, values), dtype=np.int64, count=n)
        for f in ints:
            cols[f"{prefix}_{f}"] = np.fromiter(map(attrgetter(f), items), dtype=np.int64, count=n)
        for f in floats:
            cols[f"{prefix}_{f}"] = np.fromiter(map(attrgetter(f), items), dtype=np.float64, count=n)
    lengths = np.fromiter((len(op.gpu) for op in ops), dtype=np.int64, count=len(ops))
    ptr = np.zeros(len(ops) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    cols["op_gpu_ptr"] = ptr
    cols["op_gpu_ids"] = np.fromiter((g for op in ops for g in op.gpu), dtype=np.int64, count=int(ptr[-1]))
    return Tables(list(ids), **cols)


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of an integer array, sorted, as np.unique(values) gives them, without its
    import of numpy.ma (a plain np.unique asks np.ma.is_masked: 10-20 ms in a fresh process)."""
    ordered = np.sort(values, axis=None)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]
