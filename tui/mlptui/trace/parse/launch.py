"""Every kernel's launch figures as columns: grid, block, registers, shared memory, and Kineto's blocks per
SM and achieved occupancy, from its event's args.

The overview, the kernel table and `summary` weigh every kernel by its launch. The load reads these six
keys of every event's args with the linking ids (mlptui.trace.parse.decode.LinkArgs), and the index
makes them into the GPU ops' launch columns here (mlptui.trace.store: gpu_grid_blocks ... gpu_occupancy_pct),
so no view reads the file again for them. Unknown values are NaN (floats) or -1 (ints); memcpy and memset
rows have none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter, is_not
from typing import Any

import numpy as np

from mlptui.trace.model import Trace
from mlptui.trace.parse.decode import LinkArgs

_LIMIT = 1 << 40          # no launch dimension, register count or byte count reaches this
_THREADS_CAP = 1 << 62    # a block this large is refused by every occupancy check all the same


@dataclass
class LaunchColumns:
    """One row per GpuOp id (or per launch given to `launch_columns`)."""

    grid_blocks: np.ndarray      # float64: the product of the grid's dims (any count of whole numbers)
    threads: np.ndarray          # int64: threads per block, from the block's first three dims
    registers: np.ndarray        # int64: registers per thread
    shared_memory: np.ndarray    # int64: bytes of shared memory per block (0 when not recorded)
    blocks_per_sm: np.ndarray    # float64: Kineto's `blocks per SM`, when a finite number > 0
    occupancy_pct: np.ndarray    # float64: Kineto's `est. achieved occupancy %`, when a number >= 0


def launches(trace: Trace) -> LaunchColumns:
    """The launch columns of every GPU op of `trace` (row = GpuOp.id), as the index kept them."""
    c = trace.columns
    return LaunchColumns(c.gpu_grid_blocks, c.gpu_threads, c.gpu_registers, c.gpu_shared_memory,
                         c.gpu_blocks_per_sm, c.gpu_occupancy_pct)


def launch_columns(launches: list[LinkArgs]) -> LaunchColumns:
    """The columns of `launches`, in that order."""
    grids = list(map(attrgetter("grid"), launches))
    blocks = list(map(attrgetter("block"), launches))
    registers = _counts(list(map(attrgetter("registers"), launches)))
    # not recorded (or recorded as 0, null, false): no shared memory; anything else must be a count
    shared_raw = list(map(attrgetter("shared_memory"), launches))
    if not _NUMBERS.issuperset(map(type, shared_raw)):     # a None (most traces: none) or another value
        shared_raw = [v or 0 for v in shared_raw]
    shared = _counts(shared_raw)
    bps = _floats(list(map(attrgetter("blocks_per_sm"), launches)))
    bps[~(np.isfinite(bps) & (bps > 0) & (bps <= float(1 << 62)))] = np.nan
    occ = _floats(list(map(attrgetter("occupancy_pct"), launches)))
    occ[~(occ >= 0)] = np.nan
    return LaunchColumns(_grid_blocks(grids), _threads(blocks), registers, shared, bps, occ)


_NUMBERS = frozenset({int, float})


def _floats(values: list[Any]) -> np.ndarray:
    """Numbers as float64 (a bool is not one); NaN for anything else."""
    if _NUMBERS.issuperset(map(type, values)):     # every value a number (the common case): at C speed
        try:
            return np.fromiter(values, dtype=np.float64, count=len(values))
        except OverflowError:                       # an int beyond any float: as below
            pass
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
