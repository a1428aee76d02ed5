"""The one stored form of an indexed trace's ops and GPU ops: typed numpy columns.

    TraceColumns                  op_* columns (row = Op.id), gpu_* columns (row = GpuOp.id), one string table
    SCHEMA                        every column's name and dtype, the one place they are written

The index (mlptui.trace.parse.index) builds these columns, the index cache stores and reads them
(mlptui.trace.parse.columns), and the analyses weigh every op on them; Op and GpuOp objects are made
from them (mlptui.trace.model) only where a caller asks for `Trace.ops` / `Trace.gpu`.

Times are float64 µs from the trace's first event, rounded to the ns: the unit the file writes and every
figure is defined in, so no reader converts. A float64 holds every ns of a span up to 104 days exactly;
only the tree builder works in integer ns, where containment must not depend on rounding.
Strings (names, categories) are int64 ids into `strings`. Optional link ids are a value column with 0
where missing and a `_present` mask. Launch figures of each kernel (grid, block, registers, shared
memory, Kineto's blocks per SM and achieved occupancy) are read from the same decode as the rest and
kept as gpu_* columns: -1 (ints) or NaN (floats) where unknown, and for memcpy/memset rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

_I, _F, _B = np.dtype(np.int64), np.dtype(np.float64), np.dtype(np.bool_)

# Column name -> dtype. `op_gpu_ptr` has one row more than the ops and `op_gpu_ids` any number of rows:
# the GPU op ids each op launched itself are op_gpu_ids[op_gpu_ptr[k]:op_gpu_ptr[k + 1]].
SCHEMA: dict[str, np.dtype[Any]] = {
    "op_name": _I, "op_cat": _I, "op_ts": _F, "op_dur": _F, "op_self_us": _F, "op_gpu_us": _F,
    "op_parent": _I, "op_depth": _I, "op_step": _I, "op_pid": _I, "op_tid": _I, "op_event": _I,
    "op_external_id": _I, "op_external_id_present": _B, "op_correlation": _I, "op_correlation_present": _B,
    "op_gpu_ptr": _I, "op_gpu_ids": _I,
    "gpu_name": _I, "gpu_cat": _I, "gpu_ts": _F, "gpu_dur": _F, "gpu_device": _I, "gpu_stream": _I,
    "gpu_event": _I, "gpu_launch": _I, "gpu_op": _I, "gpu_step": _I,
    "gpu_external_id": _I, "gpu_external_id_present": _B, "gpu_correlation": _I, "gpu_correlation_present": _B,
    "gpu_grid_blocks": _F, "gpu_threads": _I, "gpu_registers": _I, "gpu_shared_memory": _I,
    "gpu_blocks_per_sm": _F, "gpu_occupancy_pct": _F,
}
_OWN_LENGTH = ("op_gpu_ptr", "op_gpu_ids")


@dataclass(frozen=True, eq=False)
class TraceColumns:
    """Op columns (`op_*`, row = Op.id) and GPU op columns (`gpu_*`, row = GpuOp.id); see SCHEMA."""

    strings: list[str]
    op_name: np.ndarray          # string ids
    op_cat: np.ndarray
    op_ts: np.ndarray            # µs from the trace origin
    op_dur: np.ndarray
    op_self_us: np.ndarray
    op_gpu_us: np.ndarray
    op_parent: np.ndarray        # -1 for roots; a parent's id is smaller than its children's
    op_depth: np.ndarray
    op_step: np.ndarray
    op_pid: np.ndarray
    op_tid: np.ndarray
    op_event: np.ndarray         # the raw event's number, for Trace.args
    op_external_id: np.ndarray
    op_external_id_present: np.ndarray
    op_correlation: np.ndarray
    op_correlation_present: np.ndarray
    op_gpu_ptr: np.ndarray
    op_gpu_ids: np.ndarray
    gpu_name: np.ndarray
    gpu_cat: np.ndarray
    gpu_ts: np.ndarray
    gpu_dur: np.ndarray
    gpu_device: np.ndarray
    gpu_stream: np.ndarray
    gpu_event: np.ndarray
    gpu_launch: np.ndarray       # Op id of the runtime/driver call that launched it, -1 if none
    gpu_op: np.ndarray           # Op id of the innermost non-launch CPU op open at launch, -1 if none
    gpu_step: np.ndarray
    gpu_external_id: np.ndarray
    gpu_external_id_present: np.ndarray
    gpu_correlation: np.ndarray
    gpu_correlation_present: np.ndarray
    gpu_grid_blocks: np.ndarray  # the product of the grid's dims; NaN when unknown
    gpu_threads: np.ndarray      # threads per block, from the block's first three dims; -1 when unknown
    gpu_registers: np.ndarray    # registers per thread; -1 when unknown
    gpu_shared_memory: np.ndarray  # bytes per block (0 when not recorded); -1 when not a count
    gpu_blocks_per_sm: np.ndarray  # Kineto's `blocks per SM`, when a finite number > 0; else NaN
    gpu_occupancy_pct: np.ndarray  # Kineto's `est. achieved occupancy %`, when a number >= 0; else NaN
    # what callers derive from the columns, kept for the next caller
    _ids: dict[str, int] = field(default_factory=dict, repr=False, init=False)
    _children: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list, repr=False, init=False)
    _masks: dict[tuple[str, frozenset[str]], np.ndarray] = field(default_factory=dict, repr=False, init=False)

    @classmethod
    def of(cls, strings: list[str], columns: dict[str, np.ndarray]) -> TraceColumns:
        """The store of `columns` (exactly SCHEMA's names), checked: dtypes, lengths, and that string,
        parent and id references point inside. Raises ValueError when they do not fit together."""
        if set(columns) != set(SCHEMA):
            missing, extra = set(SCHEMA) - set(columns), set(columns) - set(SCHEMA)
            raise ValueError(f"columns do not match the schema (missing {sorted(missing)}, extra {sorted(extra)})")
        for name, dtype in SCHEMA.items():
            col = columns[name]
            if not isinstance(col, np.ndarray) or col.dtype != dtype or col.ndim != 1:
                raise ValueError(f"column {name} is not a 1-d {dtype} array")
        n_ops, n_gpu = len(columns["op_ts"]), len(columns["gpu_ts"])
        for name in SCHEMA:
            want = n_ops if name.startswith("op_") else n_gpu
            if name not in _OWN_LENGTH and len(columns[name]) != want:
                raise ValueError(f"column {name} has {len(columns[name])} rows, not {want}")
        _check_refs(columns, len(strings), n_ops, n_gpu)
        for col in columns.values():       # the trace is read-only: a change in place fails loudly
            col.flags.writeable = False
        return cls(strings, **columns)

    def columns(self) -> dict[str, np.ndarray]:
        """Every column by name (what the index cache writes)."""
        return {name: getattr(self, name) for name in SCHEMA}

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

    def names_where(self, test: Callable[[str], Any], among: np.ndarray | None = None) -> np.ndarray:
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
        if not self._children:
            has = np.flatnonzero(self.op_parent >= 0)
            ids = has[np.argsort(self.op_parent[has], kind="stable")]
            ptr = np.zeros(self.n_ops + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.op_parent[has], minlength=self.n_ops), out=ptr[1:])
            self._children.append((ptr, ids))
        return self._children[0]


def _countable(flat: np.ndarray) -> bool:
    """Non-empty non-negative integers of a range not much wider than their number (string ids, small keys):
    their distinct values are found by counting (np.bincount) instead of sorting."""
    return flat.dtype.kind in "iu" and len(flat) > 0 and int(flat.min()) >= 0 \
        and int(flat.max()) < 2 * len(flat) + 65536


def distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of an integer array, sorted, as np.unique(values) gives them, without its
    import of numpy.ma (a plain np.unique asks np.ma.is_masked, an import a fresh process pays). Ids of
    a small range (string ids) are counted instead of sorted, as in unique_ids."""
    flat = values.reshape(-1)
    if _countable(flat):
        found: np.ndarray = np.flatnonzero(np.bincount(flat)).astype(flat.dtype, copy=False)
        return found
    ordered = np.sort(values, axis=None)
    if len(ordered) < 2:
        return ordered
    keep = np.empty(len(ordered), dtype=bool)
    keep[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
    return ordered[keep]


def unique_ids(values: np.ndarray, *, return_index: bool = False, return_inverse: bool = False,
               return_counts: bool = False) -> tuple[np.ndarray, ...]:
    """np.unique(values, return_...) for ids: what it returns (the distinct values, then the first index,
    the inverse and the counts asked for, with its dtypes), by counting instead of sorting when `values`
    are non-negative integers of a range not much wider than their number (string ids, small keys), an order
    of magnitude faster than sorting them. Anything else is np.unique's own work."""
    n = len(values)
    if values.ndim != 1 or not _countable(values):
        found: Any = np.unique(values, return_index=return_index, return_inverse=return_inverse,   # type: ignore[call-overload]
                               return_counts=return_counts)
        return tuple(found) if isinstance(found, tuple) else (found,)
    counts = np.bincount(values)
    present = np.flatnonzero(counts)
    out = [present.astype(values.dtype, copy=False)]
    if return_index:
        first = np.full(len(counts), n, dtype=np.intp)
        np.minimum.at(first, values, np.arange(n, dtype=np.intp))
        out.append(first[present])
    if return_inverse:
        rank = np.zeros(len(counts), dtype=np.intp)
        rank[present] = np.arange(len(present), dtype=np.intp)
        out.append(rank[values])
    if return_counts:
        out.append(counts[present])
    return tuple(out)


def _check_refs(c: dict[str, np.ndarray], n_strings: int, n_ops: int, n_gpu: int) -> None:
    """String ids, parents, launch links and GPU id lists point inside their tables."""
    def inside(name: str, low: int, high: int) -> None:
        col = c[name]
        if len(col) and (int(col.min()) < low or int(col.max()) >= high):
            raise ValueError(f"column {name} points outside its table")
    for name in ("op_name", "op_cat", "gpu_name", "gpu_cat"):
        inside(name, 0, n_strings)
    for name in ("op_parent", "gpu_launch", "gpu_op"):
        inside(name, -1, n_ops)
    inside("op_gpu_ids", 0, n_gpu)
    ptr = c["op_gpu_ptr"]
    if len(ptr) != n_ops + 1 or ptr[0] != 0 or ptr[-1] != len(c["op_gpu_ids"]) or (np.diff(ptr) < 0).any():
        raise ValueError("GPU id lists do not match the ops")
    parent = c["op_parent"]
    if (parent >= np.arange(n_ops)).any():
        raise ValueError("a parent's id is not smaller than its child's")

