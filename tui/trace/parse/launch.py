"""Every kernel's launch figures as columns: grid, block, registers, shared memory, and Kineto's blocks per
SM and achieved occupancy, from its event's args.

The overview, the kernel table and `summary` weigh every kernel by its launch. The load does not read
these keys (they would cost every load a tenth of its time, for views that are not always opened), so
they are read here on first use: the trace's args are re-read once (mlptui.trace.parse.args_store) and
of each kernel's args only these six keys are decoded, with a typed decoder, instead of a dict per
kernel. Unknown values are NaN (floats) or -1 (ints); memcpy and memset rows have none.

For a trace read from a file, the columns are kept in the index cache as a companion of the file's entry
(mlptui.trace.parse.index_cache), keyed by the file and the event numbers they were computed for: the
next open of the same file reads them from there instead of re-reading its args.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, is_not
from typing import Any

import msgspec
import numpy as np
from msgspec import Struct

from mlptui.trace.model import Trace
from mlptui.trace.parse import index_cache
from mlptui.trace.parse.args_store import ArgsStore
from mlptui.trace.parse.decode import event_args

_LIMIT = 1 << 40          # no launch dimension, register count or byte count reaches this
_THREADS_CAP = 1 << 62    # a block this large is refused by every occupancy check all the same


class LaunchArgs(Struct, gc=False):
    """The launch keys of a kernel's args, as written (checked when made into columns)."""

    grid: Any = None
    block: Any = None
    registers: Any = msgspec.field(default=None, name="registers per thread")
    shared_memory: Any = msgspec.field(default=None, name="shared memory")
    blocks_per_sm: Any = msgspec.field(default=None, name="blocks per SM")
    occupancy_pct: Any = msgspec.field(default=None, name="est. achieved occupancy %")


_DECODER = msgspec.json.Decoder(LaunchArgs)
_NONE = LaunchArgs()


@dataclass
class LaunchColumns:
    """One row per GpuOp id."""

    grid_blocks: np.ndarray      # float64: the product of the grid's dims (any count of whole numbers)
    threads: np.ndarray          # int64: threads per block, from the block's first three dims
    registers: np.ndarray        # int64: registers per thread
    shared_memory: np.ndarray    # int64: bytes of shared memory per block (0 when not recorded)
    blocks_per_sm: np.ndarray    # float64: Kineto's `blocks per SM`, when a finite number > 0
    occupancy_pct: np.ndarray    # float64: Kineto's `est. achieved occupancy %`, when a number >= 0


# each column's dtype, to check columns read back from the cache
_DTYPES = {"grid_blocks": np.dtype(np.float64), "threads": np.dtype(np.int64), "registers": np.dtype(np.int64),
           "shared_memory": np.dtype(np.int64), "blocks_per_sm": np.dtype(np.float64),
           "occupancy_pct": np.dtype(np.float64)}


def event_launches(trace: Trace, events: list[int], kernel: list[bool]) -> LaunchColumns:
    """The launch columns of the events `events` of `trace`, one row each; rows not `kernel` unknown.
    Read from the index cache when the trace's file has them there; computed (and kept there) otherwise."""
    store = trace._args if isinstance(trace._args, ArgsStore) else None
    file = store.source_file() if store is not None else None
    key = index_cache.companion_key(file[0], "launch", file[1]) if file is not None else None
    rows: dict[str, np.ndarray] = {}
    if file is not None and key is not None:
        rows = {"events": np.array(events, dtype=np.int64), "kernel": np.array(kernel, dtype=bool)}
        cached = _from_cache(index_cache.companion_lookup(file[0], key, rows), len(events))
        if cached is not None:
            return cached
    read = store.raw if store is not None else trace.args     # an ArgsStore hands over undecoded args
    columns = launch_columns([_launch_args(read(e)) if k else _NONE for e, k in zip(events, kernel, strict=True)])
    # kept only when read from the file as loaded (args that could not be re-read are all unknown)
    if file is not None and key is not None and store is not None and store.problem is None:
        index_cache.companion_store(file[0], key, rows, dict(vars(columns)))
    return columns


def _from_cache(cols: dict[str, np.ndarray] | None, n: int) -> LaunchColumns | None:
    """The columns read back from the cache when they are the columns of `n` rows; None otherwise."""
    if cols is None or set(cols) != set(_DTYPES):
        return None
    if any(a.dtype != _DTYPES[name] or a.shape != (n,) for name, a in cols.items()):
        return None
    return LaunchColumns(**cols)


def _launch_args(value: Any) -> LaunchArgs:
    if isinstance(value, dict):
        return LaunchArgs(value.get("grid"), value.get("block"), value.get("registers per thread"),
                          value.get("shared memory"), value.get("blocks per SM"),
                          value.get("est. achieved occupancy %"))
    if not value:
        return _NONE
    try:
        args: LaunchArgs = _DECODER.decode(value)
    # not an object, bad UTF-8 (msgspec raises UnicodeDecodeError for it in a string it keeps), too deep:
    # as the views read it
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return _launch_args(event_args(value))
    return args


def launch_columns(launches: list[LaunchArgs]) -> LaunchColumns:
    """The columns of `launches`, in that order."""
    grids = list(map(attrgetter("grid"), launches))
    blocks = list(map(attrgetter("block"), launches))
    registers = _counts(list(map(attrgetter("registers"), launches)))
    # not recorded (or recorded as 0, null, false): no shared memory; anything else must be a count
    shared = _counts([v or 0 for v in map(attrgetter("shared_memory"), launches)])
    bps = _floats(list(map(attrgetter("blocks_per_sm"), launches)))
    bps[~(np.isfinite(bps) & (bps > 0) & (bps <= float(1 << 62)))] = np.nan
    occ = _floats(list(map(attrgetter("occupancy_pct"), launches)))
    occ[~(occ >= 0)] = np.nan
    return LaunchColumns(_grid_blocks(grids), _threads(blocks), registers, shared, bps, occ)


def _floats(values: list[Any]) -> np.ndarray:
    """Numbers as float64 (a bool is not one); NaN for anything else."""
    return np.array([v if type(v) is float or type(v) is int else np.nan for v in values], dtype=np.float64)


def _counts(values: list[Any]) -> np.ndarray:
    """Whole counts as int64 (a float is truncated, as int() does); -1 where not a number in [0, 2**40)."""
    arr = _floats(values)
    ok = (arr >= 0) & (arr < _LIMIT)
    out = np.full(len(values), -1, dtype=np.int64)
    out[ok] = np.trunc(arr[ok]).astype(np.int64)
    return out


def _whole(dims: Any) -> bool:
    """A non-empty list of ints (what every trace records for grid and block)."""
    return type(dims) is list and len(dims) > 0 and all(type(v) is int for v in dims)


def _triples(values: list[Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, [k, 3] int64 dims) when every value present is a list of three int64 ints (every real trace);
    None otherwise, for the item by item path. Type checks by set, so the common case runs at C speed."""
    present = [v for v in values if v is not None]
    if not present or set(map(type, present)) != {list} or set(map(len, present)) != {3}:
        return None
    flat = list(chain.from_iterable(present))
    if set(map(type, flat)) != {int}:
        return None
    try:
        dims = np.fromiter(flat, dtype=np.int64, count=len(flat)).reshape(-1, 3)
    except OverflowError:
        return None
    if len(present) == len(values):
        return np.arange(len(values)), dims
    return np.flatnonzero(np.fromiter(map(is_not, values, repeat(None)), dtype=bool, count=len(values))), dims


def _grid_blocks(grids: list[Any]) -> np.ndarray:
    """The product of every dim of each grid (what blocks per SM divides by the SM count); NaN if none."""
    out = np.full(len(grids), np.nan)
    fast = _triples(grids)
    if fast is not None:
        rows, dims = fast
        out[rows] = dims.astype(np.float64).prod(axis=1)
        return out
    for i, g in enumerate(grids):
        if g is not None and _whole(g):
            try:
                out[i] = float(g[0]) * g[1] * g[2] if len(g) == 3 else float(math.prod(g))
            except OverflowError:       # beyond any float: no real grid, but no reason to fail
                out[i] = math.inf
    return out


def _threads(blocks: list[Any]) -> np.ndarray:
    """Threads per block: the product of the first three dims (missing ones count 1) when every dim is
    a count; -1 otherwise."""
    out = np.full(len(blocks), -1, dtype=np.int64)
    fast = _triples(blocks)
    if fast is not None:
        rows, dims = fast
        ok = ((dims >= 0) & (dims < _LIMIT)).all(axis=1)
        out[rows[ok]] = np.minimum(dims[ok].astype(np.float64).prod(axis=1), _THREADS_CAP).astype(np.int64)
        return out
    for i, b in enumerate(blocks):
        if b is not None and _whole(b) and all(0 <= v < _LIMIT for v in b):
            x, y, z = (list(b[:3]) + [1, 1])[:3]
            out[i] = min(x * y * z, _THREADS_CAP)
    return out
